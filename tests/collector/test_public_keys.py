"""Public (and scoped) ingest keys, played by whoever copied the key out of a web page."""

from __future__ import annotations

import gzip
import json
import sqlite3
import subprocess

import pytest

import client_sdk
from client_sdk.runtime.transport import HttpTransport
from collector import create_app
from collector.config import DEFAULTS
from collector.storage import LATEST_SCHEMA_VERSION, Storage, open_storage

from .helpers import CATEGORICAL, NUMERIC, bearer, ldp_command, make_reports, on_both_backends, running_server
from .test_cors import PAGE, raw

OTHER = {**CATEGORICAL, "name": "secret_survey"}


@pytest.fixture
def specs(http, keys):
    "Two campaigns: 'browser', which the page's public key may use, and 'secret_survey', which it may not"
    out = {}
    for body in (CATEGORICAL, OTHER):
        response = http.post("/v1/campaigns", json=body, headers=bearer(keys["admin"]))
        assert response.status_code == 201, response.json
        out[body["name"]] = client_sdk.load_spec(response.json["spec"])
    return out


@pytest.fixture
def public_key(db_path, app):
    with open_storage(db_path) as storage:
        key, _ = storage.create_key("ingest", "2024-01-01", public=True, campaigns=["browser"])
    return key


@on_both_backends
def test_a_public_key_reads_only_the_specs_of_its_campaigns(http, specs, public_key):
    listing = http.get("/v1/campaigns", headers=bearer(public_key))
    assert listing.status_code == 200
    assert [c["name"] for c in listing.json["campaigns"]] == ["browser"]
    assert http.get("/v1/campaigns/browser", headers=bearer(public_key)).status_code == 200
    for name in ("secret_survey", "no_such_campaign"):  # the same 403: it cannot probe which campaigns exist
        refused = http.get(f"/v1/campaigns/{name}", headers=bearer(public_key))
        assert refused.status_code == 403 and refused.content_type == "application/problem+json"
        assert refused.json["field"] == "name" and repr(name) in refused.json["detail"]


def test_the_listing_cache_never_serves_one_keys_listing_to_another(http, specs, keys, public_key):
    for _ in range(2):
        scoped = http.get("/v1/campaigns", headers=bearer(public_key)).json["campaigns"]
        full = http.get("/v1/campaigns", headers=bearer(keys["ingest"])).json["campaigns"]
        assert [c["name"] for c in scoped] == ["browser"]
        assert sorted(c["name"] for c in full) == ["browser", "secret_survey"]


@on_both_backends
def test_reports_to_another_campaign_are_rejected_by_name_and_the_rest_stored(http, db_path, specs, public_key):
    mine = make_reports(specs["browser"], ["chrome", "safari"])
    theirs = make_reports(specs["secret_survey"], ["edge"])
    unknown = [{**theirs[0], "report_id": make_reports(specs["browser"], ["edge"])[0]["report_id"],
                "campaign": "no_such_campaign"}]
    response = http.post("/v1/reports", json={"reports": [mine[0], theirs[0], mine[1], unknown[0]]},
                         headers=bearer(public_key))
    assert response.status_code == 200
    assert (response.json["accepted"], response.json["rejected"]) == (2, 2)
    assert [(e["index"], e["field"]) for e in response.json["errors"]] == \
        [(1, "reports[1].campaign"), (3, "reports[3].campaign")]
    assert "'secret_survey'" in response.json["errors"][0]["reason"]
    assert "'no_such_campaign'" in response.json["errors"][1]["reason"]  # not "unknown campaign": no probing
    with open_storage(db_path) as storage:
        assert (storage.count_reports("browser"), storage.count_reports("secret_survey")) == (2, 0)


def test_a_public_key_reaches_no_admin_route(http, specs, public_key):
    key = bearer(public_key)
    answers = [http.post("/v1/campaigns", json={**CATEGORICAL, "epsilon": 2.0}, headers=key),
               http.post("/v1/campaigns", json=NUMERIC, headers=key),
               http.get("/v1/campaigns/browser/estimate", headers=key),
               http.post("/v1/campaigns/browser/close", headers=key)]
    assert [a.status_code for a in answers] == [403, 403, 403, 403]
    assert all(a.json["field"] == "Authorization" for a in answers)
    assert http.get("/v1/campaigns/browser", headers=key).json["closed"] is False


