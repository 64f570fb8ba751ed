"""The demo end to end: a real collector on loopback, users reporting through the SDK, reports on disk."""

from __future__ import annotations

import base64
import json
import math
import subprocess
import sys
import threading
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path

import jsonschema
import numpy as np
import pytest
from click.testing import CliRunner

from demo.reports import finish_reports, render_report, render_reports, report_workers, worker_start_method
from demo.run import run_demo
from demo.scenario import CAMPAIGNS, DISTRIBUTED_CAMPAIGNS
from demo.summary import RATIO_EXPLANATION, CampaignSummary, format_summary, summary_line
from estimators.report import ReportData, report_schema
from estimators.report.model import value_rows
from ldp_telemetry.cli import main
from tests.estimators.report_fixtures import BROWSERS, browser_data, daily_browser, load_time_result

USERS = 300
CI_MULTIPLE = 3  # truth within 3 CI half-widths (about 6 standard errors) of every estimate


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo") / "out"
    return run_demo(USERS, out, seed=20250301)


def test_every_campaign_gets_html_markdown_json_and_pngs(demo_run):
    out = demo_run.out_dir
    for campaign in CAMPAIGNS:
        html = (out / f"{campaign.name}.html").read_text()
        assert html.count("data:image/png;base64,") >= 1
        markdown = (out / f"{campaign.name}.md").read_text()
        for line in markdown.splitlines():
            if line.startswith("!["):
                assert (out / line[line.index("(") + 1:-1]).read_bytes().startswith(b"\x89PNG")
        report = json.loads((out / f"{campaign.name}.json").read_text())
        assert report["schema_version"] == 3 and "truth" in report
        jsonschema.validate(report, report_schema())  # every kind the demo has, RAPPOR included
    summary = json.loads((out / "summary.json").read_text())
    assert [entry["name"] for entry in summary] == [c.name for c in (*CAMPAIGNS, *DISTRIBUTED_CAMPAIGNS)]


def test_the_distributed_campaign_is_served_by_a_leader_and_a_helper(demo_run):
    "Its release is within its interval of the truth, and the summary prints the three error bars side by side"
    for campaign in DISTRIBUTED_CAMPAIGNS:
        report = json.loads((demo_run.out_dir / f"{campaign.name}.json").read_text())
        jsonschema.validate(report, report_schema())
        assert report["trust"] == "distributed" and report["n"] == USERS
        rows = {row.value: row for row in value_rows(report)}
        for value, share in report["truth"].items():
            halfwidth = (rows[value].ci_high - rows[value].ci_low) / 2
            assert abs(rows[value].estimate - share) <= CI_MULTIPLE * halfwidth, value
        html = (demo_run.out_dir / f"{campaign.name}.html").read_text()
        assert "Local, distributed and central DP against n" in html
        summary = next(c for c in demo_run.campaigns if c.name == campaign.name)
        bars = summary.error_bars
        assert bars is not None and bars["central"] < bars["distributed"] < bars["local"]
    text = format_summary(demo_run)
    for model in ("local", "distributed", "central"):
        assert f"    {model}" in text


def test_every_truth_is_within_a_generous_multiple_of_its_interval(demo_run):
    for campaign in CAMPAIGNS:
        report = json.loads((demo_run.out_dir / f"{campaign.name}.json").read_text())
        assert report.get("n", report.get("reports")) == USERS, campaign.name
        truth = report["truth"]
        if campaign.is_numeric:
            halfwidth = (report["ci_high"] - report["ci_low"]) / 2
            assert abs(report["mean"] - truth) <= CI_MULTIPLE * halfwidth, campaign.name
            continue
        rows = {row.value: row for row in value_rows(report)}
        for value, share in truth.items():
            row = rows.get(value)
            if row is None:  # a RAPPOR candidate the decoder did not detect: it must be rare
                assert share <= CI_MULTIPLE * report["detection_frequency"], (campaign.name, value)
                continue
            halfwidth = (row.ci_high - row.ci_low) / 2
            assert abs(row.estimate - share) <= CI_MULTIPLE * halfwidth, (campaign.name, value)


def test_summary_states_estimate_truth_interval_and_ratio(demo_run):
    text = format_summary(demo_run)
    assert f"{USERS:,} simulated users reported through the SDK over HTTP" in text
    for campaign in CAMPAIGNS:
        assert campaign.name in text
    assert "truth" in text and "95% CI" in text and "LDP/central ratio" in text
    assert str(demo_run.out_dir.resolve()) in text
    assert all(c.ldp_to_central_ratio is None or c.ldp_to_central_ratio > 1 for c in demo_run.campaigns)


