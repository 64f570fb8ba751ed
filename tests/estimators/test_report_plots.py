"""The figures and the sqrt(n) curves: formulas, simulated points, the object API only."""

import math
import subprocess
import sys

import numpy as np
import pytest
from matplotlib.figure import Figure

from estimators.report import ReportData
from estimators.report.model import format_number
from estimators.report.plots import daily_figure, frequency_figure, mean_figure, png_bytes, report_plots
from estimators.report.scaling import CENTRAL_SAMPLES, MAX_TRIALS, SIMULATION_BUDGET, scaling_curves
from tests.tolerances import k_sigma

from .report_fixtures import browser_data, browser_result, browser_spec, daily_browser, load_time_result


def slope(x, y):
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])


def test_sqrt_n_curves_have_slopes_minus_half_and_minus_one_and_mark_current_n():
    result = browser_result()
    curves = scaling_curves(result, browser_spec().to_dict(), simulate_points=False)
    assert math.isclose(slope(curves.n, curves.ldp_halfwidth), -0.5, abs_tol=1e-9)
    assert math.isclose(slope(curves.n, curves.central_halfwidth), -1.0, abs_tol=1e-9)
    assert curves.current_n == result["n"]
    assert curves.current_central == result["central_dp"]["ci_halfwidth"]
    at_current = np.interp(np.log(result["n"]), np.log(curves.n), np.log(curves.ldp_halfwidth))
    # the formula through the estimated distribution passes through the campaign's own mean half-width
    assert abs(math.exp(at_current) / curves.current_ldp - 1) < 0.02


