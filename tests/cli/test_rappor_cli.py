"""``ldp-telemetry rappor``: decode and hash-candidates with the reference file formats; exit codes 0 / 1 / 2."""

from __future__ import annotations

import csv
import io
import json

import click
import numpy as np
import pytest
from click.testing import CliRunner

from client_sdk.rappor import RapporParams
from estimators.rappor import (
    CandidateMap,
    decode_rappor,
    simulate_rappor_counts,
    write_counts_csv,
    write_map_csv,
    write_params_csv,
)
from ldp_telemetry.cli import main
from ldp_telemetry.cli.rappor import rappor

PARAMS = RapporParams(k=16, h=2, m=16, p=0.25, q=0.75, f=0.5)
VALUES = ["home", "search", "mail", "maps"]
DECOYS = ["news", "video", "shop"]


@pytest.fixture()
def files(tmp_path):
    counts = simulate_rappor_counts(PARAMS, VALUES, [0.4, 0.3, 0.2, 0.1], 200_000, np.random.default_rng(3))
    paths = {name: tmp_path / f"{name}.csv" for name in ("params", "counts", "map")}
    write_params_csv(PARAMS, paths["params"])
    write_counts_csv(counts, paths["counts"])
    write_map_csv(CandidateMap.from_candidates(PARAMS, VALUES + DECOYS), paths["map"])
    paths["candidates"] = tmp_path / "candidates.txt"
    paths["candidates"].write_text("\n".join(VALUES + DECOYS) + "\n")
    paths["counts_array"] = counts
    return paths


def run(*args):
    return CliRunner().invoke(main, ["rappor", *map(str, args)])


def test_decode_table_lists_the_detected_candidates(files):
    result = run("decode", "--params", files["params"], "--counts", files["counts"], "--map", files["map"])
    assert result.exit_code == 0, result.output
    assert "reports 200,000" in result.output and "epsilon_1" in result.output
    listed = [line.split()[0] for line in result.output.splitlines()[5:]]
    assert listed == VALUES


def test_decode_json_matches_the_library(files):
    result = run(
        "decode",
        "--params",
        files["params"],
        "--counts",
        files["counts"],
        "--candidates",
        files["candidates"],
        "--format",
        "json",
    )
    assert result.exit_code == 0, result.output
    expected = decode_rappor(PARAMS, files["counts_array"], VALUES + DECOYS).to_dict()
    assert json.loads(result.output) == json.loads(json.dumps(expected))


def test_decode_csv_to_a_file_has_the_reference_columns(files, tmp_path):
    out = tmp_path / "result.csv"
    result = run(
        "decode",
        "--params",
        files["params"],
        "--counts",
        files["counts"],
        "--map",
        files["map"],
        "--format",
        "csv",
        "--out",
        out,
    )
    assert result.exit_code == 0 and result.output == ""
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    assert list(rows[0]) == [
        "string",
        "estimate",
        "std_error",
        "proportion",
        "prop_std_error",
        "prop_low_95",
        "prop_high_95",
    ]
    assert [row["string"] for row in rows] == VALUES


def test_map_and_candidates_agree(files):
    outputs = [
        run(
            "decode",
            "--params",
            files["params"],
            "--counts",
            files["counts"],
            option,
            files[key],
            "--format",
            "json",
        ).output
        for option, key in (("--map", "map"), ("--candidates", "candidates"))
    ]
    assert outputs[0] == outputs[1]


def test_hash_candidates_writes_the_map(files, tmp_path):
    result = run("hash-candidates", "--params", files["params"], "--candidates", files["candidates"])
    assert result.exit_code == 0
    assert result.output == files["map"].read_text()
    out = tmp_path / "map2.csv"
    assert (
        run(
            "hash-candidates", "--params", files["params"], "--candidates", files["candidates"], "--out", out
        ).exit_code
        == 0
    )
    assert out.read_text() == files["map"].read_text()


