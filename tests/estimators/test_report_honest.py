"""What a person sees (issue 22 §4): central DP as a width, one ratio per page, one quantity on the trust-model
chart, delta in titles, the table in the chart's order, and the chance of a false "present" stated."""

import re

import numpy as np
import pytest
from matplotlib.colors import to_rgba
from matplotlib.container import ErrorbarContainer

from estimators.report import ReportData, render_html, render_markdown, render_table
from estimators.report.plots import CENTRAL_COLOUR, frequency_figure, trust_models_figure
from estimators.report.scaling import trust_model_curves
from estimators.report.table import footnotes, value_table

from .report_fixtures import BROWSER_SHARE, BROWSERS, browser_data, distributed_result


def central_marks(figure):
    "The lines drawn in central DP's colour"
    colour = to_rgba(CENTRAL_COLOUR)
    return [line for line in figure.axes[0].lines if to_rgba(line.get_color()) == colour]


def test_central_dp_is_never_drawn_around_the_estimate():
    data = browser_data()
    plot = frequency_figure(data.result)
    assert central_marks(plot.figure) == []  # no truth: the caption states the width
    truth = dict(zip(BROWSERS, BROWSER_SHARE))
    with_truth = frequency_figure(data.result, truth=truth)
    rows = sorted(data.result["values"], key=lambda row: -row["estimate"])
    red = to_rgba(CENTRAL_COLOUR)
    bars = [c for c in with_truth.figure.axes[0].containers if isinstance(c, ErrorbarContainer)
            and c.lines[0] is not None and to_rgba(c.lines[0].get_color()) == red]
    assert len(bars) == 1
    centres = bars[0].lines[0].get_ydata()
    assert np.allclose(centres, [truth[row["value"]] for row in rows[:len(centres)]])
    assert "around the truth" in with_truth.caption


@pytest.mark.parametrize("render", [render_table, lambda data: render_markdown(data, simulate_points=False).text])
def test_one_ratio_once_per_page(render):
    text = render(browser_data())
    assert len(re.findall(r"LDP/central ratio", text)) == 1
    assert "replace-one" in text


def test_one_ratio_once_in_the_html_page():
    html = render_html(browser_data(), simulate_points=False)
    assert len(re.findall(r"LDP/central ratio", html)) == 1
    assert not re.search(r"\(\d[\d,.]*×\)", html)  # no second ratio in a caption


def test_the_table_lists_values_in_the_charts_order():
    data = browser_data()
    _, cells = value_table(data)
    chart = [tick.get_text() for tick in frequency_figure(data.result).figure.axes[0].get_xticklabels()]
    assert [row[0][:len(label.rstrip("…"))] for row, label in zip(cells, chart)] == [
        label.rstrip("…") for label in chart]


def test_the_report_says_how_many_false_present_values_to_expect():
    data = browser_data()
    d = len(data.result["values"])
    notes = " ".join(footnotes(data))
    assert f"about {0.05 * d:.3g} intervals would exclude 0 by chance" in notes


def test_the_trust_model_chart_plots_half_widths_with_delta_in_its_title():
    result = distributed_result("gaussian")
    curves = trust_model_curves(result)
    assert curves is not None
    plot = trust_models_figure(curves)
    axes = plot.figure.axes[0]
    assert "half-width" in axes.get_ylabel() and "δ = 1e-06" in axes.get_title()
    models = result["trust_models"]
    assert curves.current["local"] == pytest.approx(models["local"]["ci_halfwidth"])
    assert models["relation"] == "replace-one"
    assert "replace-one" in plot.caption


def test_every_format_states_the_target():
    data = browser_data()
    for text in (render_table(data), render_markdown(data, simulate_points=False).text):
        assert "standard errors and intervals are for the population" in text
    distributed = ReportData(distributed_result("gaussian"), None)
    assert "standard errors and intervals are for the users who reported" in render_table(distributed)