def test_simulated_points_agree_with_the_formula():
    spec = browser_spec("grr")
    curves = scaling_curves(browser_result(mechanism="grr"), spec.to_dict(), rng=np.random.default_rng(7))
    assert len(curves.simulated_n) >= 3
    d = len(spec.domain)
    k = k_sigma(2 * len(curves.simulated_n))
    for n, ldp, central in zip(curves.simulated_n, curves.simulated_ldp, curves.simulated_central):
        trials = int(min(MAX_TRIALS, SIMULATION_BUDGET // (n * d)))
        samples = trials * d
        formula_ldp = np.interp(n, curves.n, curves.ldp_halfwidth)
        formula_central = np.interp(np.log(n), np.log(curves.n), np.log(curves.central_halfwidth))
        # z * RMS: its square is a mean of `samples` squared normal errors, relative sd sqrt(2 / samples)
        assert abs((ldp / formula_ldp) ** 2 - 1) < k * math.sqrt(2 / samples)
        # the 0.95 quantile x of |Laplace(b)|: x = b ln 20, density there 0.05 / b, so the sample quantile's
        # relative sd is sqrt(0.95 * 0.05 / samples) / (0.05 ln 20)
        relative_sd = math.sqrt(0.95 * 0.05 / CENTRAL_SAMPLES) / (0.05 * math.log(20))
        assert abs(math.log(central) - float(formula_central)) < k * relative_sd


def test_scaling_curves_for_means_and_none_for_unknown_kinds():
    result = load_time_result()
    curves = scaling_curves(result)
    assert curves is not None and curves.unit == "value units"
    assert math.isclose(slope(curves.n, curves.ldp_halfwidth), -0.5, abs_tol=1e-9)
    assert scaling_curves({"kind": "rappor", "n": 10, "candidates": []}) is None


def test_every_plot_is_a_figure_with_a_caption_and_renders_to_png():
    plots = report_plots(browser_data(daily=daily_browser(), truth={"chrome": 0.6}), simulate_points=False)
    assert [plot.name for plot in plots] == ["frequencies", "sqrt_n", "daily"]
    for plot in plots:
        assert isinstance(plot.figure, Figure) and plot.caption
        assert png_bytes(plot.figure).startswith(b"\x89PNG")


def test_frequency_caption_states_both_interval_widths():
    result = browser_result()
    caption = frequency_figure(result).caption
    assert f"±{format_number(result['central_dp']['ci_halfwidth'])}" in caption
    widths = [(row["ci_high"] - row["ci_low"]) / 2 for row in result["values"]]
    assert f"±{sum(widths) / len(widths):.4f} locally" in caption


def test_caption_and_header_state_one_ratio():
    "Issue 8 item 14: the header said 61.6 and the caption 57 (a ratio of half-widths): one number, one definition"
    import re

    from estimators.report.table import header_lines

    data = browser_data()
    caption = frequency_figure(data.result).caption
    header = "\n".join(header_lines(data))
    pattern = r"LDP/central ratio ([\d,.]+) \(([^)]*)\)"
    # issue 22: stated once per page, in the header; the figure states the two widths, not a second ratio
    assert len(re.findall(pattern, header)) == 1 and re.findall(pattern, caption) == []
    assert "×" not in caption
    assert "times narrower" not in caption


def test_mean_figure_shows_one_central_baseline():
    "One central mechanism on every page: the block's (Gaussian at the spec's delta here), under replace-one"
    result = load_time_result()
    plot = mean_figure(result, truth=800.0)
    assert result["central_dp"]["mechanism"] in plot.caption and "Laplace" not in plot.caption
    assert "replace-one" in plot.caption
    # the comparison is drawn as half-widths (lower panel), and around the truth, never around the estimate
    estimate_axes, width_axes = plot.figure.axes
    assert len(width_axes.get_yticklabels()) == 2 and "half-width" in width_axes.get_xlabel()
    centres = [line.get_xdata()[0] for line in estimate_axes.lines if len(line.get_xdata()) == 1]
    width = result["central_dp"]["ci_halfwidth"]
    assert result["mean"] in centres and any(math.isclose(c, 800.0 - width) for c in centres)
    assert not any(math.isclose(c, result["mean"] - width) for c in centres)
    assert "δ = 1e-06" in estimate_axes.get_title()


def test_the_half_widths_are_dots_on_the_log_axis_not_bars():
    "issue 31: bars on a log axis made central's 10x look 30x; a dot's position is the only mark, each labelled"
    from matplotlib.collections import PathCollection
    from matplotlib.patches import Rectangle

    result = load_time_result()
    _, width_axes = mean_figure(result, truth=800.0).figure.axes
    assert width_axes.get_xscale() == "log"
    assert not [patch for patch in width_axes.patches if isinstance(patch, Rectangle)]  # no bars
    dots = [artist for artist in width_axes.collections if isinstance(artist, PathCollection)]
    drawn = sorted(float(x) for dot in dots for x, _ in dot.get_offsets())
    expected = sorted([(result["ci_high"] - result["ci_low"]) / 2, result["central_dp"]["ci_halfwidth"]])
    assert drawn == [pytest.approx(value) for value in expected]
    labels = {text.get_text() for text in width_axes.texts}
    assert {format_number(value) for value in expected} <= labels


def test_daily_figure_needs_two_days():
    days = daily_browser()
    assert daily_figure(days[:1]) is None
    assert daily_figure(days) is not None


def test_rendering_never_touches_pyplot():
    code = (
        "import sys\n"
        "from tests.estimators.report_fixtures import browser_data, load_time_result\n"
        "from estimators.report import ReportData, render_html\n"
        "render_html(browser_data(), simulate_points=False); render_html(ReportData(load_time_result()))\n"
        "assert 'matplotlib.pyplot' not in sys.modules, 'pyplot was imported'\n"
    )
    subprocess.run([sys.executable, "-W", "error", "-c", code], check=True, timeout=120)


def test_simulated_points_for_means_follow_the_formula_line(monkeypatch):
    """issue 31: the simulated points sat below the line (75 against 100 at n = 1e4): they put every user at the
    mean (noise at one t, no sampling) where the line is the estimate's standard error.  Now users come from a
    two-point population with the estimate's mean and spread: the points estimate the line's quantity.  Piecewise at
    eps 4 with values spread over the range is where the two differ most (noise at t = 0 a fifth of the total)."""
    import estimators.report.scaling as scaling
    from client_sdk import load_spec
    from estimators import estimate
    from estimators.simulate import simulate

    spec = load_spec({"name": "m", "mechanism": "piecewise", "epsilon": 4.0, "range": [0, 10]})
    rng = np.random.default_rng(31)
    result = estimate(spec, simulate(spec, rng.uniform(0, 10, size=3000), rng)).to_dict()
    monkeypatch.setattr(scaling, "SIMULATED_N", (100, 1000))
    monkeypatch.setattr(scaling, "MAX_TRIALS", 400)
    curves = scaling_curves(result, spec.to_dict(), rng=np.random.default_rng(8))
    assert list(curves.simulated_n) == [100, 1000]
    k = k_sigma(len(curves.simulated_n))
    for n, ldp in zip(curves.simulated_n, curves.simulated_ldp):
        # z * RMS of 400 errors: its square's relative sd is sqrt(2 / 400)
        assert abs((ldp / np.interp(n, curves.n, curves.ldp_halfwidth)) ** 2 - 1) < k * math.sqrt(2 / 400)


def test_simulated_points_carry_their_monte_carlo_interval():
    "A point from a few trials is noisy: the figure draws its interval (chi-square, K squared errors)"
    from scipy import stats

    from estimators.report.scaling import rms_interval

    for squares in (3, 10, 40, 400):
        low, high = rms_interval(1.0, squares, 0.95)
        assert low == pytest.approx(math.sqrt(squares / stats.chi2.ppf(0.975, squares)), rel=0.01)
        assert high == pytest.approx(math.sqrt(squares / stats.chi2.ppf(0.025, squares)), rel=0.01)
    result = load_time_result()
    curves = scaling_curves(result, rng=np.random.default_rng(8))
    assert len(curves.simulated_ldp_low) == len(curves.simulated_n) >= 3
    assert all(curves.simulated_ldp_low < curves.simulated_ldp)
    assert all(curves.simulated_ldp < curves.simulated_ldp_high)
    plot = next(p for p in report_plots(ReportData(result), simulate_points=True) if p.name == "sqrt_n")
    assert "Monte-Carlo interval" in plot.caption
    assert any("Monte-Carlo interval" in text.get_text() for text in plot.figure.axes[0].get_legend().get_texts())


def drawn_texts(monkeypatch, plot):
    "Every non-empty text the PNG of ``plot`` draws, with its extent in pixels (the canvas' own renderer)"
    from matplotlib.text import Text

    drawn = []
    original = Text.draw

    def recording(text, renderer):
        original(text, renderer)
        if text.get_visible() and text.get_text().strip():
            drawn.append((text.get_text(), text.get_window_extent(renderer)))

    monkeypatch.setattr(Text, "draw", recording)
    assert plot.png.startswith(b"\x89PNG")
    monkeypatch.setattr(Text, "draw", original)
    return drawn


def every_plot_kind():
    "A figure of each kind, with rotated tick labels (8 values, 9 days), a long campaign name, an outside legend"
    from dataclasses import replace

    from estimators.report import DailyResult, ReportData

    from .report_fixtures import APPS, distributed_result, distributed_spec, distributed_sum_result

    long_name = "a_campaign_with_a_very_long_name_that_is_wider_than_the_figure_itself_" * 2
    browsers = browser_data(daily=daily_browser())
    many_days = [DailyResult(f"2025-03-{day:02d}", browser_result(n=800, seed=20 + day)) for day in range(1, 10)]
    plots = {
        "browser": report_plots(browsers, simulate_points=False),
        "long name": report_plots(replace(browsers, result={**browsers.result, "campaign": long_name},
                                          daily=many_days), simulate_points=False),
        "mean": report_plots(ReportData(load_time_result(), truth=800.0), simulate_points=False),
        "distributed": report_plots(ReportData(distributed_result(), distributed_spec())),
        "distributed mean": report_plots(ReportData(distributed_sum_result(), None)),
    }
    assert len(APPS) > 6  # the distributed frequencies have tilted tick labels
    return [(f"{case} {plot.name}", plot) for case, found in plots.items() for plot in found]


def test_no_text_of_any_figure_is_clipped(monkeypatch):
    """Issue 14 item 5: the figures are laid out once from measured text (no layout engine); every text drawn
    (tick labels, rotated ones too, axis labels, titles, long campaign names, legends, annotations) lies inside
    the figure"""
    kinds = every_plot_kind()
    assert {plot.name for _, plot in kinds} == {"frequencies", "sqrt_n", "mean", "daily"}
    for case, plot in kinds:
        bounds = plot.figure.bbox
        texts = drawn_texts(monkeypatch, plot)
        assert len(texts) >= 5, case
        for text, extent in texts:
            inside = (extent.x0 >= bounds.x0 - 0.5 and extent.x1 <= bounds.x1 + 0.5
                      and extent.y0 >= bounds.y0 - 0.5 and extent.y1 <= bounds.y1 + 0.5)
            assert inside, f"{case}: {text!r} at {extent.bounds} outside {bounds.bounds}"


def test_a_title_wider_than_the_figure_is_wrapped_and_kept_whole(monkeypatch):
    from dataclasses import replace

    name = "a_campaign_with_a_very_long_name " * 4
    data = browser_data()
    plot = report_plots(replace(data, result={**data.result, "campaign": name}), simulate_points=False)[0]
    drawn_texts(monkeypatch, plot)
    title = plot.figure.axes[0].get_title()
    assert "\n" in title and title.split() == f"{name}: oue, ε = 1, n = 4,000".split()


def test_log_axes_are_labelled_in_plain_text_at_each_power_of_ten(monkeypatch):
    "The √n figure's log axes: labels 10², 10⁻³ (no mathtext to parse), at least two per axis"
    from estimators.report.plots import power_of_ten

    assert [power_of_ten(v) for v in (1.0, 10.0, 1e3, 1e-6, 2e3, 0.0)] == ["10⁰", "10¹", "10³", "10⁻⁶", "", ""]
    plot = next(p for p in report_plots(browser_data(), simulate_points=False) if p.name == "sqrt_n")
    texts = [text for text, _ in drawn_texts(monkeypatch, plot)]
    assert sum(text.startswith("10") and "$" not in text for text in texts) >= 4
    assert not any("$" in text for text in texts)


def test_the_mean_figures_axes_carry_the_specs_unit():
    "issue 22 §4: 'mean (ms, 95% CI)' on the estimate's axis, the unit on the half-widths' axis and caption"
    plot = mean_figure(load_time_result(unit="ms"))
    estimate_axes, width_axes = plot.figure.axes
    assert estimate_axes.get_xlabel() == "mean (ms, 95% CI)"
    assert width_axes.get_xlabel().endswith("(ms)") and " ms ± " in plot.caption
    plain_axes, plain_widths = mean_figure(load_time_result()).figure.axes
    assert plain_axes.get_xlabel() == "mean (95% CI)" and "(" not in plain_widths.get_xlabel()
