"""benchmarks/prio3.py measures the draft's reference implementation in the same run, or says why it did not:
no peer figure is a constant."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_without_a_reference_its_columns_say_so_and_no_ratio_is_printed(tmp_path):
    prio3 = _load("prio3")
    missing = prio3.Reference(None, None)
    assert missing.problem == "not run (no --reference DIR)"
    assert missing.shard(["Count"], 1, 10) is None
    assert prio3.ms(None, missing.problem) == "not run" and prio3.ratio(None, 0.001) == "-"
    assert prio3.ms(0.0012345, None) == "1.234" and prio3.ratio(0.004, 0.001) == "4.0x"


def test_a_reference_that_cannot_run_is_reported_not_raised(tmp_path):
    prio3 = _load("prio3")
    not_a_checkout = prio3.Reference(str(tmp_path), sys.executable)
    if sys.version_info < (3, 12):
        assert "needs Python >= 3.12" in not_a_checkout.problem
    else:
        assert "no poc/vdaf_poc/vdaf_prio3.py" in not_a_checkout.problem
    assert not_a_checkout.process is None
    no_interpreter = prio3.Reference(str(tmp_path), str(tmp_path / "python-missing"))
    assert no_interpreter.problem.startswith("not run: ") and no_interpreter.process is None


def test_no_benchmark_or_doc_divides_by_a_stored_peer_figure():
    "The old constants (REFERENCE = {...}) and the ratio figures computed from them are gone"
    docs = [ROOT / "docs" / "benchmarks.md", ROOT / "docs" / "distributed.md"]
    for path in [*(ROOT / "benchmarks").glob("*.py"), *docs]:
        text = path.read_text()
        assert not re.search(r"^REFERENCE\s*=", text, re.M), path
        for stale in ("0.81, 1.71", "214 ms and 141 ms", "about 20x to 42x"):
            assert stale not in text, (path, stale)
