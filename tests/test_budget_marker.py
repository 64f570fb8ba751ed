"""Budgets and behaviour stay apart: every test module under tests/budgets/ is marked ``budget`` as a whole, and no
test elsewhere is, so ``pytest -m budget`` selects exactly the folder (tests/budgets/README.md)."""

from __future__ import annotations

import re
from pathlib import Path

TESTS = Path(__file__).resolve().parent
BUDGETS = TESTS / "budgets"
MODULE_MARK = re.compile(r"^pytestmark = pytest\.mark\.budget$", re.MULTILINE)


def test_every_module_in_the_budget_folder_is_marked_budget():
    modules = sorted(BUDGETS.glob("test_*.py"))
    assert modules, "no budget modules"
    unmarked = [p.name for p in modules if not MODULE_MARK.search(p.read_text(encoding="utf-8"))]
    assert not unmarked, f"add `pytestmark = pytest.mark.budget` to {unmarked}"


def test_no_test_outside_the_budget_folder_is_marked_budget():
    marked = [str(p.relative_to(TESTS)) for p in TESTS.rglob("*.py")
              if BUDGETS not in p.parents and p != Path(__file__) and "mark.budget" in p.read_text(encoding="utf-8")]
    assert not marked, f"budget tests live in tests/budgets/: move them from {marked}"
