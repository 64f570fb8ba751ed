"""Figures the docs quote, computed by the code that produces them (issue 31 sections 2 and 7)."""

import math
from pathlib import Path

from estimators.central import central_noise, histogram_sensitivity, ratio_text
from estimators.distributed.accounting import as_shift, calibrate_discrete_gaussian, discrete_gaussian_delta
from estimators.planner import expected_central_block, plan

DOCS = Path(__file__).resolve().parent.parent / "docs"


def flat(text: str) -> str:
    "A page's text with its line breaks folded, so a figure split over two lines is still found"
    return " ".join(text.split())


def sci(x: float) -> str:
    "Three significant digits as the docs write them: 8.95e-7"
    return f"{x:.3g}".replace("e-0", "e-")


def test_the_ratio_figures_of_mechanisms_md_are_the_code_s():
    "GRR, eps 4, d 8, n 1e4: the headline ratio for every distribution, the total for the two distributions named"
    page = flat((DOCS / "mechanisms.md").read_text())
    headline = plan("grr", 4.0, 10_000, domain_size=8).ldp_to_central_ratio
    uniform = expected_central_block("grr", 4.0, 10_000, [1 / 8] * 8)
    one_value = expected_central_block("grr", 4.0, 10_000, [1.0] + [0.0] * 7)
    assert uniform["ldp_to_central_ratio"] == one_value["ldp_to_central_ratio"] == headline
    assert f"it is {ratio_text(headline)}, for every distribution" in page
    at_zero = plan("grr", 4.0, 10_000, domain_size=8).std_error / uniform["std_error"]  # a value at f = 0 alone
    assert f"a value at f = 0 alone would give {ratio_text(at_zero)}" in page
    assert (f"{uniform['total']['ratio']:.2f} for users spread uniformly over the 8 values and "
            f"{ratio_text(one_value['total']['ratio'])} when all hold one value") in page


def test_the_central_interval_of_mechanisms_md_is_the_histogram_s():
    "OUE, eps 1, n 1e5: the rare value's local interval against central Laplace on a histogram (replace-one)"
    page = flat((DOCS / "mechanisms.md").read_text())
    local = plan("oue", 1.0, 100_000, domain_size=8).ci_halfwidth
    central = central_noise(histogram_sensitivity(100_000), 1.0, None, 0.95)["ci_halfwidth"]
    assert f"about ±{local:.3f} with OUE, against ±{central:.5f} ({sci(central)}) for central DP" in page


def test_the_discrete_gaussian_boundary_of_distributed_md_is_computed():
    "eps 4, D 1: the deltas quoted, the non-monotone example at 5e-7, and the one boundary at 1e-6"
    page = flat((DOCS / "distributed.md").read_text())
    docstring = flat(calibrate_discrete_gaussian.__doc__ or "")
    shift = as_shift(1)

    def delta(sigma2: float) -> float:
        return discrete_gaussian_delta(sigma2, 4.0, shift)

    for sigma2 in (1.37, 1.4245, 1.5):
        assert f"{sci(delta(sigma2))} at sigma2 = {sigma2:g}" in page or f"{sci(delta(sigma2))} at {sigma2:g}" in page
    assert delta(1.4245) <= 5e-7 < delta(1.5)  # "at a target of 5e-7 the first passes and the second fails"
    assert f"delta is {sci(delta(1.4245))} at sigma2 = 1.4245 and {sci(delta(1.5))} at 1.5" in docstring
    low, high = 1.0, 2.0  # bisection for the crossing of 1e-6 ...
    while high - low > 1e-9:
        middle = (low + high) / 2
        low, high = (middle, high) if delta(middle) > 1e-6 else (low, middle)
    assert f"the boundary is one point, sigma2 = {high:.5f}" in page and f"one point, {high:.5f}" in docstring
    # ... and it is the only one: every point above it, up to where the sawtooth's peaks are far below 1e-6, passes
    assert all(delta(high + step / 1000) <= 1e-6 for step in range(1, 1000))
    grid = calibrate_discrete_gaussian(4.0, 1e-6, 1)
    assert f"{grid.numerator}/{grid.denominator} = {float(grid):.5f}" in page
    assert math.isclose(float(grid), high, rel_tol=2**-10)


def test_the_benchmarks_page_is_short():
    "A dashboard of current results, not a diary (issue 31 section 7)"
    assert len((DOCS / "benchmarks.md").read_text().splitlines()) < 400


def test_the_tour_s_ratio_is_the_code_s():
    "The demo's browser campaign (OUE, eps 1, d 12, n 2,000): 'about 30 times a trusted curator's'"
    page = flat((DOCS / "tour.md").read_text())
    ratio = plan("oue", 1.0, 2_000, domain_size=12).ldp_to_central_ratio
    assert f"is about {round(ratio, -1):.0f} times a trusted curator's" in page