def test_a_public_key_has_its_own_stricter_rate_limit(db_path, keys, specs, public_key, frozen_clock):
    "RATE_LIMIT off for ordinary keys; the public key still runs dry after PUBLIC_RATE_BURST requests"
    app = create_app({"DATABASE": str(db_path), "RATE_LIMIT": 0, "PUBLIC_RATE_LIMIT": 0.05, "PUBLIC_RATE_BURST": 3})
    http = app.test_client()
    body = {"reports": make_reports(specs["browser"], ["chrome"])}
    statuses = [http.post("/v1/reports", json=body, headers=bearer(public_key)).status_code for _ in range(3)]
    limited = http.get("/v1/campaigns/browser", headers=bearer(public_key))
    assert statuses == [200, 200, 200] and limited.status_code == 429
    assert int(limited.headers["Retry-After"]) >= 1
    blocked = http.post("/v1/reports", json={"reports": make_reports(specs["browser"], ["edge"])},
                        headers=bearer(public_key))
    assert blocked.status_code == 429
    for _ in range(5):
        assert http.post("/v1/reports", json={"reports": make_reports(specs["browser"], ["edge"])},
                         headers=bearer(keys["ingest"])).status_code == 200


def test_public_limits_are_stricter_by_default():
    assert DEFAULTS["PUBLIC_RATE_LIMIT"] < DEFAULTS["RATE_LIMIT"]
    assert DEFAULTS["PUBLIC_RATE_BURST"] < DEFAULTS["RATE_BURST"]
    assert DEFAULTS["PUBLIC_MAX_BATCH_REPORTS"] < DEFAULTS["MAX_BATCH_REPORTS"]


def test_a_public_key_sends_smaller_batches(db_path, keys, specs, public_key):
    app = create_app({"DATABASE": str(db_path), "RATE_LIMIT": 0, "PUBLIC_MAX_BATCH_REPORTS": 3})
    http = app.test_client()
    body = {"reports": make_reports(specs["browser"], ["chrome"] * 4)}
    refused = http.post("/v1/reports", json=body, headers=bearer(public_key))
    assert refused.status_code == 413 and refused.json["field"] == "reports" and refused.json["max_reports"] == 3
    assert http.post("/v1/reports", json=body, headers=bearer(keys["ingest"])).json["accepted"] == 4
    many = {"reports": make_reports(specs["browser"], ["chrome"] * 8)}  # refused before parsing: too many items
    refused = http.post("/v1/reports", json=many, headers=bearer(public_key))
    assert refused.status_code == 413 and refused.json["field"] == "body" and refused.json["max_reports"] == 3


@on_both_backends
def test_keys_store_their_scope(db_path, app):
    with open_storage(db_path) as storage:
        _, public = storage.create_key("ingest", "2024-01-01", public=True, campaigns=["b", "a", "b"])
        _, scoped = storage.create_key("ingest", "2024-01-02", campaigns=["a"])
        _, plain = storage.create_key("ingest", "2024-01-03")
        listed = {k.key_id: (k.public, k.campaigns) for k in storage.list_keys()}
    assert listed == {public.key_id: (True, ("a", "b")), scoped.key_id: (False, ("a",)), plain.key_id: (False, None)}


@pytest.mark.parametrize("role, public, campaigns, message", [
    ("ingest", True, None, "needs the campaigns"), ("admin", True, ["a"], "only ingest keys"),
    ("admin", False, ["a"], "only ingest keys"), ("ingest", True, [], "at least one"),
    ("ingest", True, ["no spaces"], "not a campaign name"),
])
def test_a_scope_a_key_cannot_have_is_refused(db_path, role, public, campaigns, message):
    with Storage(db_path) as storage:
        storage.migrate()
        with pytest.raises(ValueError, match=message):
            storage.create_key(role, "2024-01-01", public=public, campaigns=campaigns)
        assert storage.list_keys() == []


def test_a_version_4_database_keeps_its_keys_unscoped(tmp_path):
    path = tmp_path / "v4.db"
    with Storage(path) as storage:
        storage.migrate()
        key, _ = storage.create_key("ingest", "2024-01-01")
    conn = sqlite3.connect(path)  # as schema version 4 left it: no scope columns
    conn.executescript("ALTER TABLE api_keys DROP COLUMN is_public; ALTER TABLE api_keys DROP COLUMN campaigns;"
                       "PRAGMA user_version = 4;")
    conn.close()
    with Storage(path) as storage:
        storage.migrate()
        assert storage.conn.execute("PRAGMA user_version").fetchone()[0] == LATEST_SCHEMA_VERSION
        found = storage.find_key(key)
        assert found is not None and (found.public, found.campaigns) == (False, None)


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(ldp_command(*args), capture_output=True, text=True, timeout=60)


def test_cli_creates_and_lists_public_keys(tmp_path):
    db = str(tmp_path / "c.db")
    made = cli("keys", "create", "--db", db, "--role", "ingest", "--public", "--campaign", "browser",
               "--campaign", "load_ms", "--label", "web page")
    assert made.returncode == 0, made.stderr
    assert "public, campaigns browser,load_ms" in made.stderr
    listed = cli("keys", "list", "--db", db)
    assert "\tpublic, campaigns browser,load_ms\t" in listed.stdout
    entry = json.loads(cli("keys", "list", "--db", db, "--json").stdout)[0]
    assert (entry["public"], entry["campaigns"]) == (True, ["browser", "load_ms"])
    for args, message in ((("--role", "ingest", "--public"), "needs the campaigns"),
                          (("--role", "admin", "--public", "--campaign", "browser"), "only ingest keys")):
        refused = cli("keys", "create", "--db", db, *args)
        assert refused.returncode != 0 and message in refused.stderr
    assert len(json.loads(cli("keys", "list", "--db", db, "--json").stdout)) == 1


