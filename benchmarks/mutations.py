"""A small mutation check: does some test fail when the code is wrong?

    python benchmarks/mutations.py            # every mutation
    python benchmarks/mutations.py --only fingerprint-check --only base-cut-bonferroni
    python benchmarks/mutations.py --list

Each mutation replaces one exact source snippet (``old`` -> ``new``) in one file of a temporary copy of the
repository, runs the tests named for it there, and restores the file.  A mutation is *killed* when the tests fail,
*survived* when they pass.  A snippet that is not in the file (the code moved or changed) is reported as
``snippet not found`` and counts as a failure of this check, never as a pass: update the list when the code
moves.  Before the mutations, the same tests run once unmutated; if they fail there, nothing is measured.

Exit status: 0 when every mutation is killed; 1 otherwise.  Keep the list current: a bug fixed with a regression
test belongs here as a mutation that the test kills.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Mutation:
    "Replace the one occurrence of ``old`` in ``path`` by ``new``; ``tests`` are pytest arguments"

    name: str
    path: str
    old: str
    new: str
    tests: tuple[str, ...]


MUTATIONS = (
    # issue 9 item 5: the device path must draw from the OS CSPRNG
    Mutation("secure-randbelow-from-random", "client_sdk/randomness.py",
             "return secrets.randbelow(n)", "return random.randrange(n)",
             ("tests/client_sdk/test_randomness.py",)),
    Mutation("secure-randbits-from-random", "client_sdk/randomness.py",
             "return secrets.randbits(k)", "return random.getrandbits(k)",
             ("tests/client_sdk/test_randomness.py",)),
    Mutation("secure-token-bytes-from-random", "client_sdk/randomness.py",
             "return secrets.token_bytes(n)", "return random.randbytes(n)",
             ("tests/client_sdk/test_randomness.py",)),
    # issue 9 item 5: an aggregate made under another spec must be refused
    Mutation("fingerprint-check", "estimators/__init__.py",
             "if aggregate_.fingerprint != spec.fingerprint:", "if False:",
             ("tests/estimators/test_frequency.py", "-k", "another_spec or empty_aggregate")),
    # issue 9 item 5: Base-Cut's threshold is Bonferroni over the d values
    Mutation("base-cut-bonferroni", "estimators/postprocess.py",
             "1 - alpha / domain_size", "1 - alpha",
             ("tests/estimators/test_frequency.py", "tests/estimators/test_central.py", "-k",
              "base_cut or postprocess")),
    # issue 9 item 5: the table marks each value whose interval includes 0 (the footnote alone is not enough)
    Mutation("table-zero-mark", "estimators/report/sections.py",
             "return ZERO_MARK if row.includes_zero", "return \"\" if row.includes_zero",
             ("tests/estimators/test_report_table.py", "tests/cli/test_report_cli.py")),
    # issue 9 item 5 (test_aggregation compared a call with itself): merging must add the counts
    Mutation("merge-drops-counts", "estimators/aggregation.py",
             "self.n + other.n, self.counts + other.counts", "self.n + other.n, self.counts",
             ("tests/estimators/test_aggregation.py",)),
    # issue 8 item 13: no zero-width interval at a support count of 0 or n
    Mutation("zero-width-at-support-0", "estimators/intervals.py",
             "support = np.clip(r, min(p, q), max(p, q))", "support = r",
             ("tests/estimators/test_frequency.py", "-k", "zero_or_n or small_n")),
    Mutation("duchi-zero-variance", "estimators/means.py",
             "variance = max(sample_variance, entry.device.variance(min(max(mean_t, -1.0), 1.0)))",
             "variance = sample_variance",
             ("tests/estimators/test_means.py", "-k", "duchi")),
    # issue 22 §4: central DP drawn around the truth (a width), never around the local estimate
    Mutation("central-around-the-estimate", "estimators/report/plots.py",
             "x + offset, [truth.get(row.value, np.nan) for row in rows], yerr=central",
             "x + offset, estimates, yerr=central",
             ("tests/estimators/test_report_honest.py", "-k", "never_drawn")),
    # issue 22 §1: a histogram under replace-one has L1 sensitivity 2
    Mutation("histogram-add-remove-sensitivity", "estimators/central.py",
             "return Sensitivity(2.0 / n, math.sqrt(2.0) / n,", "return Sensitivity(1.0 / n, 1.0 / n,",
             ("tests/estimators/test_central_relation.py",)),
    # issue 22 §2: plain Wilson under-covers absent values when n q* is small
    Mutation("wilson-without-boundary-correction", "estimators/intervals.py",
             "BOUNDARY_COUNTS = 3 ", "BOUNDARY_COUNTS = 0 ",
             ("tests/estimators/test_coverage_grid.py", "-k", "issue_cells")),
    # issue 13 item 6: heavy libraries only where a command needs them
    Mutation("report-imports-matplotlib-eagerly", "estimators/report/__init__.py",
             "from .table import render_table\n", "from .table import render_table\nfrom .plots import Plot\n",
             ("tests/budgets/test_cli_startup.py",)),
    # issue 24 item 3: CORS for the listed origins only, never on admin routes, and readable problem responses
    Mutation("cors-any-origin", "collector/cors.py",
             "        if origin in allowed:\n", "        if origin:\n",
             ("tests/collector/test_cors.py", "-k", "another_origin")),
    Mutation("cors-admin-route-opened", "collector/cors.py",
             "        if PREFLIGHT in request.environ or not is_browser_route(request.endpoint):",
             "        if PREFLIGHT in request.environ:",
             ("tests/collector/test_cors.py", "-k", "admin_routes_never")),
    Mutation("cors-preflight-any-method", "collector/cors.py",
             "        elif wanted not in methods:", "        elif False:",
             ("tests/collector/test_cors.py", "-k", "only_the_spec_and_report_routes")),
    # issue 24 item 3: a public key reads and reports to its campaigns only, with its own rate limit
    Mutation("scope-ignored", "collector/storage/models.py",
             "return self.campaigns is None or campaign in self.campaigns", "return True",
             ("tests/collector/test_public_keys.py", "-k", "reads_only or rejected_by_name")),
    Mutation("public-rate-limit-ignored", "collector/auth.py",
             'prefix = "PUBLIC_" if key.public else ""', 'prefix = ""',
             ("tests/collector/test_public_keys.py", "-k", "own_stricter_rate_limit")),
    # issue 36: each rule an aggregator enforces on a poplar1 walk, and the tests that play the attacker against it
    Mutation("poplar1-levels-not-increasing", "collector/kinds/poplar1/rules.py",
             "    if history and level <= history[-1][0]:", "    if False:",
             ("tests/collector/kinds/poplar1/test_walk.py", "-k", "repeated_or_reordered")),
    Mutation("poplar1-prefixes-extend-nothing", "collector/kinds/poplar1/rules.py",
             "    if not vdaf.is_valid(agg_param, list(history)):", "    if False:",
             ("tests/collector/kinds/poplar1/test_walk.py", "-k", "extend_nothing_asked")),
    Mutation("poplar1-report-replayed", "collector/kinds/poplar1/rules.py",
             "    if len(set(report_ids)) != len(report_ids):", "    if False:",
             ("tests/collector/kinds/poplar1/test_walk.py", "-k", "replayed_into_a_level")),
    Mutation("poplar1-report-in-two-chunks", "collector/kinds/poplar1/helper.py",
             "            if store.in_level(key, level, report_ids):", "            if False:",
             ("tests/collector/kinds/poplar1/test_chunks.py", "-k", "two_chunks")),
    Mutation("poplar1-min-batch", "collector/kinds/poplar1/rules.py",
             "    if reports < params.min_batch:", "    if False:",
             ("tests/collector/kinds/poplar1/test_walk.py", "-k", "below_min_batch")),
    Mutation("poplar1-no-noise", "collector/kinds/poplar1/prepare.py",
             "return [(a + n) % p for a, n in zip(total, self.share_noise(len(total)))]",
             "return [a % p for a in total]",
             ("tests/collector/kinds/poplar1/test_walk.py", "-k", "calibrated_variance")),
    Mutation("poplar1-sketch-unchecked", "client_sdk/vdaf/poplar1.py",
             "            if (first[0] + second[0]) % p == 0:\n", "            if True:\n",
             ("tests/client_sdk/vdaf/test_poplar1.py", "-k", "malicious_client")),
    # a walk whose noise would multiply its candidates: refused up front, stopped after a padded batch's first level
    Mutation("poplar1-walk-minimum", "collector/kinds/poplar1/leader.py",
             "    if len(reports) < needed:  # before any level", "    if False:  # before any level",
             ("tests/collector/kinds/poplar1/test_processes.py", "-k", "too_small_for_its_threshold and sqlite")),
    Mutation("poplar1-walk-minimum-accepted", "collector/kinds/poplar1/walk.py",
             "                if len(accepted) < needed:", "                if False:",
             ("tests/collector/kinds/poplar1/test_processes.py", "-k", "padded and sqlite")),
    # the heavy_hitters batch check: each payload's marshal tag is an int's, and its cell is in range
    Mutation("heavy-hitters-cell-tag", "estimators/kinds/heavy_hitters/aggregate.py",
             '    if not (items["tag"] == _INT_TAG).all():', "    if False:",
             ("tests/estimators/kinds/heavy_hitters/test_aggregate_add.py",)),
    Mutation("heavy-hitters-cell-range", "estimators/kinds/heavy_hitters/aggregate.py",
             "    return cells if (cells.view(np.uint32) < cell_count(params)).all() else None", "    return cells",
             ("tests/estimators/kinds/heavy_hitters/test_aggregate_add.py",)),
)


def copy_repository(destination: Path) -> None:
    "The tracked and untracked-but-not-ignored files of the working tree (so uncommitted edits count)"
    listing = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, check=True,
                             capture_output=True).stdout.decode().split("\0")
    for name in filter(None, listing):
        source = ROOT / name
        if source.is_file():
            target = destination / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)


def run_tests(copy: Path, tests: tuple[str, ...]) -> tuple[bool, float]:
    "(passed, seconds) of pytest in the copy, importing the copy's packages rather than the installed ones"
    env = {**os.environ, "PYTHONPATH": str(copy), "PYTHONDONTWRITEBYTECODE": "1"}
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *tests], cwd=copy,
                          env=env, capture_output=True, text=True)
    return done.returncode == 0, time.perf_counter() - started


def check(mutation: Mutation, copy: Path, baselines: dict[tuple[str, ...], bool]) -> tuple[str, float]:
    path = copy / mutation.path
    if not path.is_file():
        return "file not found", 0.0
    original = path.read_text(encoding="utf-8")
    occurrences = original.count(mutation.old)
    if occurrences == 0:
        return "snippet not found", 0.0
    if occurrences > 1:
        return f"snippet ambiguous ({occurrences} matches)", 0.0
    if mutation.tests not in baselines:
        baselines[mutation.tests] = run_tests(copy, mutation.tests)[0]
    if not baselines[mutation.tests]:
        return "baseline fails", 0.0
    path.write_text(original.replace(mutation.old, mutation.new), encoding="utf-8")
    try:
        passed, seconds = run_tests(copy, mutation.tests)
    finally:
        path.write_text(original, encoding="utf-8")
    return ("survived" if passed else "killed"), seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", metavar="NAME", help="run only this mutation (repeatable)")
    parser.add_argument("--list", action="store_true", help="list the mutations and exit")
    options = parser.parse_args()
    selected = [m for m in MUTATIONS if not options.only or m.name in options.only]
    if options.only and len(selected) != len(set(options.only)):
        parser.error(f"unknown mutation; known: {', '.join(m.name for m in MUTATIONS)}")
    if options.list:
        for mutation in selected:
            print(f"{mutation.name:<36} {mutation.path}: {mutation.old!r} -> {mutation.new!r}")
        return 0
    print(f"{'mutation':<36} {'file':<30} {'result':<20} {'tests s':>7}")
    failures = 0
    with tempfile.TemporaryDirectory(prefix="ldp-mutations-") as temp:
        copy = Path(temp)
        copy_repository(copy)
        baselines: dict[tuple[str, ...], bool] = {}
        for mutation in selected:
            result, seconds = check(mutation, copy, baselines)
            failures += result != "killed"
            print(f"{mutation.name:<36} {mutation.path:<30} {result:<20} {seconds:>7.1f}", flush=True)
    print(f"{len(selected) - failures} of {len(selected)} killed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
