"""``ldp-telemetry report``: sources (--db, --url), formats, --out, windows, exit codes 0 / 1 / 2."""

from __future__ import annotations

import json
import threading
import uuid
import zlib

import numpy as np
import pytest
from click.testing import CliRunner

from estimators.simulate import simulate
from ldp_telemetry.cli import main

collector_storage = pytest.importorskip("collector.storage", reason="needs collector.storage (the collector)")

DAYS = ("2025-03-01", "2025-03-02", "2025-03-03")
PER_DAY = 800
BROWSER = {"name": "browser", "mechanism": "oue", "epsilon": 1.0, "domain": ["chrome", "safari", "edge", "other"]}
LOAD = {"name": "load_ms", "mechanism": "hybrid", "epsilon": 2.0, "range": [0, 5000]}


def insert(storage, campaign, values, day: str) -> None:
    # a stable seed: hash() of a str changes with PYTHONHASHSEED, and so did this test's outcome
    rng = np.random.default_rng(zlib.crc32(f"{campaign.name}/{day}".encode()))
    payloads = simulate(campaign.spec, values, rng).to_payloads()
    group = collector_storage.ReportGroup(campaign, [str(uuid.uuid4()) for _ in payloads], payloads,
                                          [collector_storage.payload_text(p) for p in payloads])
    storage.insert_reports([group], day)


@pytest.fixture(scope="module")
def db_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("report") / "collector.db"
    rng = np.random.default_rng(3)
    with collector_storage.Storage(path) as storage:
        storage.migrate()
        browser, _ = storage.create_campaign(BROWSER, DAYS[0])
        load, _ = storage.create_campaign(LOAD, DAYS[0])
        storage.create_campaign({**BROWSER, "name": "silent"}, DAYS[0])
        for day in DAYS:
            insert(storage, browser, rng.choice(4, size=PER_DAY, p=[0.6, 0.3, 0.1, 0.0]), day)
        insert(storage, load, rng.gamma(2.0, 400.0, size=PER_DAY), DAYS[0])
    return path


def run(*args: str):
    return CliRunner().invoke(main, ["report", *args])


def test_table_is_the_default_format(db_path):
    result = run("browser", "--db", str(db_path))
    assert result.exit_code == 0, result.output
    assert "mechanism oue" in result.stdout and f"n = {3 * PER_DAY:,} reports" in result.stdout
    assert "Norm-Sub" in result.stdout
    other = next(line for line in result.stdout.splitlines() if line.startswith("other"))
    assert other.endswith("~0")  # "other" has true share 0; the row is marked, not only the footnote
    assert result.stderr == ""  # no progress when stderr is not a terminal


def test_json_has_schema_version_window_spec_and_days(db_path):
    result = run("browser", "--db", str(db_path), "--format", "json", "--confidence", "0.9", "--daily")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["schema_version"] == 3 and report["confidence"] == 0.9
    assert report["window"] == {"since": None, "until": None}
    assert report["spec"]["name"] == "browser" and report["spec"]["version"] == 1
    assert [day["day"] for day in report["daily"]] == list(DAYS)
    assert sum(day["n"] for day in report["daily"]) == report["n"] == 3 * PER_DAY


def test_since_and_until_select_the_window(db_path):
    result = run("browser", "--db", str(db_path), "--format", "json", "--since", DAYS[1], "--until", DAYS[1],
                 "--daily")
    report = json.loads(result.stdout)
    assert report["n"] == PER_DAY and report["window"] == {"since": DAYS[1], "until": DAYS[1]}
    assert "daily" not in report  # a single day has no time series


def test_numeric_campaign(db_path):
    result = run("load_ms", "--db", str(db_path))
    assert result.exit_code == 0, result.output
    assert "mean estimate, mechanism hybrid" in result.stdout and "central DP CI +-" in result.stdout


def test_markdown_out_writes_pngs_beside_it(db_path, tmp_path):
    out = tmp_path / "reports" / "browser.md"
    result = run("browser", "--db", str(db_path), "--format", "markdown", "--out", str(out))
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    text = out.read_text()
    for name in ("browser-frequencies.png", "browser-sqrt_n.png", "browser-daily.png"):
        assert f"]({name})" in text
        assert (out.parent / name).read_bytes().startswith(b"\x89PNG")


def test_html_out_is_one_self_contained_file(db_path, tmp_path):
    out = tmp_path / "browser.html"
    result = run("browser", "--db", str(db_path), "--format", "html", "--out", str(out))
    assert result.exit_code == 0, result.output
    html = out.read_text()
    assert html.count("data:image/png;base64,") == 3
    assert list(tmp_path.iterdir()) == [out]


@pytest.mark.parametrize("args, message", [
    (["nope"], "unknown campaign 'nope'"),
    (["silent"], "campaign 'silent' has no reports in this window"),
    (["browser", "--since", "2030-01-01"], "campaign 'browser' has no reports in this window"),
])
def test_runtime_errors_exit_1_with_one_line(db_path, args, message):
    result = run(*args, "--db", str(db_path))
    assert result.exit_code == 1
    assert result.stderr.strip() == f"Error: {message}"
    assert result.stdout == ""


def test_missing_database_exits_1_and_creates_nothing(tmp_path):
    result = run("browser", "--db", str(tmp_path / "missing.db"))
    assert result.exit_code == 1 and "no database at" in result.stderr
    assert not (tmp_path / "missing.db").exists()


