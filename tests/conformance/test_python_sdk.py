"""The Python SDK runs the language-neutral conformance cases (conformance/<kind>/*.json, and exp.json that every
kind shares); sdk-js runs the same files."""

from __future__ import annotations

import importlib.util
import json
import random
from pathlib import Path
from typing import Any

import pytest

from client_sdk import mechanism_from_spec
from client_sdk.errors import LDPError, SpecError
from client_sdk.randomness import SECURE_RANDOM, ByteStreamRandom, exp_rounded
from client_sdk.spec import load_spec

CONFORMANCE = Path(__file__).resolve().parents[2] / "conformance"


def _load(name: str) -> Any:
    return json.loads((CONFORMANCE / name).read_text(encoding="utf-8"))


def _kinds_with(name: str) -> list[str]:
    "The kinds whose directory holds ``name`` (a new kind adds its own directory)"
    return sorted(path.parent.name for path in CONFORMANCE.glob(f"*/{name}"))


PAYLOADS = _load("local/payloads.json")
SPEC_CASES = {kind: _load(f"{kind}/specs.json") for kind in _kinds_with("specs.json")}
VALID_SPECS = [case for cases in SPEC_CASES.values() for case in cases["valid"]]
INVALID_SPECS = [case for cases in SPEC_CASES.values() for case in cases["invalid"]]


def _perturb(case: dict, rng: Any) -> Any:
    options = {"rng": rng}
    if "secret" in case:
        options["secret"] = bytes.fromhex(case["secret"])
    return mechanism_from_spec(case["spec"], **options).perturb(case["value"])


@pytest.mark.parametrize("case", PAYLOADS, ids=lambda c: c["spec"]["name"])
def test_payload_vector(case: dict) -> None:
    "The same bytes give the same payload, and every byte of the vector is consumed"
    random_bytes = bytes.fromhex(case["random"])
    rng = ByteStreamRandom(random_bytes)
    assert _perturb(case, rng) == case["payload"]
    assert rng.consumed == len(random_bytes)


def test_secure_random_consumes_the_os_bytes_as_the_vectors_do(monkeypatch: pytest.MonkeyPatch) -> None:
    "Production draws (secrets over os.urandom) read the CSPRNG bytes exactly as ByteStreamRandom reads the vector"
    for case in PAYLOADS[::5]:
        stream = ByteStreamRandom(bytes.fromhex(case["random"]))
        monkeypatch.setattr(random, "_urandom", stream.token_bytes)
        assert _perturb(case, SECURE_RANDOM) == case["payload"]
        assert stream.consumed == len(case["random"]) // 2


@pytest.mark.parametrize("case", VALID_SPECS, ids=lambda c: c["spec"]["name"])
def test_valid_spec(case: dict) -> None:
    spec = load_spec(case["spec"])
    assert (spec.mechanism, spec.epsilon, spec.fingerprint) == (case["mechanism"], case["epsilon"],
                                                                case["fingerprint"])


@pytest.mark.parametrize("case", INVALID_SPECS, ids=lambda c: c["field"])
def test_invalid_spec(case: dict) -> None:
    source = case["spec"] if not isinstance(case["spec"], str) else json.dumps(case["spec"])
    with pytest.raises(SpecError) as caught:
        load_spec(source)
    assert (type(caught.value).__name__, caught.value.field) == (case["error"], case["field"])


def test_exp_rounded_matches_the_table() -> None:
    assert [[x, exp_rounded(x)] for x, _ in _load("exp.json")] == _load("exp.json")


def test_wire_format() -> None:
    for case in _load("local/wire.json"):
        mechanism = mechanism_from_spec(case["spec"])
        if case["valid"]:
            mechanism.check_payload(case["payload"])
        else:
            with pytest.raises(LDPError) as caught:
                mechanism.check_payload(case["payload"])
            assert getattr(caught.value, "field", None) == case["field"], case


def test_every_mechanism_has_payload_vectors() -> None:
    "A new mechanism without conformance cases (conformance/generate.py) fails here"
    from client_sdk.mechanisms import MECHANISM_CLASSES

    assert {case["spec"]["mechanism"] for case in PAYLOADS} == set(MECHANISM_CLASSES)


def test_byte_stream_runs_out_loudly() -> None:
    with pytest.raises(EOFError):
        ByteStreamRandom(b"\x01").randbits(9)


def test_files_are_what_the_generator_writes() -> None:
    "A changed mechanism without regenerated vectors (python conformance/generate.py) fails here"
    spec = importlib.util.spec_from_file_location("conformance_generate", CONFORMANCE / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    documents = module.documents()
    for name, content in documents.items():
        assert (CONFORMANCE / name).read_text(encoding="utf-8") == module.render(content), name
    written = {path.relative_to(CONFORMANCE).as_posix() for path in CONFORMANCE.rglob("*.json")}
    assert written == set(documents), "every case file is the generator's (a kind's cases live in conformance/<kind>/)"


def test_the_cases_are_per_kind() -> None:
    "Each built-in kind has its own directory of cases; the spec cases are those of the local kind"
    assert {path.name for path in CONFORMANCE.iterdir() if path.is_dir()} >= {"local", "prio3"}
    assert "local" in _kinds_with("specs.json")
    assert VALID_SPECS and INVALID_SPECS


@pytest.mark.parametrize("case", _load("prio3/shards.json"), ids=lambda c: c["spec"]["name"])
def test_prio3_shard_vector(case: dict) -> None:
    "The campaign's Prio3 parameters, context and, from the case's nonce and rand, the exact encoded shards"
    from client_sdk.distributed import ctx_for, vdaf_for

    spec = load_spec(case["spec"])
    assert spec.fingerprint == case["fingerprint"] and spec.prio3 is not None
    assert {key: getattr(spec.prio3, key) for key in case["prio3"]} == case["prio3"]
    assert ctx_for(spec).hex() == case["ctx"]
    vdaf = vdaf_for(spec)
    measurement = case["measurement"]
    if spec.prio3.noise == "coins":
        measurement = tuple(measurement)
    public, shares = vdaf.shard(ctx_for(spec), measurement, bytes.fromhex(case["nonce"]), bytes.fromhex(case["rand"]))
    assert vdaf.encode_public_share(public).hex() == case["public_share"]
    assert [vdaf.encode_input_share(share).hex() for share in shares] == case["input_shares"]
