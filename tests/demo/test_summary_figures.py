"""The demo's terminal summary prints what the reports say (issue 31 section 6): one figure, one rounding."""

from pathlib import Path

from demo.summary import DemoResult, format_summary, summarize
from estimators.report import ReportData
from estimators.report.kinds.distributed import trust_model_halfwidths
from estimators.report.model import as_estimate, format_number
from estimators.report.plots import trust_models_figure
from estimators.report.scaling import trust_model_curves
from tests.estimators.report_fixtures import APP_COUNTS, APPS, browser_data, distributed_result


def demo_result(*summaries) -> DemoResult:
    return DemoResult(users=2000, mode="sdk", url="http://127.0.0.1:1", out_dir=Path("out"), seconds=1.0,
                      campaigns=list(summaries))


def test_the_three_error_bars_are_the_report_s_figures():
    "The report's ±0.0085 (the models' stated half-widths) was ±0.0083 in the terminal (z times the SE)"
    result = distributed_result()
    truth = {app: count / sum(APP_COUNTS) for app, count in zip(APPS, APP_COUNTS)}
    summary = summarize(ReportData(result), truth, [])
    widths = trust_model_halfwidths(as_estimate(result))
    assert widths is not None and summary.error_bars == widths
    caption = trust_models_figure(trust_model_curves(result)).caption  # type: ignore[arg-type]
    text = format_summary(demo_result(summary))
    assert f"{format_number(widths['shuffled'])} at this n" in caption
    for model in ("local", "distributed", "central"):
        assert f"{model} {format_number(widths[model])}" in caption
        assert f"±{format_number(widths[model])}" in text


def test_a_summary_of_some_values_says_how_many_of_how_many():
    data = browser_data()
    truth = {row["value"]: 1 / len(data.result["values"]) for row in data.result["values"]}
    summary = summarize(data, truth, [])
    shown = format_summary(demo_result(summary), top=4)
    assert f"top 4 of {len(truth)} values (by true share)" in shown
    assert "top " not in format_summary(demo_result(summary), top=len(truth))
