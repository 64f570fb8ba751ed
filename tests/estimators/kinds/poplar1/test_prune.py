"""The poplar1 pruning rule: a prefix whose true count is exactly the threshold survives the whole walk with
probability at least 1 - beta (each level: the exact miss probability of its margin), drawn with the aggregators'
own noise samplers; keeping at the bare threshold (margin 0) loses it at every level half the time."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from client_sdk.randomness import DeterministicRandom
from estimators.kinds.poplar1 import walk_noise
from estimators.kinds.poplar1.prune import (
    MAX_NOISE_GROWTH,
    MISS_PROBABILITY,
    PruningRule,
    minimum_walk_reports,
    noise_branching,
    noise_growth,
    pruning_margin,
    pruning_rule,
)

EPSILON, DELTA, LEVELS, THRESHOLD, REPORTS = 1.0, 1e-6, 8, 0.01, 10_000  # the 10,000-device walk
TRIALS = 1500


def walks_at_threshold(rule: PruningRule, seed: int = 36) -> tuple[int, int]:
    """(walks that lost the prefix, levels that pruned it) over TRIALS walks of a prefix of true count exactly
    the threshold at every level, each level's count plus the leader's and the helper's own noise draws"""
    noise = walk_noise(EPSILON, DELTA, LEVELS)
    leader, helper = DeterministicRandom(seed), DeterministicRandom(seed + 1)
    lost = pruned = 0
    for _ in range(TRIALS):
        counts = [rule.threshold_count + a + b for a, b in zip(noise.share_noise(LEVELS, leader),
                                                               noise.share_noise(LEVELS, helper))]
        misses = sum(1 for count in counts if not rule.keeps(count))
        pruned += misses
        lost += misses > 0
    return lost, pruned


def within(observed: int, trials: int, p: float, sds: float = 4.0) -> bool:
    "``observed`` of ``trials`` Bernoulli(p) draws within ``sds`` binomial standard deviations of trials x p"
    return abs(observed - trials * p) <= sds * math.sqrt(trials * p * (1 - p))


def exact_miss(margin: int) -> float:
    "P(N < -margin) at one level, N the release's noise (both aggregators), from its exact pmf"
    offsets, pmf = walk_noise(EPSILON, DELTA, LEVELS).noise_pmf()
    return float(pmf[offsets < -margin].sum())


def test_the_margin_is_the_smallest_with_the_stated_per_level_miss_probability():
    margin = pruning_margin(EPSILON, DELTA, LEVELS)
    assert exact_miss(margin) <= MISS_PROBABILITY / LEVELS < exact_miss(margin - 1)


def test_a_prefix_exactly_at_the_threshold_survives_the_walk_at_the_stated_rate():
    rule = pruning_rule(EPSILON, DELTA, LEVELS, THRESHOLD, REPORTS)
    assert rule.threshold_count == 100 and rule.keep_count == 100 - pruning_margin(EPSILON, DELTA, LEVELS)
    lost, pruned = walks_at_threshold(rule)
    per_level = exact_miss(rule.margin)
    assert within(pruned, TRIALS * LEVELS, per_level)  # each level prunes it at the exact pmf's rate
    # the walk loses it at most beta of the time (the union over levels), 4 binomial sds of slack
    assert lost <= TRIALS * MISS_PROBABILITY + 4 * math.sqrt(TRIALS * MISS_PROBABILITY * (1 - MISS_PROBABILITY))


def test_keeping_at_the_bare_threshold_loses_the_prefix_half_the_time_at_each_level():
    bare = PruningRule(THRESHOLD * REPORTS, 0, MISS_PROBABILITY, LEVELS)
    lost, pruned = walks_at_threshold(bare)
    assert within(pruned, TRIALS * LEVELS, exact_miss(0))  # P(N < 0), just under 1/2
    assert lost > TRIALS * (1 - 2 * MISS_PROBABILITY)  # nearly every walk loses it: the rule above would fail


def test_the_figures_of_docs_distributed_md_are_the_code_s():
    page = " ".join((Path(__file__).resolve().parents[4] / "docs" / "distributed.md").read_text().split())
    rule = pruning_rule(EPSILON, DELTA, LEVELS, THRESHOLD, REPORTS)
    assert (f"m = {rule.margin} (each level misses a count-T prefix with probability {exact_miss(rule.margin):.3g}, "
            f"at most {MISS_PROBABILITY / LEVELS:g}), so a prefix is kept at {rule.keep_count:g}") in page


