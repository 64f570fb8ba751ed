"""heavy_hitters campaigns in the Parquet archive and on Spark (local[2]): the kind's archive form writes each day's
count table as rows, and Spark's re-aggregation gives back the store's aggregate of every day, on SQLite and on
PostgreSQL; ``report --aggregate`` then reads the same report as ``report --db``.  Rows the form never writes are
refused, and a damaged aggregate file names its field."""

from __future__ import annotations

import json
import uuid

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from client_sdk.kinds.heavy_hitters import make_report
from client_sdk.randomness import DeterministicRandom
from collector.archive import AggregateFile, ArchiveError, archive_form, export_campaign, read_aggregate_file
from collector.kinds.heavy_hitters.store import HeavyHittersStore
from collector.spark_aggregate import aggregate_archive
from collector.storage import open_storage
from estimators.kinds.heavy_hitters.aggregate import payload_cells
from ldp_telemetry.cli import main

from .test_spark_aggregate import spark  # noqa: F401 (the module's SparkSession fixture)

ALPHABET = "abcdefghijklmnopqrstuvwxyz."
SPECS = {algorithm: {"kind": "heavy_hitters", "name": f"words_{algorithm}", "epsilon": 3.0, "max_length": 6,
                     "alphabet": ALPHABET, "algorithm": algorithm, **extra}
         for algorithm, extra in (("pem", {"segment_length": 2}), ("sfp", {"fragment_length": 2}))}
DAYS = ("2026-01-01", "2026-01-02", "2026-01-03")
WORDS = ["hello", "hello", "abc", "hello", "", "zebra."]


def fill(storage, spec, seed):
    "Reports on every day, in several batches a day; the campaign version"
    campaign, _ = storage.create_campaign(spec, DAYS[0])
    params, rng, store = campaign.spec.params, DeterministicRandom(seed), HeavyHittersStore(storage)
    for i, day in enumerate(DAYS):
        payloads = [make_report(rng, params, word) for word in WORDS * (30 + 20 * i)]
        for start in range(0, len(payloads), 70):
            with storage.transaction():
                chunk = payloads[start:start + 70]
                store.add(campaign, day, [str(uuid.uuid4()) for _ in chunk], payload_cells(params, chunk))
    return campaign


@pytest.fixture(scope="module")
def stores(postgres_cluster, tmp_path_factory):
    "{backend: (storage, archive)}: both backends hold the same reports, each exported to its own archive"
    root = tmp_path_factory.mktemp("hh_archive")
    targets = {"sqlite": str(root / "c.db"), "postgresql": postgres_cluster.create_database("hh_archive")}
    out = {}
    for backend, target in targets.items():
        with open_storage(target) as storage:
            storage.migrate()
            for seed, spec in enumerate(SPECS.values()):
                fill(storage, spec, seed)
                export_campaign(storage, spec["name"], root / backend)
        out[backend] = (target, str(root / backend))
    return out


def expected_days(target, name):
    with open_storage(target) as storage:
        campaign = storage.get_campaign(name)
        store = HeavyHittersStore(storage)
        return campaign, [(day, store.aggregate(campaign, [day])) for day in store.days(campaign, None, None)]


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
@pytest.mark.parametrize("algorithm", sorted(SPECS))
def test_spark_gives_the_stores_count_tables_exactly(spark, stores, backend, algorithm):  # noqa: F811
    target, archive = stores[backend]
    name = SPECS[algorithm]["name"]
    campaign, expected = expected_days(target, name)
    result = aggregate_archive(spark, archive, name)
    assert result.spec == campaign.spec
    assert [day for day, _ in result.days] == list(DAYS)
    assert [(day, a.to_json()) for day, a in result.days] == [(day, a.to_json()) for day, a in expected]
    assert [int(a.counts.sum()) for _, a in result.days] == [len(WORDS) * (30 + 20 * i) for i in range(3)]


def test_a_day_file_holds_the_days_table_and_its_report_count(stores):
    target, archive = stores["sqlite"]
    name = SPECS["pem"]["name"]
    campaign, expected = expected_days(target, name)
    path = f"{archive}/campaign={name}/version=1/day={DAYS[0]}/part-0.parquet"
    table = pq.read_table(path)
    meta = {k.decode(): v.decode() for k, v in pq.read_metadata(path).metadata.items() if k.startswith(b"ldp.")}
    assert table.column_names == ["grp", "cell", "total"]
    assert meta["ldp.reports"] == str(len(WORDS) * 30) and meta["ldp.rows"] == str(table.num_rows)
    rebuilt = archive_form(campaign.spec).aggregate_batch(campaign.spec, [DAYS[0]] * table.num_rows,
                                                          table.to_pydict())
    assert rebuilt[DAYS[0]].to_json() == expected[0][1].to_json()
    with open_storage(target) as storage:  # a rerun leaves the files alone: same fingerprint, same reports
        again = export_campaign(storage, name, archive)
    assert again.written == [] and len(again.unchanged) == len(DAYS)


def test_rows_outside_the_tables_are_refused(stores):
    target, _ = stores["sqlite"]
    campaign, _ = expected_days(target, SPECS["sfp"]["name"])
    form = archive_form(campaign.spec)
    for row in ((campaign.spec.params.groups, 0, 1), (0, 16 * 1024, 1), (-1, None, 3)):
        with pytest.raises(ArchiveError, match="outside the campaign's tables"):
            form.aggregate_batch(campaign.spec, [DAYS[0]], {"grp": [row[0]], "cell": [row[1]], "total": [row[2]]})


@pytest.mark.parametrize("algorithm", sorted(SPECS))
def test_report_from_the_spark_aggregate_file_equals_the_report_from_the_database(spark, stores, tmp_path,  # noqa: F811
                                                                                   algorithm):
    target, archive = stores["sqlite"]
    name = SPECS[algorithm]["name"]
    out = tmp_path / "words.json"
    runner = CliRunner()
    made = runner.invoke(main, ["spark", "aggregate", archive, "--campaign", name, "--out", str(out)])
    assert made.exit_code == 0, made.output
    loaded = read_aggregate_file(out)
    assert AggregateFile.from_dict(loaded.to_dict()).to_dict() == loaded.to_dict()
    for window in ([], ["--since", DAYS[1]]):
        from_file = runner.invoke(main, ["report", name, "--aggregate", str(out), "--format", "json", *window])
        from_db = runner.invoke(main, ["report", name, "--db", target, "--format", "json", *window])
        assert from_file.exit_code == 0, from_file.output
        assert json.loads(from_file.output) == json.loads(from_db.output)
        assert json.loads(from_db.output)["values"], "the planted string is found"


def test_a_damaged_aggregate_names_its_field(stores, tmp_path):
    target, _ = stores["sqlite"]
    campaign, expected = expected_days(target, SPECS["pem"]["name"])
    data = AggregateFile(campaign.spec, expected).to_dict()
    data["days"][0]["aggregate"]["counts"] = [-1] * campaign.spec.params.groups
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ArchiveError, match="counts"):
        read_aggregate_file(path)