@pytest.mark.parametrize("args", [
    [],
    ["browser"],
    ["browser", "--db", "x.db", "--url", "http://127.0.0.1:1"],
    ["browser", "--url", "http://127.0.0.1:1"],
    ["browser", "--db", "x.db", "--since", "March 1"],
    ["browser", "--db", "x.db", "--since", "2025-03-02", "--until", "2025-03-01"],
    ["browser", "--db", "x.db", "--confidence", "1.5"],
    ["browser", "--db", "x.db", "--format", "pdf"],
])
def test_usage_errors_exit_2(args, monkeypatch):
    for name in ("LDP_TOKEN", "LDP_DATABASE", "LDP_DATABASE_URL"):
        monkeypatch.delenv(name, raising=False)
    assert run(*args).exit_code == 2


@pytest.mark.parametrize("variable", ["LDP_DATABASE_URL", "LDP_DATABASE"])
def test_the_database_comes_from_the_environment_as_for_every_command(db_path, monkeypatch, variable):
    expected = run("browser", "--db", str(db_path), "--format", "json")
    monkeypatch.setenv(variable, str(db_path))
    result = run("browser", "--format", "json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["n"] == json.loads(expected.stdout)["n"] == 3 * PER_DAY


def test_a_source_given_on_the_command_line_wins_over_the_environments_database(db_path, server, tmp_path,
                                                                                monkeypatch):
    monkeypatch.setenv("LDP_DATABASE_URL", str(tmp_path / "missing.db"))
    assert "no database at" in run("browser").stderr  # the environment's database is the one read ...
    assert run("browser", "--db", str(db_path)).exit_code == 0  # ... unless another source is given
    url, admin, _ = server
    assert run("browser", "--url", url, "--token", admin).exit_code == 0
    from collector.archive import AggregateFile, write_aggregate_file

    aggregate = tmp_path / "browser.aggregate.json"
    with collector_storage.Storage(db_path) as storage:
        campaign = storage.get_campaign("browser")
        days = [(day, storage.read_aggregate(campaign, since=day, until=day)) for day in DAYS]
    write_aggregate_file(aggregate, AggregateFile(campaign.spec, days))
    result = run("browser", "--aggregate", str(aggregate), "--format", "json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["n"] == 3 * PER_DAY


def test_help_documents_every_option():
    result = run("--help")
    assert result.exit_code == 0
    for option in ("--db", "--url", "--token", "--since", "--until", "--confidence", "--format", "--out"):
        assert option in result.stdout
    assert "report" in CliRunner().invoke(main, ["--help"]).stdout


@pytest.fixture(scope="module")
def server(db_path):
    "The real collector on a free loopback port, over the same database, and an admin key"
    from werkzeug.serving import make_server

    from collector import create_app

    with collector_storage.Storage(db_path) as storage:
        admin, _ = storage.create_key("admin", DAYS[0])
        ingest, _ = storage.create_key("ingest", DAYS[0])
    httpd = make_server("127.0.0.1", 0, create_app({"DATABASE": str(db_path)}), threaded=True)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_port}", admin, ingest
    httpd.shutdown()
    thread.join(timeout=10)
    httpd.server_close()


def test_url_gives_the_same_report_as_db(db_path, server):
    url, admin, _ = server
    over_http = json.loads(run("browser", "--url", url, "--token", admin, "--format", "json", "--daily").stdout)
    direct = json.loads(run("browser", "--db", str(db_path), "--format", "json", "--daily").stdout)
    assert over_http["values"] == direct["values"] and over_http["n"] == direct["n"]
    assert over_http["spec"]["fingerprint"] == direct["spec"]["fingerprint"]
    assert [d["day"] for d in over_http["daily"]] == list(DAYS)


@pytest.mark.parametrize("args, message", [
    (["nope"], "unknown campaign 'nope'"),
    (["silent"], "campaign 'silent' has no reports in this window"),
])
def test_url_runtime_errors_exit_1(server, args, message):
    url, admin, _ = server
    result = run(*args, "--url", url, "--token", admin)
    assert result.exit_code == 1 and result.stderr.strip() == f"Error: {message}"


def test_url_with_a_key_without_admin_role_exits_1(server):
    url, _, ingest = server
    result = run("browser", "--url", url, "--token", ingest)
    assert result.exit_code == 1 and "refused the token (HTTP 403)" in result.stderr


def test_unreachable_collector_exits_1():
    result = run("browser", "--url", "http://127.0.0.1:9", "--token", "t")
    assert result.exit_code == 1 and "cannot reach the collector" in result.stderr


@pytest.mark.parametrize("args, expected", [
    (["--format", "table"], []),  # no per-day request unless something shows the days
    (["--format", "json"], []),
    (["--format", "json", "--daily"], [{"granularity": "day"}]),
    (["--format", "html"], [{"granularity": "day", "top": 5}]),  # the figure's top values, slim
])
def test_url_asks_for_per_day_estimates_only_when_shown(server, monkeypatch, args, expected):
    import collector.reporting

    url, admin, _ = server
    asked = []
    real = collector.reporting._get_json

    def spy(client, path, params, campaign):
        if path.endswith("/estimate"):
            asked.append({k: v for k, v in params.items() if k in ("granularity", "top")})
        return real(client, path, params, campaign)

    monkeypatch.setattr(collector.reporting, "_get_json", spy)
    result = run("browser", "--url", url, "--token", admin, *args)
    assert result.exit_code == 0, result.output
    assert asked == [{}, *expected]