def test_the_fewest_walk_reports_are_where_the_noise_growth_falls_to_its_bound():
    for epsilon, levels, threshold, stride in ((1.0, 8, 0.01, 4), (1.0, 8, 0.05, 4), (2.0, 4, 0.1, 4),
                                               (4.0, 2, 0.5, 8), (1.0, 32, 0.01, 1), (0.5, 16, 0.02, 2)):
        fewest = minimum_walk_reports(epsilon, DELTA, levels, threshold, stride)
        at, below = (noise_growth(noise_branching(epsilon, DELTA, levels, threshold, reports, stride), levels)
                     for reports in (fewest, fewest - 1))
        assert at <= MAX_NOISE_GROWTH < below, (epsilon, levels, threshold, stride)
    # the walk (10,000 reports at 1%) is walked; the runaway one (600 at 5%) is not
    assert minimum_walk_reports(EPSILON, DELTA, LEVELS, THRESHOLD, 4) <= REPORTS
    assert minimum_walk_reports(EPSILON, DELTA, LEVELS, 0.05, 4) > 600


def test_a_noise_only_candidate_is_kept_at_the_stated_rate_and_its_descendants_grow_as_stated():
    """The aggregators' own noise samplers: a candidate of true count 0 is kept at the rate noise_branching states
    (per extension), and a walk of noise-only prefixes (a branching process with those keeps) grows geometrically
    at the runaway case and stays within the bound at the fewest reports"""
    noise = walk_noise(EPSILON, DELTA, LEVELS)
    leader, helper = DeterministicRandom(7), DeterministicRandom(8)
    draws = 6000
    for reports in (600, minimum_walk_reports(EPSILON, DELTA, LEVELS, 0.05, 4)):
        rule = pruning_rule(EPSILON, DELTA, LEVELS, 0.05, reports)
        kept = sum(1 for a, b in zip(noise.share_noise(draws, leader), noise.share_noise(draws, helper))
                   if rule.keeps(a + b))
        assert within(kept, draws, noise_branching(EPSILON, DELTA, LEVELS, 0.05, reports, 4) / 16)
    generator = np.random.default_rng(36)

    def noise_descendants(reports: int, runs: int = 400) -> float:
        "The mean noise prefixes one true prefix's extensions bring over the walk (capped at 10**6 a level)"
        keep = noise_branching(EPSILON, DELTA, LEVELS, 0.05, reports, 4) / 16
        total = 0
        for _ in range(runs):
            alive = 1  # the true prefix: its 16 extensions are candidates
            for _level in range(LEVELS - 1):
                alive = min(int(generator.binomial(16 * alive, keep)), 10**6)
                total += alive
        return total / runs

    assert noise_descendants(600) > 1000 * MAX_NOISE_GROWTH  # the runaway walk
    fewest = minimum_walk_reports(EPSILON, DELTA, LEVELS, 0.05, 4)
    assert noise_descendants(fewest) <= 2 * MAX_NOISE_GROWTH  # its mean is at most the bound (sampling slack)


def test_the_walk_minimum_figures_of_docs_distributed_md_are_the_code_s():
    page = " ".join((Path(__file__).resolve().parents[4] / "docs" / "distributed.md").read_text().split())
    runaway = noise_branching(EPSILON, DELTA, LEVELS, 0.05, 600, 4)
    walked = noise_branching(EPSILON, DELTA, LEVELS, THRESHOLD, REPORTS, 4)
    assert f"M = {runaway:.1f}, a walk that does not end" in page
    fewest, fewest_at_5 = (minimum_walk_reports(EPSILON, DELTA, LEVELS, t, 4) for t in (THRESHOLD, 0.05))
    assert (f"{fewest:,} at threshold 0.01 in the example (M = {walked:.2f} at its 10,000), {fewest_at_5:,} at "
            "0.05") in page
    assert f"at most {MAX_NOISE_GROWTH:g} (`MAX_NOISE_GROWTH`" in page
