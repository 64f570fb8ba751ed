"""``POST /v1/shuffled-batches``: one batch a shuffler forwards, ``{"batch_id": <uuid4>, "reports": [...]}``.

The reports are those of one shuffled campaign version (``"trust": "shuffled"``), in the shuffler's random order,
each as devices send them to ``POST /v1/reports``; they are checked and stored the same way
(``reports.store_reports``), and the batch's size (its reports stored now or before: a resent batch has the same)
is recorded once per batch id (``collector.kinds.local_shuffled``), in the transaction that stores the reports,
with its release in the ledger (``release_ledger.record_shuffled_batch``: one charge of the batch's amplified
guarantee at its size), checked against the budget under the ledger's lock in that transaction: of two batches
(two shufflers, or two requests) that would pass the budget together, one is stored and the other refused, 409
``budget-exhausted``, with none of its reports stored (the transaction rolls back).  Its shuffler discards it:
those reports are never released (docs/privacy.md, "The release ledger").  The answer is the
ingest route's.  The shuffler authenticates with its own key of role ``shuffler`` (``ldp-telemetry keys create
--role shuffler``), the only role this route takes: a device's ingest key (or an admin's) gets 403, so no device
can pass reports off as a shuffled batch; the collector learns nothing of the devices' requests.
"""

from __future__ import annotations

from flask import Blueprint, Response, current_app, jsonify

from client_sdk.kinds.shuffle_params import shuffle_rule

from .. import release_ledger
from ..auth import require
from ..db import get_storage
from ..kinds.local_shuffled import record_batch
from ..problems import Problem, invalid
from ..storage import StorageBase
from .body import parse_json, read_body
from .campaigns import today
from .reports import UUID4, store_reports

blueprint = Blueprint("shuffled", __name__)


@blueprint.post("/v1/shuffled-batches")
@require("shuffler", take_token=False)
def forward_batch() -> Response:
    "Store one shuffled batch and record its size"
    config = current_app.config
    body = parse_json(read_body(int(config["MAX_SHUFFLED_BATCH_BYTES"])))
    if not isinstance(body, dict):
        raise invalid("body", 'must be a JSON object {"batch_id": ..., "reports": [...]}')
    unknown = sorted(set(body) - {"batch_id", "reports"})
    if unknown:
        raise invalid(str(unknown[0])[:100], "unknown field; the body has 'batch_id' and 'reports'")
    batch_id, reports = body.get("batch_id"), body.get("reports")
    if not isinstance(batch_id, str) or not UUID4.fullmatch(batch_id):
        raise invalid("batch_id", "must be a lower-case UUID version 4 string")
    if not isinstance(reports, list) or not reports:
        raise invalid("reports", "must be a non-empty list of reports")
    limit = int(config["MAX_SHUFFLED_BATCH_REPORTS"])
    if len(reports) > limit:
        raise Problem(413, f"batch of {len(reports)} reports exceeds the limit of {limit}", field="reports",
                      max_reports=limit)
    versions = {(r.get("campaign"), r.get("fingerprint")) for r in reports if isinstance(r, dict)}
    if len(versions) != 1:
        raise invalid("reports", "must all be reports of one campaign version (one campaign and fingerprint)")
    name, fingerprint = versions.pop()
    storage = get_storage()
    campaign = storage.find_version(str(name), str(fingerprint)) if isinstance(name, str) and \
        isinstance(fingerprint, str) else None
    if campaign is not None and shuffle_rule(campaign.spec) is None:
        campaign = None  # store_reports refuses its reports by name
    if campaign is None:
        return jsonify(store_reports(reports, shuffled=True))  # every report refused by name
    # a first look, before the reports are checked: a batch plainly past the budget costs nothing more
    release_ledger.check_shuffled_batch(storage, campaign, batch_id, len(reports))  # 409 budget-exhausted
    day = today()

    def record(store: StorageBase, size: int) -> None:
        "In the reports' transaction (on its connection): the check again under the ledger's lock, then the record"
        if size and release_ledger.record_shuffled_batch(store, campaign, batch_id, size, day):
            record_batch(store, batch_id, campaign, day, size)

    return jsonify(store_reports(reports, shuffled=True, record_batch=record))
