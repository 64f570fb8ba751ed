"""``ldp-telemetry report`` of a distributed campaign from a leader's database: the window's releases added up,
one estimate per batch, the three trust models and the guarantees in every format."""

from __future__ import annotations

import json

import jsonschema
import pytest
from click.testing import CliRunner

from client_sdk.randomness import DeterministicRandom
from estimators.distributed import Shift, calibrate, estimate_releases
from estimators.report import report_schema
from ldp_telemetry.cli import main

collector_storage = pytest.importorskip("collector.storage", reason="needs collector.storage (the collector)")
store_module = pytest.importorskip("collector.distributed.store", reason="needs collector.distributed")

DAYS = ("2026-11-28", "2026-11-29", "2026-11-30")
DOMAIN = ["mail", "maps", "music", "news"]
COUNTS = [500, 300, 150, 50]
SPEC = {"name": "apps", "trust": "distributed", "prio3": "histogram", "domain": DOMAIN, "epsilon": 1.0,
        "delta": 1e-6, "noise": "gaussian", "min_batch": 100}


def stored_release(version, day: str, rng: DeterministicRandom, epsilon: float | None = None) -> dict:
    noise = calibrate("gaussian", epsilon=epsilon or version.spec.epsilon, delta=1e-6, sensitivity=Shift(2, 1))
    drawn = noise.release_noise(len(DOMAIN), rng)
    return {"campaign": "apps", "fingerprint": version.fingerprint, "version": version.version, "batch": day,
            "report_count": sum(COUNTS), "rejected": {"invalid-measurement": 1}, "prio3": "histogram",
            "release": [c + d for c, d in zip(COUNTS, drawn)], "noise": noise.describe(), "coin_subset": None}


@pytest.fixture(scope="module")
def leader_db(tmp_path_factory):
    "A leader's database with one release per day of version 2, and one of version 1 that the report must skip"
    path = tmp_path_factory.mktemp("leader") / "leader.db"
    rng = DeterministicRandom(11)
    releases = []
    with collector_storage.Storage(path) as storage:
        storage.migrate()
        store = store_module.DistStore(storage)
        store.migrate()
        old, _ = storage.create_campaign(SPEC, DAYS[0])
        current, _ = storage.create_campaign({**SPEC, "version": 2, "epsilon": 0.5}, DAYS[0])
        broken, _ = storage.create_campaign({**SPEC, "name": "broken"}, DAYS[0])
        rows = [stored_release(old, DAYS[0], rng)] + [stored_release(current, day, rng) for day in DAYS]
        rows.append({**stored_release(broken, DAYS[0], rng, epsilon=2.0), "campaign": "broken"})
        with store.transaction():
            for release in rows:
                store.put_release((release["campaign"], release["fingerprint"], release["batch"]),
                                  release["version"], release)
        releases = rows[1:-1]
    return path, current.spec, releases


def run(*args: str):
    return CliRunner().invoke(main, ["report", *args])


def test_json_adds_up_the_window_and_validates(leader_db):
    path, spec, releases = leader_db
    result = run("apps", "--db", str(path), "--format", "json", "--since", DAYS[1], "--daily")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    jsonschema.validate(report, report_schema())
    assert report["trust"] == "distributed" and report["batches"] == list(DAYS[1:])
    assert report["n"] == 2 * sum(COUNTS) and report["rejected"] == {"invalid-measurement": 2}
    expected = estimate_releases(spec, releases[1:])
    assert [row["estimate"] for row in report["values"]] == pytest.approx([r["estimate"] for r in expected["values"]])
    assert [day["day"] for day in report["daily"]] == list(DAYS[1:])
    assert report["epsilon"] == 0.5  # the current version's releases only


def test_table_html_and_markdown_show_the_trust_models(leader_db, tmp_path):
    path, _, _ = leader_db
    table = run("apps", "--db", str(path))
    assert table.exit_code == 0, table.output
    assert "distributed (Prio3 histogram, gaussian noise)" in table.stdout
    assert "standard error of one value's fraction: local" in table.stdout and "guarantee:" in table.stdout
    html = run("apps", "--db", str(path), "--format", "html", "--out", str(tmp_path / "apps.html"))
    assert html.exit_code == 0, html.output
    page = (tmp_path / "apps.html").read_text()
    assert 'id="sqrt_n"' in page and 'id="daily"' in page and "Local, distributed and central DP" in page
    markdown = run("apps", "--db", str(path), "--format", "markdown", "--out", str(tmp_path / "apps.md"))
    assert markdown.exit_code == 0 and (tmp_path / "apps-sqrt_n.png").read_bytes().startswith(b"\x89PNG")


def test_a_window_without_a_release_or_a_release_of_other_noise_is_a_clear_error(leader_db):
    path, _, _ = leader_db
    result = run("apps", "--db", str(path), "--since", "2027-01-01")
    assert result.exit_code == 1 and "no release in this window" in result.output
    broken = run("broken", "--db", str(path))
    assert broken.exit_code == 1 and "sigma2" in broken.output and "Traceback" not in broken.output
    assert broken.exception is None or isinstance(broken.exception, SystemExit)
