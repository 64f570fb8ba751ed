"""``import client_sdk``, parsing a spec and perturbing load only what recording needs (issue 14 item 4): no
``dataclasses`` (and its ``inspect``), ``typing``, ``datetime`` or ``pkgutil``.  The spec's classes keep what
``@dataclass(frozen=True)`` gave them; expiry days are checked without ``datetime``, as ``datetime`` checks them."""

from __future__ import annotations

import copy
import datetime
import json
import pickle
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import client_sdk
from client_sdk import load_spec
from client_sdk.mechanisms import _module_names
from client_sdk.rappor import RapporParams
from client_sdk.spec import Prio3Params, Spec, is_day

ROOT = Path(__file__).resolve().parents[2]
NOT_NEEDED = {"dataclasses", "inspect", "ast", "dis", "tokenize", "typing", "datetime", "pkgutil", "importlib.util"}
SPECS = [
    {"name": "browser", "mechanism": "oue", "epsilon": 1.0, "domain": ["chrome", "firefox", "safari"],
     "expires": "2030-02-28"},
    {"name": "load_ms", "mechanism": "piecewise", "epsilon": 2.0, "range": [0, 5000]},
    {"name": "home", "mechanism": "rappor", "rappor": {"k": 32, "h": 2, "m": 4, "f": 0.5, "p": 0.5, "q": 0.75}},
]
DISTRIBUTED = {"name": "apps", "trust": "distributed", "prio3": "histogram", "domain": ["a", "b", "c"],
               "epsilon": 1.0, "delta": 1e-6, "noise": "gaussian", "min_batch": 100}
VALUES = ["safari", 230.0, "https://example.test/"]


def test_importing_parsing_and_perturbing_load_no_module_that_recording_does_not_need():
    # -S: no site-packages, so nothing (an editable install's import hook) is loaded before client_sdk
    code = (f"import sys; sys.path.insert(0, {str(ROOT)!r})\n"
            "import json, client_sdk\n"
            f"for spec, value in zip(json.loads(sys.argv[1]), {VALUES!r}):\n"
            "    spec = client_sdk.load_spec(json.dumps(spec))\n"
            "    client_sdk.mechanism_from_spec(spec).perturb(value)\n"
            "    spec.to_dict(), spec.fingerprint, spec.expired_on('2030-03-01')\n"
            f"client_sdk.load_spec({DISTRIBUTED!r}).fingerprint\n"
            "print(json.dumps(sorted(sys.modules)))")
    loaded = set(json.loads(subprocess.run([sys.executable, "-S", "-c", code, json.dumps(SPECS)], check=True,
                                           capture_output=True, text=True).stdout))
    assert "client_sdk.mechanisms.rappor" in loaded and "client_sdk.spec" in loaded
    assert not NOT_NEEDED & loaded, sorted(NOT_NEEDED & loaded)


