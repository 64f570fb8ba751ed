"""The release ledger's routes: ``GET /v1/campaigns/NAME/budget`` (what a device has spent, what remains) and
``POST /v1/campaigns/NAME/publish`` (a local campaign's window published: recorded, or refused past the budget).

Both need an admin key, as the estimates and releases do.  The ledger's domain errors become HTTP here: a release
past the budget is 409 ``budget-exhausted`` wherever it is refused (a distributed collection too), with the budget,
what was spent and what the release would charge.
"""

from __future__ import annotations

from flask import Blueprint, Response, jsonify

from client_sdk.spec import NAME_PATTERN

from ..auth import require, utc_today
from ..db import get_storage
from ..problems import Problem, invalid, problem_response
from ..release_ledger import BUDGET_EXHAUSTED, BudgetExhausted, LedgerError, budget_view, publish_window
from ..storage import CampaignNotFound, CampaignVersion
from .args import int_arg
from .body import read_json

blueprint = Blueprint("budget", __name__)
LEDGER_STATUS = {BUDGET_EXHAUSTED: 409, "releases-are-batches": 409, "invalid-field": 400}


@blueprint.app_errorhandler(LedgerError)
def _ledger_problem(exc: LedgerError) -> Response:
    "A release the ledger refused, as problem+json (the collect route's refusals too)"
    if exc.slug == "invalid-field":
        return problem_response(invalid(exc.field, exc.detail))
    title = "Budget exhausted" if isinstance(exc, BudgetExhausted) else None
    return problem_response(Problem(LEDGER_STATUS[exc.slug], exc.detail, slug=exc.slug, title=title,
                                    field=exc.field, **exc.extra))


def _campaign(name: str, version: int | None = None) -> CampaignVersion:
    if not NAME_PATTERN.fullmatch(name):
        raise Problem(404, f"no campaign {name!r}", field="name")
    try:
        return get_storage().get_campaign(name, version)
    except CampaignNotFound as exc:
        raise Problem(404, str(exc), field="version" if version else "name") from None


@blueprint.get("/v1/campaigns/<name>/budget")
@require("admin")
def budget(name: str) -> Response:
    "What a device has spent over the campaign's releases (basic and tight) and what remains of its budget"
    return jsonify(budget_view(get_storage(), _campaign(name, int_arg("version"))))


@blueprint.post("/v1/campaigns/<name>/publish")
@require("admin")
def publish(name: str) -> Response:
    'Publish a local campaign\'s window ({"window": "START:END"}): recorded in the ledger, charged per new day'
    body = read_json(4096)
    if not isinstance(body, dict) or set(body) - {"window", "version"} or not isinstance(body.get("window"), str):
        raise invalid("body", 'must be {"window": "YYYY-MM-DD:YYYY-MM-DD"} (and optionally "version")')
    version = body.get("version")
    if version is not None and (type(version) is not int or not 1 <= version <= 2**31):
        raise invalid("version", "must be a positive integer")
    return jsonify(publish_window(get_storage(), _campaign(name, version), body["window"], utc_today()))