class Links(HTMLParser):
    "The index page's list items (their text) and links"

    def __init__(self) -> None:
        super().__init__()
        self.items: list[str] = []
        self.hrefs: list[str] = []
        self.notes: list[str] = []
        self._in: str | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "li":
            self.items.append("")
            self._in = "li"
        elif tag == "p":
            self.notes.append("")
            self._in = "p"
        elif tag == "a":
            self.hrefs.append(dict(attrs)["href"])

    def handle_endtag(self, tag):
        if tag in ("li", "p"):
            self._in = None

    def handle_data(self, data):
        if self._in == "li":
            self.items[-1] += data
        elif self._in == "p":
            self.notes[-1] += data


def test_the_output_folder_has_an_index_linking_every_report_with_its_summary(demo_run):
    page = Links()
    page.feed((demo_run.out_dir / "index.html").read_text())
    names = [c.name for c in (*CAMPAIGNS, *DISTRIBUTED_CAMPAIGNS)]
    assert len(page.items) == len(names)
    for name, item, summary in zip(names, page.items, demo_run.campaigns):
        assert item.startswith(f"{name} (Markdown, JSON): ") and item.endswith(summary_line(summary))
        assert "estimate" in item and "truth" in item and "\n" not in item  # one line
        for suffix in (".html", ".md", ".json"):
            assert f"{name}{suffix}" in page.hrefs
    assert all((demo_run.out_dir / href).is_file() for href in page.hrefs)
    assert RATIO_EXPLANATION in page.notes


def test_a_numeric_campaigns_unit_is_in_the_terminal_summary_and_the_index(demo_run):
    "page_load_ms has unit 'ms' in its spec: its mean says so wherever the demo states it"
    summary = next(c for c in demo_run.campaigns if c.name == "page_load_ms")
    assert summary.unit == "ms" and summary.values[0].value == "mean"  # summary.json keeps the value's name
    assert "mean (ms): estimate " in summary_line(summary)
    assert any(line.startswith("  mean (ms)") for line in format_summary(demo_run).splitlines())
    page = Links()
    page.feed((demo_run.out_dir / "index.html").read_text())
    item = next(item for item in page.items if item.startswith("page_load_ms "))
    assert "mean (ms): estimate " in item
    unitless = [c for c in demo_run.campaigns if c.unit is None]
    assert unitless and not any("(ms)" in summary_line(c) for c in unitless)


def test_the_summary_explains_its_ratio_in_one_line(demo_run):
    lines = format_summary(demo_run).splitlines()
    assert lines[1] == RATIO_EXPLANATION and lines.count(RATIO_EXPLANATION) == 1
    assert RATIO_EXPLANATION.startswith("LDP/central ratio: ") and "sqrt(n)" in RATIO_EXPLANATION
    assert sum("LDP/central ratio " in line for line in lines) >= 1  # the ratios it explains
    assert "index.html" in lines[-1]


def test_bulk_path_through_the_simulator_and_batch_api(tmp_path):
    result = run_demo(3000, tmp_path, bulk=True, seed=7, campaigns=[c for c in CAMPAIGNS if c.name != "app_version"])
    opt_in = next(c for c in result.campaigns if c.name == "analytics_opt_in")
    yes = next(v for v in opt_in.values if v.value == "yes")
    assert opt_in.n == 3000
    assert abs(yes.estimate - yes.truth) <= CI_MULTIPLE * (yes.ci_high - yes.ci_low) / 2
    assert math.isclose(sum(v.truth for v in opt_in.values), 1.0)


class InlinePool(Executor):
    "An executor that runs each task when it is submitted (render_reports' sharing, without a process)"

    def __init__(self):
        self.ran = []

    def submit(self, fn, /, *args, **kwargs):
        self.ran.append(args[0].campaign)
        future = Future()
        future.set_result(fn(*args, **kwargs))
        return future


def report_items():
    "Report data as fetch_reports returns it: two campaigns, one without data (its summary), one more"
    data = browser_data(truth={value: 0.2 for value in BROWSERS}, daily=daily_browser())
    mean = ReportData(load_time_result(), truth=800.0)
    missing = CampaignSummary("missing", "grr", None, None, None, note="no reports")
    return [data, missing, replace(mean, result={**mean.result, "campaign": "load_ms"})]


