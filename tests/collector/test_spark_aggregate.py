"""Re-aggregation on Spark (local[2], the machine's Java 17): the archive's aggregates equal the collector's own.

One SparkSession for the module; the collector databases (SQLite and PostgreSQL) hold the same few hundred reports
per campaign.  A machine without Java fails here: it does not skip."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest
from click.testing import CliRunner

from collector.archive import ArchiveError, export_campaign, read_aggregate_file
from collector.spark_aggregate import aggregate_archive, merge_days, spark_session
from collector.storage import open_storage
from ldp_telemetry.cli import main

from .test_archive import DAYS, MECHANISM_SPECS, fill, make_groups
from .test_storage import group_of

NAMES = [spec["name"] for spec in MECHANISM_SPECS]


def require_java() -> None:
    "Fails (never skips) without Java 17 or later on the PATH"
    java = shutil.which("java")
    if java is None:
        pytest.fail("no java on the PATH: PySpark needs Java 17 (scripts/test installs openjdk-17-jre-headless)")
    version = subprocess.run([java, "-version"], capture_output=True, text=True).stderr
    assert '"17' in version or '"2' in version, version  # 17 or later


@pytest.fixture(scope="module")
def spark():
    require_java()
    session = spark_session("local[2]", "ldp-telemetry tests")
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="module")
def stores(postgres_cluster, tmp_path_factory):
    """Both backends with the same reports (two versions of ``oue``, the second on the last day only), each
    exported to its own archive: {backend: (storage URL or path, archive)}"""
    root = tmp_path_factory.mktemp("spark")
    targets = {"sqlite": str(root / "c.db"), "postgresql": postgres_cluster.create_database("spark")}
    groups, extra = None, None
    out = {}
    for backend, target in targets.items():
        with open_storage(target) as storage:
            storage.migrate()
            _, groups = fill(storage, groups=groups)
            second = storage.create_campaign({**MECHANISM_SPECS[1], "epsilon": 2.0}, DAYS[-1])[0]
            extra = extra or group_of(second, list(range(40)) * 3, seed=5)  # the same reports in both
            storage.insert_reports([extra], DAYS[-1])
            for name in NAMES:
                export_campaign(storage, name, root / backend)
        out[backend] = (target, str(root / backend))
    return out


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
@pytest.mark.parametrize("name", NAMES)
def test_spark_gives_the_collectors_aggregates_exactly(spark, stores, backend, name):
    target, archive = stores[backend]
    result = aggregate_archive(spark, archive, name, version=1)
    with open_storage(target) as storage:
        campaign = storage.get_campaign(name, 1)
        expected = storage.aggregates_by_day(campaign)
    assert result.spec == campaign.spec
    assert [day for day, _ in result.days] == list(DAYS)
    assert result.days == expected  # per day: same n, same integer counts (Aggregate.__eq__ compares every entry)
    assert result.total().counts.shape == expected[0][1].counts.shape


def test_latest_version_and_window(spark, stores):
    target, archive = stores["sqlite"]
    with open_storage(target) as storage:
        latest = storage.get_campaign("oue")
        first = storage.get_campaign("oue", 1)
        expected_latest = storage.aggregates_by_day(latest)
        expected_window = storage.aggregates_by_day(first, DAYS[1], DAYS[2])
    assert latest.version == 2
    assert aggregate_archive(spark, archive, "oue").days == expected_latest
    assert aggregate_archive(spark, archive, "oue", version=1, since=DAYS[1]).days == expected_window
    with pytest.raises(ArchiveError, match="no version 3"):
        aggregate_archive(spark, archive, "oue", version=3)
    with pytest.raises(ArchiveError, match="no campaign 'nope'"):
        aggregate_archive(spark, archive, "nope")


def test_merge_days_adds_the_days_both_sides_have(tmp_path):
    import estimators

    spec = MECHANISM_SPECS[0]
    with open_storage(tmp_path / "c.db") as storage:
        storage.migrate()
        campaign = storage.create_campaign(spec, DAYS[0])[0]
    [(_, a), (_, b), (_, c)] = [(day, group.aggregate) for day, group in make_groups([campaign])]
    merged = merge_days({"d1": a, "d2": b}, {"d2": c, "d3": a})
    assert merged == {"d1": a, "d2": estimators.merge(b, c), "d3": a}


def test_spark_command_writes_the_file_report_reads(spark, stores, tmp_path):
    "The CLI joins the test's session (and leaves it running); report --aggregate equals report --db"
    target, archive = stores["sqlite"]
    out = tmp_path / "olh.json"
    runner = CliRunner()
    result = runner.invoke(main, ["spark", "aggregate", archive, "--campaign", "olh", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert f"-> {out}" in result.output
    assert read_aggregate_file(out).spec.name == "olh"
    from_file = runner.invoke(main, ["report", "olh", "--aggregate", str(out), "--format", "json"])
    from_db = runner.invoke(main, ["report", "olh", "--db", target, "--format", "json"])
    assert from_file.exit_code == 0, from_file.output
    assert json.loads(from_file.output) == json.loads(from_db.output)
    assert spark.sparkContext._jsc is not None  # the session is still usable
