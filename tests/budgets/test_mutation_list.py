"""The mutation check (benchmarks/mutations.py) stays current: every mutation's snippet stands exactly once in its
file, and its tests exist, so a refactor that moves the code fails here instead of silently retiring a mutation."""

import importlib.util
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.budget

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("mutations", ROOT / "benchmarks" / "mutations.py")
mutations = importlib.util.module_from_spec(_spec)
sys.modules.setdefault("mutations", mutations)  # dataclasses look their module up while the class is built
_spec.loader.exec_module(mutations)


@pytest.mark.parametrize("mutation", mutations.MUTATIONS, ids=lambda m: m.name)
def test_every_mutation_still_applies(mutation):
    source = (ROOT / mutation.path).read_text(encoding="utf-8")
    assert source.count(mutation.old) == 1, f"{mutation.name}: snippet not found once in {mutation.path}"
    assert mutation.old != mutation.new
    test_file = mutation.tests[0].split("::")[0]
    assert (ROOT / test_file).is_file(), f"{mutation.name}: no test file {test_file}"
