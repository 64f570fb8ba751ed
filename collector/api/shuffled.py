"""``POST /v1/shuffled-batches``: one batch a shuffler forwards, ``{"batch_id": <uuid4>, "reports": [...]}``.

The reports are those of one shuffled campaign version (``"trust": "shuffled"``), in the shuffler's random order,
each as devices send them to ``POST /v1/reports``; they are checked and stored the same way
(``reports.store_reports``), and the batch's size (its reports stored now or before: a resent batch has the same)
is recorded once per batch id (``collector.kinds.local_shuffled``).  The answer is the ingest route's.  The
shuffler authenticates with its own ingest key; the collector learns nothing of the devices' requests.
"""

from __future__ import annotations

from flask import Blueprint, Response, current_app, jsonify

from ..auth import require
from ..db import get_storage
from ..kinds.local_shuffled import record_batch
from ..problems import Problem, invalid
from .body import parse_json, read_body
from .campaigns import today
from .reports import UUID4, store_reports

blueprint = Blueprint("shuffled", __name__)


@blueprint.post("/v1/shuffled-batches")
@require("ingest", "admin", take_token=False)
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
    answer = store_reports(reports, shuffled=True)
    size = answer["accepted"] + answer["duplicate"]
    if size:
        name, fingerprint = versions.pop()
        campaign = get_storage().find_version(str(name), str(fingerprint))
        if campaign is not None:
            record_batch(get_storage(), batch_id, campaign, today(), size)
    return jsonify(answer)
