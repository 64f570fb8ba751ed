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
            "XofFixedKeyAes128", "Poplar1", "IdpfBBCGGI21"} <= names, f"vectors missing from {VENDORED}"


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
    path = tmp_path / "Mastic_0.json"
    path.write_text(json.dumps({"operations": []}))
    assert "unsupported" in check_vector_file(path)


def test_malformed_vector_fails(tmp_path):
    path = tmp_path / "Prio3Count_9.json"
    path.write_text("{not json")
    assert check_vector_file(path) is not None


@pytest.mark.parametrize("name,edit,where", [
    ("Poplar1_1", lambda v: v["reports"][0].update(public_share=_flip(v["reports"][0]["public_share"], 5)),
     "public_share"),
    ("Poplar1_1", lambda v: v["reports"][0]["verifier_shares"][1].__setitem__(
        0, _flip(v["reports"][0]["verifier_shares"][1][0])), "verifier_shares[1][0]"),
    ("Poplar1_3", lambda v: v["reports"][0]["out_shares"].__setitem__(1, _flip(v["reports"][0]["out_shares"][1])),
     "out_shares[1]"),
    ("Poplar1_3", lambda v: v.update(agg_result=[1] + v["agg_result"][1:]), "agg_result"),
    ("IdpfBBCGGI21_0", lambda v: v.update(public_share=_flip(v["public_share"], 40)), "public_share"),
    ("IdpfBBCGGI21_0", lambda v: v["beta_leaf"].__setitem__(0, "8"), "public_share"),
])
def test_a_changed_poplar1_or_idpf_value_is_reported(tmp_path, name, edit, where):
    mismatch = check_vector_file(_copy(tmp_path, name, edit))
    assert mismatch is not None and where in mismatch


def test_a_tampered_poplar1_input_share_fails_where_the_vector_expects_success(tmp_path):
    def edit(v):  # the helper's correlation share changed (not resharded): its second-round sketch share differs
        v["operations"] = v["operations"][1:]
        report = v["reports"][0]
        report["input_shares"][1] = _flip(report["input_shares"][1], 16 + 32)

    mismatch = check_vector_file(_copy(tmp_path, "Poplar1_0", edit))
    assert mismatch is not None and "verifier_shares[1][1]" in mismatch


def test_a_poplar1_sketch_that_must_fail_is_held_to_it(tmp_path):
    """A negative vector made from a positive one: the second-round sketch must be rejected; with an honest report
    it is accepted, which the checker reports"""
    def edit(v):
        v["operations"] = [op for op in v["operations"] if op["operation"] not in ("aggregate", "unshard")]
        v["operations"] = v["operations"][:7]
        v["operations"][-1]["success"] = False

    mismatch = check_vector_file(_copy(tmp_path, "Poplar1_1", edit))
    assert mismatch is not None and "must fail" in mismatch