def test_serve_help_shows_the_public_defaults():
    text = cli("serve", "--help").stdout.replace("\n", " ")
    for option, key in (("public-rate-limit", "PUBLIC_RATE_LIMIT"), ("public-rate-burst", "PUBLIC_RATE_BURST"),
                        ("public-max-batch", "PUBLIC_MAX_BATCH_REPORTS")):
        assert f"--{option}" in text and f"[default: {DEFAULTS[key]:g}]" in text


def database_with_an_admin_key(tmp_path):
    "A migrated SQLite file for ``serve`` and an admin key in it"
    db = tmp_path / "collector.db"
    with open_storage(db) as storage:
        storage.migrate()
        admin, _ = storage.create_key("admin", "2024-01-01")
    return db, admin


def test_a_page_with_the_public_key_on_a_real_server(tmp_path):
    "End to end: the page's origin and public key can report to its campaign and to nothing else"
    db, admin = database_with_an_admin_key(tmp_path)
    public = cli("keys", "create", "--db", str(db), "--role", "ingest", "--public", "--campaign", "browser")
    key = public.stdout.strip()
    with running_server(db, tmp_path / "serve.log", workers=1,
                        extra=("--rate-limit", "0", "--cors-origin", PAGE)) as (url, _):
        specs = {}
        for body in (CATEGORICAL, OTHER):
            status, _, created = raw(url, "POST", "/v1/campaigns", {**bearer(admin), "Content-Type":
                                                                    "application/json"}, json.dumps(body).encode())
            assert status == 201
            specs[body["name"]] = client_sdk.load_spec(json.loads(created)["spec"])
        page = {"Origin": PAGE, **bearer(key), "Content-Type": "application/json"}
        status, headers, listing = raw(url, "GET", "/v1/campaigns", page)
        assert status == 200 and headers["access-control-allow-origin"] == PAGE
        assert [c["name"] for c in json.loads(listing)["campaigns"]] == ["browser"]
        status, headers, _ = raw(url, "GET", "/v1/campaigns/secret_survey", page)
        assert status == 403 and headers["access-control-allow-origin"] == PAGE  # the page can read why
        batch = make_reports(specs["browser"], ["chrome"]) + make_reports(specs["secret_survey"], ["edge"])
        status, _, answer = raw(url, "POST", "/v1/reports", page, json.dumps({"reports": batch}).encode())
        assert status == 200
        assert (json.loads(answer)["accepted"], json.loads(answer)["errors"][0]["field"]) == \
            (1, "reports[1].campaign")
        status, _, _ = raw(url, "GET", "/v1/campaigns/browser/estimate", page)
        assert status == 403


class CountingTransport(HttpTransport):
    "The production transport, noting each POST /v1/reports: its batch size and the answer's status"

    def __init__(self) -> None:
        super().__init__()
        self.posts: list[tuple[int, int]] = []

    def send(self, request, timeout):
        response = super().send(request, timeout)
        if request.method == "POST" and request.url.endswith("/v1/reports"):
            body = gzip.decompress(request.body) if request.headers.get("Content-Encoding") == "gzip" else request.body
            self.posts.append((len(json.loads(body)["reports"]), response.status))
        return response


def test_the_python_sdk_keeps_to_a_public_keys_published_batch_limit(tmp_path):
    "One 413 teaches the SDK the key's max_reports (as sdk-js does); it never sends a bigger batch again"
    db, admin = database_with_an_admin_key(tmp_path)
    with open_storage(db) as storage:
        key, _ = storage.create_key("ingest", "2024-01-01", public=True, campaigns=["browser"])
    with running_server(db, tmp_path / "serve.log", workers=1,
                        extra=("--rate-limit", "0", "--public-rate-limit", "0", "--public-max-batch", "3")) as (url, _):
        status, _, _ = raw(url, "POST", "/v1/campaigns", {**bearer(admin), "Content-Type": "application/json"},
                           json.dumps(CATEGORICAL).encode())
        assert status == 201
        transport = CountingTransport()
        client = client_sdk.Client(url, key, tmp_path / "device", campaigns=["browser"], transport=transport,
                                   batch_size=8, background=False, policy=client_sdk.ReportPolicy.unlimited())
        for _ in range(20):
            client.record("browser", "chrome")
        assert client.flush(timeout=60).remaining == 0
        client.close()
    assert transport.posts[0] == (8, 413)
    assert transport.posts[1:] == [(3, 200)] * 6 + [(2, 200)]
    with open_storage(db) as storage:
        assert storage.count_reports("browser") == 20
