"""The browser bundle's figures in the docs, read from the build: budgets as sdk-js/test/bundle.test.mjs holds them,
"about N KB" sizes within 10% of the gzipped files in dist/browser/."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _text(name: str) -> str:
    return " ".join((ROOT / "docs" / name).read_text().split())


def _budgets(sdk_js: Path) -> tuple[int, int]:
    "BUDGET and DISTRIBUTED_BUDGET of bundle.test.mjs (integer expressions such as 12 * 1000 or 16_000)"
    source = (sdk_js / "test" / "bundle.test.mjs").read_text()
    values = []
    for name in ("BUDGET", "DISTRIBUTED_BUDGET"):
        expression = re.search(rf"const {name} = ([\d_ *]+);", source)
        assert expression, name
        values.append(eval(expression.group(1), {"__builtins__": {}}))  # digits, underscores and * only
    return values[0], values[1]


def _gzipped(sdk_js: Path, *names: str) -> int:
    return sum(len(gzip.compress((sdk_js / "dist" / "browser" / name).read_bytes(), 9, mtime=0)) for name in names)


def _kb(stated: str) -> float:
    return float(stated) * 1000


@pytest.mark.parametrize("page", ["sdk-js.md", "benchmarks.md"])
def test_the_docs_bundle_figures_are_the_builds(sdk_js: Path, page: str) -> None:
    budget, distributed_budget = _budgets(sdk_js)
    text = _text(page)
    assert _gzipped(sdk_js, "ldp-telemetry.min.js") <= budget
    assert re.search(rf"`ldp-telemetry.min.js`,? \(?within its budget of {budget:,} bytes minified and gzipped", text)
    assert f"within their shared budget of {distributed_budget:,} bytes" in text
    on_demand = re.search(r"about ([\d.]+) KB (?:gzipped together|for `numeric.js` and `rappor.js`)", text)
    sharder = re.search(r"`vdaf.js`,? \((?:the sharder: )?about ([\d.]+) KB", text)
    assert on_demand and sharder, page
    for stated, measured in ((on_demand.group(1), _gzipped(sdk_js, "numeric.js", "rappor.js")),
                             (sharder.group(1), _gzipped(sdk_js, "vdaf.js"))):
        assert abs(_kb(stated) - measured) <= 0.1 * measured, (page, stated, measured)
    if page == "sdk-js.md":
        module = re.search(r"`prio3.js` \(the prio3 kind: specs, HPKE, aggregator checks: "
                           r"about ([\d.]+) KB gzipped\)", text)
        local = re.search(r"`local.js`: the local kind's spec fields and the categorical randomizers, "
                          r"about ([\d.]+) KB", text)
        repeated = re.search(r"`repeated.js`, about ([\d.]+) KB", text)
        assert module and local and repeated, page
        for stated, measured in ((module.group(1), _gzipped(sdk_js, "prio3.js")),
                                 (local.group(1), _gzipped(sdk_js, "local.js")),
                                 (repeated.group(1), _gzipped(sdk_js, "repeated.js"))):
            assert abs(_kb(stated) - measured) <= 0.1 * measured, (page, stated, measured)
    for stale in re.findall(r"budget ([\d,]+)", text):  # every budget a page names is one the test holds
        assert int(stale.replace(",", "")) in (budget, distributed_budget), (page, stale)
