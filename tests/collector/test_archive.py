"""The Parquet archive (``ldp-telemetry export``) on both backends, and the aggregate file that ``report`` reads."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from collector import archive
from collector.archive import AggregateFile, export_campaign, read_aggregate_file, write_aggregate_file
from collector.report_codec import decode_payload, untagged
from collector.storage import CampaignNotFound, open_storage
from collector.storage import base as storage_module
from ldp_telemetry.cli import main

from .helpers import on_both_backends
from .test_storage import group_of

DAYS = ("2024-05-01", "2024-05-02", "2024-05-04")
# one spec per family the Spark tests compare: categorical (three oracles), numeric, set (RAPPOR)
MECHANISM_SPECS = [
    {"name": "grr", "mechanism": "grr", "epsilon": 1.0, "domain": ["a", "b", "c"]},
    {"name": "oue", "mechanism": "oue", "epsilon": 1.0, "domain": list(range(40))},
    {"name": "olh", "mechanism": "olh", "epsilon": 2.0, "domain": list(range(30))},
    {"name": "hybrid", "mechanism": "hybrid", "epsilon": 2.0, "range": [0, 10]},
    {"name": "homepage", "mechanism": "rappor",
     "rappor": {"k": 16, "h": 2, "m": 4, "f": 0.5, "p": 0.5, "q": 0.75}},
]


def values_for(spec, count, rng):
    if spec.mechanism == "rappor":
        return [f"/page/{rng.randrange(8)}" for _ in range(count)]
    if spec.domain:
        return [rng.choice(spec.domain) for _ in range(count)]
    return [rng.uniform(0, 10) for _ in range(count)]


def make_groups(campaigns, per_day=60, seed=7):
    "Reports of every campaign on every day of DAYS, as the collector's insert path takes them: [(day, group)]"
    rng = random.Random(seed)
    out = []
    for offset, campaign in enumerate(campaigns):
        for index, day in enumerate(DAYS):
            values = values_for(campaign.spec, per_day + 7 * index, rng)
            out.append((day, group_of(campaign, values, seed=100 * offset + index)))
    return out


def fill(storage, specs=MECHANISM_SPECS, groups=None):
    "Create the campaigns and insert their reports (one batch sent twice: duplicates); the campaigns and groups"
    campaigns = [storage.create_campaign(spec, DAYS[0])[0] for spec in specs]
    groups = groups if groups is not None else make_groups(campaigns)
    for day, group in groups:
        storage.insert_reports([group], day)
    day, group = groups[0]
    assert storage.insert_reports([group], day).duplicate == len(group.report_ids)
    return campaigns, groups


def read_rows(path: Path) -> list[bytes]:
    return pq.read_table(path).column("payload").to_pylist()


@on_both_backends
def test_export_writes_one_file_per_version_and_day_with_the_spec_and_only_the_payloads(storage, tmp_path):
    campaigns, groups = fill(storage)
    out = tmp_path / "archive"
    result = export_campaign(storage, "oue", out)
    oue = campaigns[1]
    assert [p.relative_to(out).as_posix() for p in result.written] == [
        f"campaign=oue/version=1/day={day}/part-0.parquet" for day in DAYS]
    assert result.reports == storage.count_reports("oue")
    stored = {}
    for report in storage.iter_reports("oue"):
        stored.setdefault(report["day"], []).append(report["payload"])
    for path, day in zip(result.written, DAYS):
        parquet = pq.ParquetFile(path)
        assert parquet.schema_arrow.names == ["payload"]  # no report id, no version id, no time
        meta = archive.read_file_metadata(parquet.metadata.metadata)
        assert meta["fingerprint"] == oue.fingerprint and json.loads(meta["spec"]) == oue.spec.to_dict()
        assert (meta["campaign"], meta["version"], meta["day"], meta["reports"]) == ("oue", "1", day,
                                                                                     str(len(stored[day])))
        payloads = [decode_payload("oue", untagged(raw)) for raw in read_rows(path)]
        assert sorted(payloads) == sorted(stored[day])
        data = path.read_bytes()
        for _, group in groups:  # the ids the reports were sent with appear nowhere in the file
            assert not any(bytes.fromhex(report_id.replace("-", "")) in data for report_id in group.report_ids)


@on_both_backends
def test_rerunning_the_export_keeps_the_files_and_a_grown_day_is_replaced_not_appended(storage, tmp_path):
    campaigns, _ = fill(storage)
    out = tmp_path / "archive"
    first = export_campaign(storage, "grr", out)
    before = {path: path.read_bytes() for path in first.written}
    (first.written[0].parent / ".part-0.parquet.dead.tmp").write_bytes(b"left by a killed export")
    again = export_campaign(storage, "grr", out)
    assert again.written == [] and again.unchanged == first.written
    assert {path: path.read_bytes() for path in first.written} == before
    for path in first.written:  # a forced rewrite gives the very same bytes
        path.unlink()
    assert export_campaign(storage, "grr", out).written == first.written
    assert {path: path.read_bytes() for path in first.written} == before
    storage.insert_reports([group_of(campaigns[0], ["a"] * 25, seed=99)], DAYS[-1])
    grown = export_campaign(storage, "grr", out)
    assert grown.written == [first.written[-1]]
    assert len(read_rows(first.written[-1])) == storage.aggregates_by_day(campaigns[0], DAYS[-1])[0][1].n
    assert sorted(p.name for p in first.written[-1].parent.iterdir()) == ["part-0.parquet"]


@on_both_backends
def test_export_streams_a_day_in_chunks_and_row_groups(storage, tmp_path, monkeypatch):
    monkeypatch.setattr(storage_module, "REBUILD_CHUNK", 16)
    monkeypatch.setattr(archive, "ROW_GROUP_ROWS", 50)
    campaign = storage.create_campaign(MECHANISM_SPECS[1], DAYS[0])[0]
    storage.insert_reports([group_of(campaign, list(range(40)) * 5, seed=1)], DAYS[0])
    chunks = list(storage.tagged_payload_chunks(campaign, DAYS[0]))
    assert [len(chunk) for chunk in chunks] == [16] * 12 + [8]
    [path] = export_campaign(storage, "oue", tmp_path).written
    parquet = pq.ParquetFile(path)
    assert parquet.metadata.num_rows == 200 and parquet.metadata.num_row_groups == 4  # 3 x 64 rows, then 8


@on_both_backends
def test_export_takes_a_window_and_refuses_an_unknown_campaign(storage, tmp_path):
    fill(storage, MECHANISM_SPECS[:1])
    result = export_campaign(storage, "grr", tmp_path, since=DAYS[1], until=DAYS[1])
    assert [p.parent.name for p in result.written] == [f"day={DAYS[1]}"]
    with pytest.raises(CampaignNotFound):
        export_campaign(storage, "nope", tmp_path)


def test_both_backends_export_the_same_bytes(postgres_cluster, tmp_path):
    "The same reports stored in SQLite and in PostgreSQL give byte-identical archives"
    url = postgres_cluster.create_database("archive")
    with open_storage(tmp_path / "c.db") as lite, open_storage(url) as pg:
        lite.migrate()
        pg.migrate()
        _, groups = fill(lite)
        fill(pg, groups=groups)
        for spec in MECHANISM_SPECS:
            a = export_campaign(lite, spec["name"], tmp_path / "lite")
            b = export_campaign(pg, spec["name"], tmp_path / "pg")
            assert len(a.written) == len(DAYS)
            assert [p.read_bytes() for p in a.written] == [p.read_bytes() for p in b.written]


def test_export_command(tmp_path):
    database = tmp_path / "c.db"
    with open_storage(database) as storage:
        storage.migrate()
        fill(storage, MECHANISM_SPECS[:2])
    runner = CliRunner()
    result = runner.invoke(main, ["export", "oue", "--out", str(tmp_path / "a"), "--db", str(database)])
    assert result.exit_code == 0, result.output
    assert "3 files written, 0 unchanged" in result.output
    again = runner.invoke(main, ["export", "oue", "--out", str(tmp_path / "a"), "--db", str(database)])
    assert "0 files written, 3 unchanged" in again.output
    missing = runner.invoke(main, ["export", "nope", "--out", str(tmp_path / "a"), "--db", str(database)])
    assert missing.exit_code == 1 and "no campaign 'nope'" in missing.output


def test_report_reads_an_aggregate_file_as_it_reads_the_database(tmp_path):
    database = tmp_path / "c.db"
    with open_storage(database) as storage:
        storage.migrate()
        campaigns, _ = fill(storage, MECHANISM_SPECS[:2])
        oue = campaigns[1]
        written = AggregateFile(oue.spec, storage.aggregates_by_day(oue), source="test")
    write_aggregate_file(tmp_path / "oue.json", written)
    loaded = read_aggregate_file(tmp_path / "oue.json")
    assert loaded.spec == oue.spec and loaded.days == written.days
    runner = CliRunner()
    for window in ([], ["--since", DAYS[1]]):
        from_db = runner.invoke(main, ["report", "oue", "--db", str(database), "--format", "json", "--daily",
                                       *window])
        from_file = runner.invoke(main, ["report", "oue", "--aggregate", str(tmp_path / "oue.json"), "--format",
                                         "json", "--daily", *window])
        assert from_db.exit_code == from_file.exit_code == 0, from_file.output
        assert json.loads(from_file.output) == json.loads(from_db.output)
    wrong = runner.invoke(main, ["report", "grr", "--aggregate", str(tmp_path / "oue.json")])
    assert wrong.exit_code == 1 and "holds campaign 'oue'" in wrong.output
    (tmp_path / "bad.json").write_text("{}")
    bad = runner.invoke(main, ["report", "oue", "--aggregate", str(tmp_path / "bad.json")])
    assert bad.exit_code == 1 and "not an aggregate file" in bad.output


@pytest.mark.parametrize("command", [["export"], ["spark"], ["spark", "aggregate"]], ids=" ".join)
def test_archive_commands_and_options_have_help(command):
    import click

    result = CliRunner().invoke(main, [*command, "--help"])
    assert result.exit_code == 0 and "Usage:" in result.output
    cmd: click.Command = main
    for name in command:
        cmd = cmd.get_command(click.Context(main), name)  # type: ignore[attr-defined]
    assert cmd.help
    assert all(param.help for param in cmd.params if isinstance(param, click.Option))