def test_spec_classes_are_frozen_and_compared_by_value():
    specs = [load_spec(spec) for spec in [*SPECS, DISTRIBUTED]]
    again = [load_spec(spec) for spec in [*SPECS, DISTRIBUTED]]
    specs[0].fingerprint, specs[0].index_of("safari")  # memos are not part of the value
    for spec, same in zip(specs, again):
        assert spec == same and hash(spec) == hash(same) and spec is not same
        assert repr(spec) == repr(same) and repr(spec).startswith(f"Spec(name={spec.name!r}, mechanism=")
        assert "_index" not in repr(spec) and "_fingerprint" not in repr(spec)
        for other in (pickle.loads(pickle.dumps(spec)), copy.copy(spec), copy.deepcopy(spec)):
            assert other == spec and other.fingerprint == spec.fingerprint
        with pytest.raises(AttributeError, match="frozen"):
            spec.epsilon = 9.0  # type: ignore[misc]
        with pytest.raises(AttributeError, match="frozen"):
            del spec.name
        with pytest.raises(AttributeError):
            spec.extra = 1  # type: ignore[attr-defined]
    assert specs[0] != specs[1] and specs[0] != SPECS[0] and len(set(specs + again)) == len(specs)
    assert specs[0] != Spec(**{**{name: getattr(specs[0], name) for name in Spec._fields}, "epsilon": 1.5})
    rappor, prio3 = specs[2].rappor, specs[3].prio3
    assert isinstance(rappor, RapporParams) and isinstance(prio3, Prio3Params)
    for params in (rappor, prio3):
        assert params == copy.deepcopy(params) and hash(params) == hash(pickle.loads(pickle.dumps(params)))
        with pytest.raises(AttributeError, match="frozen"):
            params.min_batch = 3  # type: ignore[misc,union-attr]
    assert repr(RapporParams()) == "RapporParams(k=16, h=2, m=64, f=0.5, p=0.5, q=0.75, encoding='bloom')"
    assert RapporParams(1, 1, 2) == RapporParams(k=1, h=1, m=2, encoding="boolean")  # positional, as before
    assert prio3.chunk_length == 1 and prio3._replace(min_batch=7) == Prio3Params(
        "histogram", 3, None, None, 1, "gaussian", None, None, 7, "day")


@pytest.mark.parametrize("text", [
    "2024-02-29", "2023-02-29", "1900-02-29", "2000-02-29", "2100-02-28", "0001-01-01", "0000-01-01",
    "9999-12-31", "2024-04-31", "2024-13-01", "2024-00-10", "2024-01-00", "2024-01-32", "2024-1-01",
    "2024/01/01", "20240101", "2024-W01-1", "2024-01-01\n", " 2024-01-01", "2024-01-0a", "+024-01-01",
    "2024-01-+1", "２０２４-01-01", "2024-01-0\u0661", "2024-01-0\u00b9", "2024-01-01T00", "", "2024-01-1 ",
])
def test_is_day_agrees_with_datetime(text):
    try:
        expected = len(text) == 10 and datetime.date.fromisoformat(text).isoformat() == text
    except ValueError:
        expected = False
    assert is_day(text) is expected


def test_is_day_accepts_every_real_day_and_nothing_else_in_leap_and_common_years():
    for year in (1, 1900, 2000, 2023, 2024, 2100, 9999):
        first, last = datetime.date(year, 1, 1).toordinal(), datetime.date(year, 12, 31).toordinal()
        real = {datetime.date.fromordinal(day).isoformat() for day in range(first, last + 1)}
        written = {f"{year:04d}-{month:02d}-{day:02d}" for month in range(0, 14) for day in range(0, 33)}
        assert {text for text in written if is_day(text)} == real


def test_spec_expires_is_validated_as_before():
    base = {"name": "x", "mechanism": "grr", "epsilon": 1.0, "domain": ["a", "b"]}
    assert load_spec({**base, "expires": "2028-02-29"}).expires == "2028-02-29"
    for bad in ("2027-02-29", "2027-2-28", 20270228, "tomorrow"):
        with pytest.raises(client_sdk.SpecError, match="expires"):
            load_spec({**base, "expires": bad})


def test_every_mechanism_module_is_found_as_pkgutil_finds_it(tmp_path):
    import client_sdk.mechanisms as package

    for directory in package.__path__:
        assert _module_names(directory) == [module.name for module in pkgutil.iter_modules([directory])]
    for name in ("one.py", "two.pyc", "notes.txt", "__init__.py", "three.py~"):
        (tmp_path / name).write_text("")
    (tmp_path / "pack").mkdir()
    (tmp_path / "pack" / "__init__.py").write_text("")
    (tmp_path / "__pycache__").mkdir()
    (tmp_path / "data").mkdir()
    assert _module_names(str(tmp_path)) == [module.name for module in pkgutil.iter_modules([str(tmp_path)])]
    assert _module_names(str(tmp_path)) == ["one", "pack", "two"]