def test_each_campaign_report_draws_each_figure_once(tmp_path, monkeypatch):
    "Issue 14 item 5: the HTML and the Markdown of a campaign share one drawing of each figure (it was four)"
    from tests.estimators.test_report_formats import count_figure_draws

    data = report_items()[0]
    drawn = count_figure_draws(monkeypatch)
    summary = render_report(data, tmp_path)
    pngs = sorted(path.name for path in tmp_path.glob("*.png"))
    assert pngs == ["browser-daily.png", "browser-frequencies.png", "browser-sqrt_n.png"]
    assert len(drawn) == len(set(map(id, drawn))) == len(pngs)
    assert summary.files == sorted([*pngs, "browser.html", "browser.json", "browser.md"])
    html = (tmp_path / "browser.html").read_text()
    for name in pngs:
        assert base64.b64encode((tmp_path / name).read_bytes()).decode() in html


def test_reports_are_shared_between_the_pool_and_this_process_in_order(tmp_path):
    items = report_items()
    pool = InlinePool()
    summaries = render_reports(items, tmp_path, pool)
    assert [summary.name for summary in summaries] == ["browser", "missing", "load_ms"]
    assert pool.ran == ["browser"]  # the pool takes from the front, this process from the back
    assert summaries[1] is items[1]
    assert {path.name for path in tmp_path.glob("*.html")} == {"browser.html", "load_ms.html"}
    assert render_reports(items, tmp_path / "alone") == summaries


def test_reports_the_pool_has_not_started_are_drawn_here(tmp_path):
    "run_demo hands the local reports to its worker; at the end it draws what the worker has not started"
    items = report_items()
    gate = threading.Event()
    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(gate.wait)  # the pool is busy: every report stays queued
        drawing = [None if isinstance(item, CampaignSummary) else pool.submit(render_report, item, tmp_path / "a")
                   for item in items]
        summaries = finish_reports(items, drawing, tmp_path / "a")
        gate.set()
    assert all(future is None or future.cancelled() for future in drawing)
    assert summaries == render_reports(items, tmp_path / "b")
    done = [None if isinstance(item, CampaignSummary) else InlinePool().submit(render_report, item, tmp_path / "c")
            for item in items]
    assert finish_reports(items, done, tmp_path / "c") == summaries


def test_report_worker_is_forked_from_a_quiet_process_and_spawned_beside_threads(tmp_path):
    "A fork of a process whose threads may hold locks can deadlock: the worker is spawned then, and still draws"
    quiet = subprocess.run([sys.executable, "-c", "from demo.reports import worker_start_method as m; print(m())"],
                           capture_output=True, text=True, check=True, cwd=Path(__file__).resolve().parents[2])
    assert quiet.stdout.strip() == ("fork" if sys.version_info < (3, 12) and sys.platform == "linux" else "spawn")
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        assert worker_start_method() == "spawn"
        with report_workers() as workers:
            summary = workers.submit(render_report, report_items()[0], tmp_path).result(timeout=300)
    finally:
        stop.set()
        thread.join()
    assert summary.files == sorted(path.name for path in tmp_path.iterdir()) and len(summary.files) == 6


def test_demo_help_documents_its_options():
    result = CliRunner().invoke(main, ["demo", "--help"])
    for option in ("--users", "--out", "--bulk", "--seed"):
        assert option in result.stdout


def test_libraries_do_not_import_the_cli():
    "Issue 9 item 3: the demo, the estimators and the collector call library code, never ldp_telemetry's CLI"
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    offenders = []
    for package in ("demo", "estimators", "collector", "client_sdk"):
        for path in (root / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                names = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                         else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
                offenders += [f"{path.relative_to(root)}: {name}" for name in names
                              if name.split(".")[0] == "ldp_telemetry"]
    assert offenders == []


def test_each_fetched_report_is_handed_over_before_the_next_is_fetched(monkeypatch):
    "run_demo's worker starts drawing the first local report while this process fetches the others"
    import collector.reporting
    from demo.reports import fetch_reports
    from estimators.errors import SourceError

    events = []

    def fetch(url, key, name):
        events.append(("fetch", name))
        if name == CAMPAIGNS[1].name:
            raise SourceError("no reports yet")
        return browser_data()

    monkeypatch.setattr(collector.reporting, "report_data_from_url", fetch)
    population = {campaign.name: campaign.draw(np.random.default_rng(1), 30) for campaign in CAMPAIGNS}
    fetched = fetch_reports("http://unused", "key", CAMPAIGNS, population, lambda item: events.append(item))
    assert len(fetched) == len(CAMPAIGNS) and len(events) == 2 * len(CAMPAIGNS)
    for index, campaign in enumerate(CAMPAIGNS):  # fetched, then handed over at once
        assert events[2 * index] == ("fetch", campaign.name) and events[2 * index + 1] is fetched[index]
    assert isinstance(fetched[1], CampaignSummary) and fetched[1].note == "no reports yet"
    assert fetched[0].truth == CAMPAIGNS[0].truth(population[CAMPAIGNS[0].name])