def test_too_little_data_says_so(files, tmp_path):
    tiny = tmp_path / "tiny.csv"
    write_counts_csv(
        simulate_rappor_counts(PARAMS, VALUES, [0.4, 0.3, 0.2, 0.1], 100, np.random.default_rng(1)), tiny
    )
    result = CliRunner().invoke(
        main,
        [
            "rappor",
            "decode",
            "--params",
            str(files["params"]),
            "--counts",
            str(tiny),
            "--map",
            str(files["map"]),
            "--format",
            "json",
        ],
    )
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert data["status"] == "insufficient_data" and data["estimates"] == []
    assert "too little data" in result.stderr


def test_boolean_needs_no_candidates_and_basic_uses_line_order(tmp_path):
    boolean = RapporParams(k=1, h=1, m=2, p=0.25, q=0.75, f=0.5)
    write_params_csv(boolean, tmp_path / "p.csv")
    write_counts_csv(
        simulate_rappor_counts(boolean, [True, False], [0.3, 0.7], 50_000, np.random.default_rng(2)),
        tmp_path / "c.csv",
    )
    result = run("decode", "--params", tmp_path / "p.csv", "--counts", tmp_path / "c.csv", "--format", "json")
    assert result.exit_code == 0, result.output
    assert {row["string"] for row in json.loads(result.output)["estimates"]} == {"TRUE", "FALSE"}

    basic = RapporParams(k=3, h=1, m=1, p=0.25, q=0.75, f=0.5)
    write_params_csv(basic, tmp_path / "pb.csv")
    counts = simulate_rappor_counts(
        RapporParams(k=3, h=1, m=1, p=0.25, q=0.75, f=0.5, encoding="basic"),
        ["x", "y", "z"],
        [0.7, 0.3, 0.0],
        50_000,
        np.random.default_rng(2),
        candidates=["x", "y", "z"],
    )
    write_counts_csv(counts, tmp_path / "cb.csv")
    (tmp_path / "names.txt").write_text("x\ny\nz\n")
    result = run(
        "decode",
        "--params",
        tmp_path / "pb.csv",
        "--counts",
        tmp_path / "cb.csv",
        "--candidates",
        tmp_path / "names.txt",
        "--basic",
        "--format",
        "json",
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["params"]["encoding"] == "basic" and [row["string"] for row in data["estimates"]][:2] == [
        "x",
        "y",
    ]


@pytest.mark.parametrize("extra", [[], ["--map", "MAP", "--candidates", "CANDIDATES"]])
def test_usage_errors_exit_2(files, extra):
    extra = [
        str(files["map"]) if a == "MAP" else str(files["candidates"]) if a == "CANDIDATES" else a
        for a in extra
    ]
    result = run("decode", "--params", files["params"], "--counts", files["counts"], *extra)
    assert result.exit_code == 2
    assert "--map" in result.output


def test_bad_files_exit_1_with_one_line(files, tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("k,h,m,p,q\n16,2,16,0.25,0.75\n")
    result = run("decode", "--params", bad, "--counts", files["counts"], "--map", files["map"])
    assert result.exit_code == 1
    assert "header" in result.output and len(result.output.strip().splitlines()) == 1
    wrong_shape = tmp_path / "counts.csv"
    wrong_shape.write_text("10,1,2\n")
    result = run("decode", "--params", files["params"], "--counts", wrong_shape, "--map", files["map"])
    assert result.exit_code == 1 and "expected m = 16 rows" in result.output


def test_every_command_and_option_is_documented():
    commands = [rappor, *rappor.commands.values()]
    for command in commands:
        assert command.help and command.help.strip(), command.name
        for parameter in command.params:
            if isinstance(parameter, click.Option) and parameter.name != "help":
                assert parameter.help and parameter.help.strip(), (command.name, parameter.name)
    assert run("--help").exit_code == 0 and "decode" in run("--help").output
    for name in rappor.commands:
        assert run(name, "--help").exit_code == 0
