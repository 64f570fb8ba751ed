"""A distributed campaign's report: the three trust models in every format, the guarantees, the three-line figure."""

import math
import re

import numpy as np
import pytest

from estimators.report import ReportData, render_html, render_markdown, render_table
from estimators.report.plots import report_plots
from estimators.report.scaling import trust_model_curves

from .report_fixtures import APPS, distributed_result, distributed_spec, distributed_sum_result


def slope(x, y):
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])


@pytest.mark.parametrize("mode", ["gaussian", "laplace", "coins"])
def test_the_three_lines_local_above_distributed_near_central(mode):
    result = distributed_result(mode)
    curves = trust_model_curves(result)
    assert curves is not None and curves.noise_mode == mode
    assert math.isclose(slope(curves.n, curves.local), -0.5, abs_tol=1e-9)
    assert math.isclose(slope(curves.n, curves.distributed), -1.0, abs_tol=1e-9)
    assert math.isclose(slope(curves.n, curves.central), -1.0, abs_tol=1e-9)
    # at this campaign's n the lines pass through the estimate's own three standard errors
    at = int(np.argmin(np.abs(np.log(curves.n / result["n"]))))
    scale = result["n"] / curves.n[at]
    models = result["trust_models"]
    # the quantity the local pages plot: 95% half-widths (the distributed one the exact noise quantile)
    assert curves.distributed[at] == pytest.approx(models["distributed"]["ci_halfwidth"] * scale)
    assert curves.local[at] == pytest.approx(models["local"]["ci_halfwidth"] * math.sqrt(scale))
    assert models["local"]["ci_halfwidth"] == pytest.approx(1.959963984540054 * models["local"]["std_error"])
    # distributed sits within a factor 3 of central: two aggregators' noises (sqrt 2), each calibrated alone for a
    # replaced report's two buckets (up to 2 over a curator's Laplace at one bucket); local above
    assert models["distributed"]["epsilon"] == pytest.approx(models["central"]["epsilon"])
    assert np.all(curves.central <= curves.distributed) and np.all(curves.distributed <= 3 * curves.central)
    big = curves.n >= 10_000
    assert np.all(curves.local[big] > 10 * curves.distributed[big])


def test_every_format_shows_the_trust_models_and_the_guarantees():
    data = ReportData(distributed_result("coins", days=("2026-11-29", "2026-11-30")), distributed_spec("coins"))
    table = render_table(data)
    assert "distributed (Prio3 histogram, coins noise)" in table and "batches: 2026-11-29, 2026-11-30" in table
    assert "rejected reports: invalid-measurement 4" in table
    assert re.search(r"standard error of one value's fraction: local [0-9.]+ \(\w+\), shuffled [0-9.]+ \(\w+, "
                     r"epsilon0 [0-9.]+, one batch of n at delta 1e-06\), distributed [0-9.]+ \(coins\), "
                     r"central [0-9.]+", table)
    from estimators.distributed import ASSUMPTION

    # the report states the noise mode's assumption in the estimate's own words, and the relation
    assert ASSUMPTION in table and "do not collude with each other" in table and "replace-one (n public)" in table
    assert "LDP/central ratio" not in table  # the trust-models line replaces it
    for value in APPS:
        assert value in table
    markdown = render_markdown(data, image_prefix="apps")
    assert "apps-sqrt_n.png" in markdown.images and "Local, distributed and central DP" in markdown.text
    html = render_html(data, plots=report_plots(data))
    assert 'id="sqrt_n"' in html and "distributed DP (two aggregators" in html
    assert html.count("guarantee: ") == table.count("guarantee: ") >= 3  # input privacy, (eps, delta), integrity


def test_the_frequency_figure_labels_the_distributed_interval():
    plots = report_plots(ReportData(distributed_result(), distributed_spec()))
    assert [plot.name for plot in plots] == ["frequencies", "sqrt_n"]
    labels = plots[0].figure.axes[0].get_legend_handles_labels()[1]
    assert any(label.startswith("distributed DP") for label in labels)
    assert "exact quantile of the release's noise" in plots[0].caption


def test_a_distributed_mean_shows_local_distributed_and_central_intervals():
    result = distributed_sum_result()
    plots = report_plots(ReportData(result, None))
    assert [plot.name for plot in plots] == ["mean", "sqrt_n"]
    ticks = [tick.get_text() for tick in plots[0].figure.axes[1].get_yticklabels()]  # the half-widths panel
    assert any(t.startswith("distributed DP") for t in ticks) and any(t.startswith("local DP") for t in ticks)
    assert "local DP's best mechanism would give" in plots[0].caption
    assert "standard error of the mean: local" in render_table(ReportData(result, None))


def test_the_shuffled_line_lies_between_local_and_central_and_meets_the_stated_row():
    "Shuffled DP: below local everywhere, above central, steeper than 1/sqrt(n) (epsilon0 grows with n)"
    result = distributed_result("gaussian")
    curves = trust_model_curves(result)
    assert curves is not None and curves.shuffled is not None
    big = curves.n >= 1_000  # below, the Gaussian's delta costs central DP more than a pure local report costs
    assert np.all(curves.shuffled <= curves.local * (1 + 1e-9))
    assert np.all(curves.shuffled[big] > curves.central[big])
    assert slope(curves.n[big], curves.shuffled[big]) < -0.5
    stated = result["trust_models"]["shuffled"]["ci_halfwidth"]
    now = float(np.exp(np.interp(np.log(result["n"]), np.log(curves.n), np.log(curves.shuffled))))
    assert now == pytest.approx(stated, rel=0.05)  # the line is interpolated between 7 computed points
