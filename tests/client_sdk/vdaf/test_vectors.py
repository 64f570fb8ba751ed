"""Every operation of every test vector (the vendored draft-20 ones, plus those in $LDP_VDAF_VECTORS when set)
reproduces the draft's bytes; the runner cannot pass a wrong, unsupported or wrongly-succeeding vector."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from client_sdk.vdaf.vectors import check_vector_file

from .vectors_dir import VENDORED, extra_vectors_dir, vector_files, vector_id


def test_the_vendored_vectors_cover_every_implemented_type():
    names = {p.stem.rsplit("_", 1)[0] for p in VENDORED.glob("*.json")}
    assert {"Prio3Count", "Prio3Sum", "Prio3SumVec", "Prio3Histogram", "Prio3MultihotCountVec", "XofTurboShake128",
            "XofFixedKeyAes128"} <= names, f"vectors missing from {VENDORED}"


def test_an_extra_vector_directory_exists_and_holds_vectors():
    extra = extra_vectors_dir()
    if extra is None:
        return  # no extra vectors asked for: the vendored ones run alone
    assert extra.is_dir(), f"LDP_VDAF_VECTORS={extra} is not a directory"
    assert any(extra.glob("*.json")), f"no *.json test vectors in LDP_VDAF_VECTORS={extra}"


@pytest.mark.parametrize("path", vector_files(), ids=vector_id)
def test_vector(path: Path):
    assert check_vector_file(path) is None


def _copy(tmp_path: Path, name: str, edit) -> Path:
    source = VENDORED / f"{name}.json"
    if not source.is_file():
        pytest.fail(f"{source} is missing")
    vector = json.loads(source.read_text())
    edit(vector)
    target = tmp_path / f"{name}.json"
    target.write_text(json.dumps(vector))
    return target


def _flip(hex_string: str, position: int = 0) -> str:
    raw = bytearray(bytes.fromhex(hex_string))
    raw[position] ^= 1
    return raw.hex()


@pytest.mark.parametrize("field,where", [
    ("public_share", "public_share"),
    ("input_shares", "input_shares[0]"),
    ("verifier_shares", "verifier_shares[0][0]"),
    ("verifier_messages", "verifier_messages"),
    ("out_shares", "out_shares[1]"),
])
def test_a_changed_expected_value_is_reported(tmp_path, field, where):
    def edit(v):
        report = v["reports"][0]
        if field == "public_share":
            report[field] = _flip(report[field])
        elif field == "input_shares":
            report[field][0] = _flip(report[field][0], 3)
        elif field == "verifier_shares":
            report[field][0][0] = _flip(report[field][0][0])
        elif field == "verifier_messages":
            report[field][0] = _flip(report[field][0])
        else:
            report[field][1] = _flip(report[field][1])

    mismatch = check_vector_file(_copy(tmp_path, "Prio3Histogram_0", edit))
    assert mismatch is not None and where.split("[")[0] in mismatch


def test_changed_aggregate_result_is_reported(tmp_path):
    def edit(v):
        v["agg_result"] = [x + 1 for x in v["agg_result"]]

    assert "agg_result" in check_vector_file(_copy(tmp_path, "Prio3Histogram_0", edit))


def test_changed_xof_output_is_reported(tmp_path):
    def edit(v):
        v["expanded_vec_field128"] = _flip(v["expanded_vec_field128"], 100)

    assert "expanded_vec_field128" in check_vector_file(_copy(tmp_path, "XofTurboShake128", edit))


def test_an_operation_that_should_fail_but_succeeds_is_reported(tmp_path):
    def edit(v):
        v["operations"][-1]["success"] = False

    assert "must fail" in check_vector_file(_copy(tmp_path, "Prio3Count_0", edit))


def test_a_negative_vector_whose_failure_is_not_reached_is_reported(tmp_path):
    good = json.loads((VENDORED / "Prio3Count_0.json").read_text())

    def edit(v):  # the bad vector's report replaced by a good one: verification no longer fails
        v["reports"] = good["reports"]

    assert "must fail" in check_vector_file(_copy(tmp_path, "Prio3Count_bad_meas_share", edit))


def test_nothing_may_follow_a_failed_operation(tmp_path):
    def edit(v):
        v["operations"].append({"aggregator_id": 0, "operation": "verify_next", "report_index": 0, "round": 1,
                                "success": True})

    assert "after the report was rejected" in check_vector_file(_copy(tmp_path, "Prio3Count_bad_wire_seed", edit))


def test_unsupported_vector_type_fails(tmp_path):
    path = tmp_path / "Poplar1_0.json"
    path.write_text(json.dumps({"operations": []}))
    assert "unsupported" in check_vector_file(path)


def test_malformed_vector_fails(tmp_path):
    path = tmp_path / "Prio3Count_9.json"
    path.write_text("{not json")
    assert check_vector_file(path) is not None
