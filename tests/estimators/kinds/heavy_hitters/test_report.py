"""The heavy_hitters report's own figure: the discovered strings' bars with their intervals and the detection
threshold line, from a simulated campaign's estimate (its JSON, as every report reads it)."""

import numpy as np

from client_sdk.kinds.heavy_hitters import encode_value, params_from_dict
from estimators.kinds.heavy_hitters import estimate_heavy_hitters, simulate_aggregate
from estimators.kinds.heavy_hitters.kind import HeavyHittersWindow
from estimators.report import ReportData
from estimators.report.model import format_number
from estimators.report.plots import png_bytes, report_plots

SPEC = {"max_length": 4, "alphabet": "abcdefghijklmnopqrstuvwxyz.", "algorithm": "pem", "segment_length": 2}
PLANTED = {"abcd": 0.3, "zz.y": 0.2, "moon": 0.1}


def report_data() -> ReportData:
    params, devices, rng = params_from_dict(SPEC, 3.0), 8000, np.random.default_rng(3)
    background = sorted({"".join(rng.choice(list("efghijkl"), 4)) for _ in range(400)})
    counts = [round(share * devices) for share in PLANTED.values()]
    rest = devices - sum(counts)
    counts += [rest // len(background) + (i < rest % len(background)) for i in range(len(background))]
    symbols = [encode_value(params, word) for word in list(PLANTED) + background]
    estimate = estimate_heavy_hitters(params, simulate_aggregate(params, symbols, np.array(counts), rng))
    return ReportData(result=HeavyHittersWindow("words", 3.0, estimate).to_json(), truth=dict(PLANTED))


def test_the_main_figure_draws_each_found_string_with_its_interval_and_the_threshold_line():
    data = report_data()
    hh = data.result["heavy_hitters"]
    found = [row["value"] for row in data.result["values"]]
    assert set(PLANTED) <= set(found)
    plots = report_plots(data, simulate_points=False)
    figure = next(plot for plot in plots if plot.name == "heavy_hitters")
    axes = figure.figure.axes[0]
    bars = axes.patches
    assert len(bars) == len(found)
    heights = sorted((bar.get_height() for bar in bars), reverse=True)
    assert np.allclose(heights, sorted((row["estimate"] for row in data.result["values"]), reverse=True))
    threshold = [line for line in axes.get_lines() if line.get_linestyle() == "--"]
    assert len(threshold) == 1 and np.allclose(threshold[0].get_ydata(), hh["detection_threshold"])
    assert format_number(hh["detection_threshold"]) in figure.caption
    assert [label.get_text() for label in axes.get_xticklabels()][:len(found)] == [
        row["value"] for row in sorted(data.result["values"], key=lambda row: -row["estimate"])]
    assert png_bytes(figure.figure).startswith(b"\x89PNG")


def test_no_figure_when_nothing_was_found():
    data = report_data()
    empty = ReportData(result={**data.result, "values": []})
    assert all(plot.name != "heavy_hitters" for plot in report_plots(empty, simulate_points=False))
