"""The OpenAPI 3.0 document of the collector, served at ``/openapi.json``.

Written by hand next to the views so it stays readable; a test checks that it names every route of the app and
that docs/api.md describes every operation in it.  A leader (``serve --role leader``) adds ``LEADER_PATHS``.
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, current_app, jsonify

from client_sdk.kinds import kind_names, kind_of, load_outside_kinds
from client_sdk.spec import MAX_EPSILON, MIN_EPSILON

blueprint = Blueprint("openapi", __name__)

PROBLEM = {"$ref": "#/components/responses/Problem"}
JSON = "application/json"


STORAGE_FAULTS = (503, 507)  # every endpoint reads or writes the database (docs/api.md, "Faults: 503 and 507")


def _problem_responses(*codes: int) -> dict[str, Any]:
    return {str(code): PROBLEM for code in (*codes, *STORAGE_FAULTS)}


def _ref(name: str) -> dict:
    return {"$ref": f"#/components/schemas/{name}"}


def _json(schema: dict, description: str) -> dict:
    return {"description": description, "content": {JSON: {"schema": schema}}}


CAMPAIGN_NAME = {"name": "name", "in": "path", "required": True,
                 "schema": {"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9_.\\-]{0,63}$"}}
VERSION = {"name": "version", "in": "query", "required": False, "schema": {"type": "integer", "minimum": 1}}

ENVELOPE_SCHEMA = {  # the members every kind's spec has (client_sdk/spec.py); the kinds add their own
    "name": {"type": "string"},
    "kind": {"type": "string", "description": "the campaign kind (default: prio3 for trust distributed, else local)"},
    "trust": {"type": "string", "description": "the trust model: local, or distributed"},
    "epsilon": {"type": "number", "minimum": MIN_EPSILON, "maximum": MAX_EPSILON,
                "description": "see docs/api.md, 'Input limits'"},
    "delta": {"type": "number"},
    "description": {"type": "string"},
    "version": {"type": "integer", "minimum": 1},
    "expires": {"type": "string", "format": "date",
                "description": "last UTC day on which devices record; part of the fingerprint"},
    "unit": {"type": "string", "minLength": 1, "maxLength": 16,
             "description": "numeric campaigns only: what the values measure ('ms', 'MB'), shown on report axes "
                            "and headers; 1-16 characters, no control characters; part of the fingerprint"},
}


def kind_schemas() -> dict[str, dict]:
    """Per registered campaign kind (outside ones too), the schema of its spec: the envelope's members and the
    kind's own, from its ``json_schema()`` (so a kind's fields are documented where they are defined)"""
    load_outside_kinds()
    out = {}
    for name in kind_names():
        own = kind_of({"kind": name}).json_schema()
        out[f"Spec_{name}"] = {"type": "object", "description": f"A spec of kind {name!r}",
                               "required": ["name", *own.get("required", [])],
                               "properties": {**ENVELOPE_SCHEMA, **own.get("properties", {})}}
    return out


def spec_schema(kinds: dict[str, dict]) -> dict:
    "The Spec schema: any kind's (``kinds``: kind_schemas()); its properties are every kind's members"
    properties: dict[str, Any] = {}
    for schema in kinds.values():
        properties = {**schema["properties"], **properties}  # a member two kinds share: the first kind's
    return {"type": "object", "required": ["name"], "properties": properties,
            "description": "A campaign spec: the envelope (client_sdk.spec) and its kind's members; 'auto' "
                           "mechanisms are resolved on creation.",
            "anyOf": [_ref(name) for name in kinds]}


CAMPAIGN_SCHEMA = {
    "type": "object",
    "description": "A stored campaign version; 'spec' is the full spec (derived parameters included).",
    "properties": {"name": {"type": "string"}, "version": {"type": "integer"}, "fingerprint": {"type": "string"},
                   "mechanism": {"type": "string"}, "created_day": {"type": "string", "format": "date"},
                   "spec": _ref("Spec"), "versions": {"type": "array", "items": {"type": "integer"}},
                   "closed": {"type": "boolean", "description": "closed campaigns take no more reports"},
                   "closed_day": {"type": "string", "format": "date"},
                   "expires": {"type": "string", "format": "date", "nullable": True},
                   "expired": {"type": "boolean", "description": "past the spec's expires day (UTC)"},
                   "warnings": {"type": "array", "items": {"type": "string"}}},
}
ESTIMATE_ROW = {
    "type": "object", "required": ["value", "estimate", "std_error", "ci_low", "ci_high"],
    "properties": {"value": {}, "estimate": {"type": "number", "nullable": True},
                   "std_error": {"type": "number", "nullable": True},
                   "ci_low": {"type": "number", "nullable": True}, "ci_high": {"type": "number", "nullable": True}},
}
ESTIMATE_SCHEMA = {
    "type": "object", "required": ["kind", "campaign", "n", "confidence", "values"],
    "description": "An estimate with standard errors and intervals; the same top-level shape for every kind "
                   "(estimators/report/report.schema.json is the JSON report built on it).",
    "properties": {
        "kind": {"type": "string", "enum": ["frequency", "mean", "rappor"]}, "campaign": {"type": "string"},
        "mechanism": {"type": "string"}, "fingerprint": {"type": "string"}, "n": {"type": "integer"},
        "confidence": {"type": "number"}, "values": {"type": "array", "items": _ref("EstimateRow")},
        "mean": {"type": "number", "nullable": True}, "std_error": {"type": "number", "nullable": True},
        "ci_low": {"type": "number", "nullable": True}, "ci_high": {"type": "number", "nullable": True},
        "flags": {"type": "array", "description": "warnings to read before the numbers (estimators.flags): "
                  "impossible-frequencies, impossible-mean, too-few-reports",
                  "items": {"type": "object", "properties": {"code": {"type": "string"},
                                                             "message": {"type": "string"}}}},
        "defence": {"type": "object", "description": "the ones test of a SUE/OUE spec's max_ones: test, max_ones, "
                    "false_rejection (the share of honest reports it refuses), p_accepted, q_accepted"},
        "window": {"type": "object", "properties": {"version": {"type": "integer"},
                                                    "since": {"type": "string", "nullable": True},
                                                    "until": {"type": "string", "nullable": True}}},
    },
}
ESTIMATE_DAYS = {
    "type": "object", "required": ["campaign", "version", "window", "days"],
    "description": "granularity=day: one estimate per day with reports (slim with top=K)",
    "properties": {"campaign": {"type": "string"}, "version": {"type": "integer"}, "window": {"type": "object"},
                   "top": {"type": "integer"},
                   "days": {"type": "array", "items": {"allOf": [_ref("Estimate"), {
                       "type": "object", "required": ["day"],
                       "properties": {"day": {"type": "string", "format": "date"}}}]}}},
}
PROBLEM_SCHEMA = {
    "type": "object", "required": ["type", "title", "status", "detail"],
    "description": "RFC 9457 problem details; 'field' names the offending input",
    "properties": {"type": {"type": "string"}, "title": {"type": "string"}, "status": {"type": "integer"},
                   "detail": {"type": "string"}, "field": {"type": "string"},
                   "retry_after": {"type": "integer"}},
}
REPORT_SCHEMA = {
    "type": "object", "required": ["report_id", "campaign", "fingerprint", "payload"], "additionalProperties": False,
    "properties": {
        "report_id": {"type": "string", "format": "uuid", "description": "lower-case UUID version 4"},
        "campaign": {"type": "string"},
        "fingerprint": {"type": "string", "description": "the fingerprint of the spec the report was made under"},
        "payload": {"description": "the perturbed report, in the mechanism's wire format"},
    },
}
INGEST_RESULT = {
    "type": "object", "required": ["accepted", "duplicate", "rejected", "errors"],
    "properties": {
        "accepted": {"type": "integer"}, "duplicate": {"type": "integer"}, "rejected": {"type": "integer"},
        "errors": {"type": "array", "items": {"type": "object", "properties": {
            "index": {"type": "integer"}, "report_id": {"type": "string", "nullable": True},
            "field": {"type": "string"}, "reason": {"type": "string"}}}},
    },
}
DASHBOARD_CAMPAIGNS = {
    "type": "object", "required": ["campaigns", "day"],
    "properties": {"day": {"type": "string", "format": "date"}, "campaigns": {"type": "array", "items": {
        "type": "object", "required": ["name", "version", "kind", "trust", "epsilon", "state", "reports", "last_day"],
        "properties": {"name": {"type": "string"}, "version": {"type": "integer"}, "kind": {"type": "string"},
                       "trust": {"type": "string"}, "mechanism": {"type": "string", "nullable": True},
                       "epsilon": {"type": "number", "nullable": True},
                       "state": {"type": "string", "enum": ["open", "closed", "expired"]},
                       "reports": {"type": "integer"}, "last_day": {"type": "string", "nullable": True},
                       "created_day": {"type": "string"},
                       "progress": {"type": "string", "nullable": True,
                                    "description": "a distributed campaign's progress route on a leader"}}}}},
}
PANEL_SCHEMA = {
    "type": "object", "required": ["panel_version", "campaign", "n", "header", "tables", "intervals"],
    "description": "estimators.report.panel: what the dashboard draws generically, from the kind's report side",
    "properties": {"panel_version": {"type": "integer"}, "campaign": {"type": "string"},
                   "kind": {"type": "string"}, "trust": {"type": "string"}, "n": {"type": "integer", "nullable": True},
                   "header": {"type": "array", "items": {"type": "string"}},
                   "tables": {"type": "array", "items": {"type": "object", "required": ["columns", "rows"]}},
                   "intervals": {"type": "object"}, "series": {"type": "object", "nullable": True},
                   "central": {"type": "object", "nullable": True}, "planner": {"type": "object", "nullable": True},
                   "budget": {"type": "object", "nullable": True},
                   "progress": {"type": "string", "nullable": True},
                   "rejections": {"type": "object", "additionalProperties": {"type": "integer"},
                                  "description": "refused reports by the refused field (collector.kinds."
                                                 "local_rejections): counts only"}},
}
DASHBOARD_PATHS = ("/v1/dashboard/campaigns", "/v1/campaigns/{name}/panel", "/dashboard/", "/dashboard/{asset}")
ADMIN: list[dict[str, list[str]]] = [{"bearer": []}]
ANY_KEY: list[dict[str, list[str]]] = [{"bearer": []}]

DOCUMENT: dict[str, Any] = {
    "openapi": "3.0.3",
    "info": {"title": "ldp-telemetry collector", "version": "1",
             "description": "Collects reports perturbed under local differential privacy. Errors are RFC 9457 "
                            "application/problem+json with a 'field' member naming the offending input."},
    "paths": {
        "/v1/campaigns": {
            "post": {
                "operationId": "createCampaign", "summary": "Create a campaign or its next version (admin key)",
                "security": ADMIN,
                "requestBody": {"required": True, "content": {JSON: {"schema": _ref("Spec")}}},
                "responses": {"201": _json(_ref("Campaign"), "created"),
                              "200": _json(_ref("Campaign"), "an identical version already exists"),
                              **_problem_responses(400, 401, 403, 409, 413, 415, 429)},
            },
            "get": {
                "operationId": "listCampaigns", "summary": "The latest version of every campaign (any key)",
                "security": ANY_KEY,
                "responses": {"200": _json(_ref("CampaignList"), "campaigns"),
                    **_problem_responses(401, 403, 429)},
            },
        },
        "/v1/campaigns/{name}": {
            "get": {
                "operationId": "getCampaign", "summary": "One campaign's spec; clients fetch configuration here",
                "security": ANY_KEY, "parameters": [CAMPAIGN_NAME, VERSION],
                "responses": {"200": _json(_ref("Campaign"), "the spec"),
                              **_problem_responses(400, 401, 403, 404, 429)},
            },
        },
        "/v1/campaigns/{name}/budget": {
            "get": {
                "operationId": "campaignBudget",
                "summary": "What a device has spent over the campaign's releases (tight and basic composition) and "
                           "what remains of its budget (admin key)",
                "security": ADMIN, "parameters": [CAMPAIGN_NAME, VERSION],
                "responses": {"200": _json(_ref("Budget"),
                                           "{campaign, version, releases, charges, rule, spent: {basic, tight}, "
                                           "budget, remaining, remaining_tight, ledger}"),
                              **_problem_responses(400, 401, 403, 404)},
            },
        },
        "/v1/campaigns/{name}/publish": {
            "post": {
                "operationId": "publishWindow",
                "summary": "Record a local campaign's published window in the release ledger (admin key); 409 "
                           "budget-exhausted past the spec's budget",
                "security": ADMIN, "parameters": [CAMPAIGN_NAME],
                "requestBody": {"required": True, "content": {JSON: {"schema": {
                    "type": "object", "required": ["window"],
                    "properties": {"window": {"type": "string", "description": "YYYY-MM-DD:YYYY-MM-DD"},
                                   "version": {"type": "integer"}}}}}},
                "responses": {"200": _json(_ref("Published"), "{campaign, release, charges}"),
                              **_problem_responses(400, 401, 403, 404, 409)},
            },
        },
        "/v1/campaigns/{name}/close": {
            "post": {
                "operationId": "closeCampaign", "summary": "Close a campaign: its reports are rejected from now on "
                                                           "(admin key)",
                "security": ADMIN, "parameters": [CAMPAIGN_NAME],
                "responses": {"200": _json(_ref("Campaign"), "the closed campaign"),
                              **_problem_responses(401, 403, 404, 429)},
            },
        },
        "/v1/campaigns/{name}/estimate": {
            "get": {
                "operationId": "estimateCampaign", "summary": "Estimate from the stored aggregates (admin key)",
                "security": ADMIN,
                "parameters": [
                    CAMPAIGN_NAME, VERSION,
                    {"name": "confidence", "in": "query", "schema": {"type": "number", "default": 0.95}},
                    {"name": "since", "in": "query", "schema": {"type": "string", "format": "date"}},
                    {"name": "until", "in": "query", "schema": {"type": "string", "format": "date"}},
                    {"name": "granularity", "in": "query", "schema": {"type": "string", "enum": ["total", "day"]}},
                    {"name": "top", "in": "query", "schema": {"type": "integer", "minimum": 1},
                     "description": "with granularity=day: slim days with only the top values of the window"},
                ],
                "responses": {"200": _json({"oneOf": [_ref("Estimate"), _ref("EstimateDays")]},
                                           "the estimate with its window, or one per day"),
                              **_problem_responses(400, 401, 403, 404, 409, 429)},
            },
        },
        "/v1/reports": {
            "post": {
                "operationId": "ingestReports", "summary": "A batch of reports (ingest key); gzip allowed",
                "security": ANY_KEY,
                "parameters": [{"name": "Content-Encoding", "in": "header",
                                "schema": {"type": "string", "enum": ["gzip", "identity"]}}],
                "requestBody": {"required": True, "content": {JSON: {"schema": _ref("ReportBatch")}}},
                "responses": {"200": _json(_ref("IngestResult"), "accepted, duplicate and rejected counts"),
                              **_problem_responses(400, 401, 403, 413, 415, 429)},
            },
        },
        "/v1/shuffled-batches": {
            "post": {
                "operationId": "forwardShuffledBatch",
                "summary": "One shuffled batch of a shuffled campaign, from its shuffler (ingest key); gzip allowed",
                "security": ANY_KEY,
                "requestBody": {"required": True, "content": {JSON: {"schema": {
                    "type": "object", "required": ["batch_id", "reports"], "additionalProperties": False,
                    "properties": {"batch_id": {"type": "string", "format": "uuid"},
                                   "reports": {"type": "array", "minItems": 1, "items": _ref("Report")}}}}}},
                "responses": {"200": _json(_ref("IngestResult"), "accepted, duplicate and rejected counts"),
                              **_problem_responses(400, 401, 403, 413, 415, 429)},
            },
        },
        "/v1/dashboard/campaigns": {
            "get": {
                "operationId": "dashboardCampaigns",
                "summary": "Every campaign for the dashboard: kind, trust model, epsilon, state, reports so far and "
                           "the last day with reports, from the stored sums (admin key)",
                "security": ADMIN,
                "responses": {"200": _json(_ref("DashboardCampaigns"), "one row per campaign"),
                              **_problem_responses(401, 403, 429)},
            },
        },
        "/v1/campaigns/{name}/panel": {
            "get": {
                "operationId": "campaignPanel",
                "summary": "The campaign's dashboard panel, laid out by its kind's report side (the static "
                           "report's code): header, tables, intervals, per-day series, central-DP baseline, planner, "
                           "budget (admin key)",
                "security": ADMIN, "parameters": [CAMPAIGN_NAME,
                                                  {"name": "confidence", "in": "query",
                                                   "schema": {"type": "number", "default": 0.95}}],
                "responses": {"200": _json(_ref("Panel"), "the panel"),
                              **_problem_responses(400, 401, 403, 404, 429)},
            },
        },
        "/dashboard/": {"get": {"operationId": "dashboard", "summary": "The analysts' dashboard page (no key: it "
                                "holds no data; DASHBOARD=0 turns it off)", "security": [],
                                "responses": {"200": {"description": "the page", "content": {
                                    "text/html": {"schema": {"type": "string"}}}}}}},
        "/dashboard/{asset}": {"get": {"operationId": "dashboardAsset", "summary": "The dashboard's script or style "
                                       "sheet (dashboard.js, dashboard.css, index.html)", "security": [],
                                       "parameters": [{"name": "asset", "in": "path", "required": True,
                                                       "schema": {"type": "string"}}],
                                       "responses": {"200": {"description": "the asset", "content": {
                                           "text/javascript": {"schema": {"type": "string"}}}},
                                           **_problem_responses(404)}}},
        "/livez": {"get": {"operationId": "livez", "summary": "The process is up", "security": [],
                           "responses": {"200": _json({"type": "object"}, "alive")}}},
        "/readyz": {"get": {"operationId": "readyz", "summary": "Database reachable and disk not full",
                            "security": [],
                            "responses": {"200": _json({"type": "object"}, "ready"), **_problem_responses(503)}}},
        "/metrics": {"get": {"operationId": "metrics", "summary": "Prometheus text format", "security": [],
                             "responses": {"200": {"description": "metrics",
                                                   "content": {"text/plain": {"schema": {"type": "string"}}}}}}},
        "/openapi.json": {"get": {"operationId": "openapi", "summary": "This document", "security": [],
                                  "responses": {"200": _json({"type": "object"}, "the OpenAPI document")}}},
    },
    "components": {
        "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        "schemas": {
            "Budget": {"type": "object", "required": ["spent", "budget", "remaining", "ledger"],
                       "description": "The release ledger's figures for a device that entered every release"},
            "Published": {"type": "object", "description": "A published window's release: campaign, release, charges"},
            "Campaign": CAMPAIGN_SCHEMA,
            "CampaignList": {"type": "object", "required": ["campaigns"],
                             "properties": {"campaigns": {"type": "array", "items": _ref("Campaign")}}},
            "Report": REPORT_SCHEMA,
            "ReportBatch": {"type": "object", "required": ["reports"], "additionalProperties": False,
                            "properties": {"reports": {"type": "array", "minItems": 1, "items": _ref("Report")}}},
            "IngestResult": INGEST_RESULT, "EstimateRow": ESTIMATE_ROW, "Estimate": ESTIMATE_SCHEMA,
            "EstimateDays": ESTIMATE_DAYS, "Problem": PROBLEM_SCHEMA,
            "DashboardCampaigns": DASHBOARD_CAMPAIGNS, "Panel": PANEL_SCHEMA,
        },
        "responses": {"Problem": {"description": "RFC 9457 problem details", "content": {
            "application/problem+json": {"schema": _ref("Problem")}}}},
    },
}


BATCH_NAME = {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}(T[0-9]{2}:[0-9]{2}Z)?$",
              "description": "a UTC day YYYY-MM-DD, or a batch shorter than a day (its spec's window) by its start, "
                             "YYYY-MM-DDTHH:MMZ"}
BATCH_PROGRESS = {
    "type": "object",
    "required": ["batch", "state", "accepted", "rejected", "pending", "pending_in_jobs", "aggregated", "min_batch",
                 "to_min_batch"],
    "properties": {
        "batch": BATCH_NAME,
        "state": {"type": "string", "enum": ["open", "ready", "below_min_batch", "collecting", "collected"]},
        "accepted": {"type": "integer"}, "pending": {"type": "integer"}, "pending_in_jobs": {"type": "integer"},
        "aggregated": {"type": "integer"}, "min_batch": {"type": "integer"}, "to_min_batch": {"type": "integer"},
        "rejected": {"type": "object", "additionalProperties": {"type": "integer"},
                     "description": "rejected reports by reason (the protocol's problem type slugs)"},
    },
}
PROGRESS = {
    "type": "object", "required": ["campaign", "version", "fingerprint", "min_batch", "totals", "batches"],
    "properties": {"campaign": {"type": "string"}, "version": {"type": "integer"}, "fingerprint": {"type": "string"},
                   "min_batch": {"type": "integer"}, "totals": {"type": "object"},
                   "batches": {"type": "array", "items": BATCH_PROGRESS, "description": "newest first"}},
}
LEADER_PATHS: dict[str, Any] = {
    "/v1/hpke_config": {"get": {
        "operationId": "hpkeConfig", "summary": "This aggregator's HPKE configs, newest first (no key)", "security": [],
        "responses": {"200": _json({"type": "object"}, "{configs: [...]}"), **_problem_responses()}}},
    "/v1/campaigns/{name}/collect": {"post": {
        "operationId": "collectBatch", "summary": "Collect one batch of a distributed campaign (admin key)",
        "security": ADMIN, "parameters": [CAMPAIGN_NAME],
        "requestBody": {"required": True, "content": {JSON: {"schema": {
            "type": "object", "required": ["batch"], "properties": {"batch": BATCH_NAME,
                                                                    "version": {"type": "integer"}}}}}},
        "responses": {"200": _json({"type": "object"}, "the release"),
                      **_problem_responses(400, 401, 403, 404, 409, 502)}}},
    "/v1/campaigns/{name}/releases": {"get": {
        "operationId": "listReleases", "summary": "Every release of a distributed campaign (admin key)",
        "security": ADMIN, "parameters": [CAMPAIGN_NAME],
        "responses": {"200": _json({"type": "object"}, "{campaign, releases}"),
                      **_problem_responses(401, 403, 404, 409)}}},
    "/v1/campaigns/{name}/walk": {"post": {
        "operationId": "walkBatch", "summary": "Walk one batch of a poplar1 campaign with the helper (admin key)",
        "security": ADMIN, "parameters": [CAMPAIGN_NAME],
        "requestBody": {"required": True, "content": {JSON: {"schema": {
            "type": "object", "required": ["batch"], "properties": {"batch": BATCH_NAME}}}}},
        "responses": {"200": _json({"type": "object"}, "the walk's release: {walk, estimate, rejections}"),
                      **_problem_responses(400, 401, 403, 404, 409, 502, 503)}}},
    "/v1/campaigns/{name}/walks": {"get": {
        "operationId": "listWalks", "summary": "Every stored walk release of a poplar1 campaign (admin key)",
        "security": ADMIN, "parameters": [CAMPAIGN_NAME],
        "responses": {"200": _json({"type": "object"}, "{campaign, releases}"), **_problem_responses(401, 403)}}},
    "/v1/campaigns/{name}/progress": {"get": {
        "operationId": "campaignProgress",
        "summary": "Per batch: reports accepted, rejected by reason, pending, aggregated, distance to min_batch "
                   "(admin key)",
        "security": ADMIN, "parameters": [CAMPAIGN_NAME, VERSION],
        "responses": {"200": _json(PROGRESS, "the campaign version's progress"),
                      **_problem_responses(400, 401, 403, 404, 409)}}},
}


@blueprint.get("/openapi.json")
def openapi() -> Response:
    "The OpenAPI document (with the leader's routes on a leader), its specs' schemas read from the kinds"
    kinds = kind_schemas()
    schemas = {**DOCUMENT["components"]["schemas"], "Spec": spec_schema(kinds), **kinds}
    document = {**DOCUMENT, "components": {**DOCUMENT["components"], "schemas": schemas}}
    if current_app.config.get("ROLE") == "leader":
        document["paths"] = {**DOCUMENT["paths"], **LEADER_PATHS}
    if "dashboard" not in current_app.blueprints:  # DASHBOARD=0, or a helper
        document["paths"] = {path: item for path, item in document["paths"].items() if path not in DASHBOARD_PATHS}
    return jsonify(document)
