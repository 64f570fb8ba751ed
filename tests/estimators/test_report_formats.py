"""Markdown, HTML and JSON reports: structure, self-containment, schema_version, tolerant rendering."""

import base64
import json
import re

from estimators.report import (
    SCHEMA_VERSION,
    ReportData,
    json_report,
    render_html,
    render_json,
    render_markdown,
)
from estimators.report.model import format_number

from .report_fixtures import browser_data, daily_browser, load_time_result, rappor_result

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def test_markdown_has_table_and_links_every_image_it_returns():
    report = render_markdown(browser_data(daily=daily_browser()), image_prefix="browser", simulate_points=False)
    assert "| value | estimate | std error | CI low | CI high | Norm-Sub |" in report.text
    assert set(report.images) == {"browser-frequencies.png", "browser-sqrt_n.png", "browser-daily.png"}
    for name, png in report.images.items():
        assert f"]({name})" in report.text
        assert png.startswith(PNG_SIGNATURE)


def test_markdown_without_prefix_has_no_images():
    report = render_markdown(browser_data(), image_prefix=None)
    assert report.images == {} and "![" not in report.text


def test_markdown_escapes_table_breaking_characters():
    data = browser_data()
    data.result["values"][0]["value"] = "a|b"
    assert "a\\|b" in render_markdown(data, image_prefix=None).text


def test_html_is_self_contained_with_embedded_pngs():
    html = render_html(browser_data(daily=daily_browser()), simulate_points=False)
    assert html.startswith("<!DOCTYPE html>")
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html), "no external resources"
    assert "<link" not in html and "<script" not in html
    images = re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', html)
    assert len(images) == 3  # frequencies, sqrt(n), daily
    assert all(base64.b64decode(image).startswith(PNG_SIGNATURE) for image in images)


def test_html_captions_state_local_and_central_numbers():
    data = browser_data()
    html = render_html(data, simulate_points=False)
    central = data.result["central_dp"]["ci_halfwidth"]
    assert f"±{format_number(central)}" in html
    assert "around the truth" not in html  # no truth given: central DP is stated as a width, not drawn


def test_html_escapes_values():
    data = browser_data()
    data.result["values"][0]["value"] = "<script>alert(1)</script>"
    html = render_html(data, simulate_points=False)
    assert "<script>alert" not in html and "&lt;script&gt;" in html


def test_numeric_html_has_mean_plot_and_sqrt_n_plot():
    html = render_html(ReportData(load_time_result()))
    assert 'id="mean"' in html and 'id="sqrt_n"' in html
    assert "Gaussian" in html  # the spec has delta: the Gaussian baseline is shown too


def test_json_report_is_the_estimate_plus_window_spec_and_schema_version():
    data = browser_data(daily=daily_browser())
    report = json.loads(render_json(data))
    assert report["schema_version"] == SCHEMA_VERSION
    assert report["window"] == {"since": "2025-03-01", "until": "2025-03-03"}
    assert report["spec"]["fingerprint"] == data.result["fingerprint"]
    for key, value in data.result.items():
        if key != "values":
            assert report[key] == json.loads(json.dumps(value))
    assert [row["value"] for row in report["values"]] == [row["value"] for row in data.result["values"]]
    assert [day["day"] for day in report["daily"]] == ["2025-03-01", "2025-03-02", "2025-03-03"]


def test_json_flags_values_distinguishable_from_zero():
    report = json_report(browser_data())
    flags = {row["value"]: row["distinguishable_from_zero"] for row in report["values"]}
    assert flags["chrome"] is True and flags["other"] is False


def test_json_turns_non_finite_numbers_into_null():
    result = load_time_result()
    result["central_dp"]["ldp_to_central_ratio"] = float("inf")
    text = render_json(ReportData(result))
    assert json.loads(text)["central_dp"]["ldp_to_central_ratio"] is None


def test_rappor_like_result_renders_in_every_format():
    data = ReportData(rappor_result())
    assert "5.2.0" in render_markdown(data, image_prefix="app").text
    html = render_html(data)
    assert "5.2.0" in html and 'id="frequencies"' in html
    assert json.loads(render_json(data))["allocated_mass"] == 0.43


def count_figure_draws(monkeypatch) -> list:
    "Patch matplotlib's Figure.draw to record each figure it draws (one entry per draw)"
    from matplotlib.figure import Figure

    drawn: list = []
    original = Figure.draw

    def counting(figure, renderer):
        drawn.append(figure)
        return original(figure, renderer)

    monkeypatch.setattr(Figure, "draw", counting)
    return drawn


def test_html_and_markdown_of_one_report_draw_each_figure_once(monkeypatch):
    "Issue 14 item 5: savefig drew each figure twice per format (a layout pass, then the PNG): four draws"
    from estimators.report import report_plots

    data = browser_data(daily=daily_browser())
    drawn = count_figure_draws(monkeypatch)
    plots = report_plots(data, simulate_points=False)
    html = render_html(data, plots=plots)
    markdown = render_markdown(data, image_prefix="browser", plots=plots)
    assert len(plots) == 3 and sorted(map(id, drawn)) == sorted(id(plot.figure) for plot in plots)
    for plot in plots:  # the same bytes in both reports
        assert base64.b64encode(plot.png).decode() in html
        assert markdown.images[f"browser-{plot.name}.png"] == plot.png


def test_each_format_alone_draws_each_figure_once(monkeypatch):
    "What ``ldp-telemetry report --format html|markdown`` does: one draw per figure"
    drawn = count_figure_draws(monkeypatch)
    html = render_html(browser_data(), simulate_points=False)
    assert len(drawn) == html.count("data:image/png;base64,") == 2
    drawn.clear()
    images = render_markdown(browser_data(), simulate_points=False).images
    assert len(drawn) == len(images) == 2


def test_an_index_page_links_each_reports_files_and_escapes_its_text():
    from estimators.report import IndexEntry, render_index

    page = render_index("reports <all>", [
        IndexEntry("a&b", ["a&b.html", "a&b.md", "a&b.json", "a&b-figure.png"], "n 10 <small>"),
        IndexEntry("plain", ["plain.json"], "no HTML file"),
    ], notes=["ratio: x < y"])
    assert "<title>reports &lt;all&gt;</title>" in page
    assert ('<li><strong><a href="a&amp;b.html">a&amp;b</a></strong> (<a href="a&amp;b.md">Markdown</a>, '
            '<a href="a&amp;b.json">JSON</a>): n 10 &lt;small&gt;</li>') in page
    assert '<li><strong>plain</strong> (<a href="plain.json">JSON</a>): no HTML file</li>' in page
    assert ".png" not in page and '<p class="note">ratio: x &lt; y</p>' in page


def test_a_numeric_campaigns_unit_heads_the_table_in_markdown_html_and_terminal():
    "issue 22 §4: numeric axes and headers carry the spec's unit; without one they stay as they were"
    from estimators.report import render_table

    with_unit, without = ReportData(load_time_result(unit="ms")), ReportData(load_time_result())
    assert with_unit.result["unit"] == "ms" and "unit" not in without.result
    markdown = render_markdown(with_unit, image_prefix=None).text
    assert "| mean (ms) | std error (ms) | CI low (ms) | CI high (ms) | central DP CI +- (ms) |" in markdown
    assert "<th>mean (ms)</th>" in render_html(with_unit, simulate_points=False)
    assert "mean (ms)" in render_table(with_unit)
    plain = render_markdown(without, image_prefix=None).text
    assert "| mean | std error | CI low | CI high | central DP CI +- |" in plain and "(ms)" not in plain
