"""What the demo learned, per campaign: the summaries (estimate against truth), the terminal's text, and the
output folder's ``summary.json`` and ``index.html``."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from estimators.estimates import COMPARED_MODELS, typed_as
from estimators.kinds.distributed import Prio3Release
from estimators.report import IndexEntry, render_index
from estimators.report.kinds import report_kind
from estimators.report.kinds.distributed import OPTIONAL_MODELS
from estimators.report.model import (
    epsilon_text,
    format_number,
    ldp_to_central_ratio,
    ratio_text,
    with_unit,
)

if TYPE_CHECKING:
    from estimators.estimates import Estimate

RATIO_EXPLANATION = ("LDP/central ratio: how many times larger the privacy noise's standard error is with local DP "
                     "than with a trusted curator (central DP), same epsilon and n (for a histogram, the root mean "
                     "square over its values: the same for every distribution); it grows as sqrt(n).")


@dataclass
class ValueSummary:
    "One value (or the mean) of one campaign: the estimate, its interval and the truth"

    value: str
    estimate: float
    ci_low: float | None
    ci_high: float | None
    truth: float



@dataclass
class CampaignSummary:
    "What the demo learned about one campaign"

    name: str
    mechanism: str
    epsilon: float | None
    n: int | None
    ldp_to_central_ratio: float | None
    values: list[ValueSummary] = field(default_factory=list)
    note: str = ""
    files: list[str] = field(default_factory=list)
    error_bars: dict[str, float] | None = None  # distributed: CI half-width under local, distributed, central DP
    error_bar_labels: dict[str, str] | None = None
    unit: str | None = None  # a numeric campaign's, from its spec: "ms"



@dataclass
class DemoResult:
    "The outcome of one run"

    users: int
    mode: str
    url: str
    out_dir: Path
    seconds: float
    campaigns: list[CampaignSummary]
    phases: dict[str, float] = field(default_factory=dict)  # seconds from the start to the end of each step



def summarize(data: Any, truth: dict[str, float] | float, files: list[str]) -> CampaignSummary:
    "The estimate against the truth, value by value (or for the mean)"
    estimate = data.estimate
    epsilon = epsilon_text(estimate)
    summary = CampaignSummary(data.campaign, report_kind(estimate).summary_mechanism(estimate),
                              float(epsilon) if epsilon != "?" else None, data.n, ldp_to_central_ratio(estimate),
                              files=files)
    if report_kind(estimate).trust_model_halfwidths(estimate) is not None:  # three trust models, not a ratio
        summary.ldp_to_central_ratio = None
        summary.error_bars, summary.error_bar_labels = error_bars(estimate)
    if isinstance(truth, float):
        assert estimate.mean is not None, "a numeric campaign's estimate states its mean"
        summary.unit = estimate.unit
        summary.values.append(ValueSummary("mean", estimate.mean, estimate.ci_low, estimate.ci_high, truth))
        return summary
    rows = {row.value: row for row in estimate.values}
    for value, share in sorted(truth.items(), key=lambda item: -item[1]):
        row = rows.get(value)
        if row is not None:
            summary.values.append(ValueSummary(value, row.estimate, row.ci_low, row.ci_high, share))
        else:  # e.g. a RAPPOR candidate the decoder did not detect: its estimate is 0
            summary.values.append(ValueSummary(value, 0.0, None, None, share))
    if estimate.status not in (None, "ok"):
        summary.note = estimate.message
    return summary



def error_bars(estimate: Estimate) -> tuple[dict[str, float], dict[str, str]]:
    """The CI half-width of one value's fraction (or the mean) under each trust model it states: the
    report's own figures (the kind's ``trust_model_halfwidths``, each model's stated interval), not z SE beside
    them"""
    release = typed_as(Prio3Release, estimate)  # the kind that states the three trust models
    models = release.trust_models
    assert models is not None, "a distributed release states the three trust models"
    widths = report_kind(release).trust_model_halfwidths(release) or {}
    bars = {name: widths.get(name, math.nan) for name in COMPARED_MODELS
            if name in widths or name not in OPTIONAL_MODELS}
    shuffled = models.get("shuffled")
    labels = {"local": f"best local oracle, {models['local'].mechanism}",
              "shuffled": "" if shuffled is None else f"{shuffled.mechanism}, epsilon0 {shuffled.epsilon0 or 0:.3g}",
              "distributed": f"this campaign, {release.noise_mode} noise",
              "central": models["central"].mechanism or ""}
    return bars, labels



def with_notes(summaries: Sequence[CampaignSummary], notes: dict[str, str]) -> list[CampaignSummary]:
    "Each summary with the note of its campaign's collection, where it has none of its own"
    for summary in summaries:
        if summary.name in notes and not summary.note:
            summary.note = notes[summary.name]
    return list(summaries)



def headline(summary: CampaignSummary) -> str:
    "Mechanism, epsilon, n and the LDP/central ratio of a campaign, as the terminal and the index page state them"
    epsilon = f"{summary.epsilon:.3g}" if summary.epsilon is not None else "?"
    ratio = (f", LDP/central ratio {ratio_text(summary.ldp_to_central_ratio)}"
             if summary.ldp_to_central_ratio else "")
    n = f"{summary.n:,}" if summary.n is not None else "?"
    return f"{summary.mechanism}, epsilon {epsilon}, n {n}{ratio}"



def summary_line(summary: CampaignSummary) -> str:
    "One line on a campaign: its headline and its most frequent value's (or the mean's) estimate against the truth"
    parts = [headline(summary)]
    if summary.values:
        top = summary.values[0]
        interval = (f", 95% CI [{_number(top.ci_low)}, {_number(top.ci_high)}]"
                    if top.ci_low is not None and top.ci_high is not None else " (not detected)")
        parts.append(f"{value_label(summary, top)}: estimate {_number(top.estimate)}{interval}, "
                     f"truth {_number(top.truth)}")
    if summary.error_bars:
        parts.append("95% CI half-width " + ", ".join(f"{model} ±{format_number(summary.error_bars[model])}"
                                                      for model in ("local", "distributed", "central")))
    if summary.note:
        parts.append(f"note: {summary.note}")
    return "; ".join(parts)



def format_summary(result: DemoResult, top: int = 4) -> str:
    "The per-campaign summary the command prints: estimate against truth, interval, LDP/central ratio"
    path = "the simulator and the batch API" if result.mode == "bulk" else "the SDK over HTTP"
    lines = [f"{result.users:,} simulated users reported through {path} in {result.seconds:.1f} s."]
    if any(campaign.ldp_to_central_ratio for campaign in result.campaigns):
        lines.append(RATIO_EXPLANATION)
    lines.append("")
    for campaign in result.campaigns:
        lines.append(f"{campaign.name} ({headline(campaign)})")
        if campaign.note:
            lines.append(f"  note: {campaign.note}")
        if campaign.error_bars and campaign.error_bar_labels:
            lines.append("  error bar of one value's fraction (95% CI half-width), same question, n, epsilon, delta:")
            for model in campaign.error_bars:
                lines.append(f"    {model:<12} ±{format_number(campaign.error_bars[model])}  "
                             f"({campaign.error_bar_labels[model]})")
        if len(campaign.values) > top:
            lines.append(f"  top {top} of {len(campaign.values)} values (by true share):")
        for value in campaign.values[:top]:
            interval = (f"[{_number(value.ci_low)}, {_number(value.ci_high)}]"
                        if value.ci_low is not None and value.ci_high is not None else "(not detected)")
            lines.append(f"  {value_label(campaign, value):<12} estimate {_number(value.estimate):>8}  "
                         f"95% CI {interval:<22}  truth {_number(value.truth)}")
        lines.append("")
    lines.append(f"Reports (HTML, Markdown, JSON) in {result.out_dir.resolve()}; open index.html there first")
    return "\n".join(lines)



def value_label(summary: CampaignSummary, value: ValueSummary) -> str:
    "A value's name as the summaries print it: the mean with the campaign's unit, 'mean (ms)'"
    return with_unit(value.value, {"unit": summary.unit})


def _number(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.1f}" if abs(value) >= 100 else f"{value:.3f}"



def write_summary(summaries: Sequence[CampaignSummary], out_dir: Path) -> None:
    "summary.json: every campaign's summary, in order; index.html: a link to each report and its one-line summary"
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "summary.json").write_text(json.dumps([asdict(s) for s in summaries], indent=2) + "\n",
                                          encoding="utf-8")
    entries = [IndexEntry(s.name, s.files, summary_line(s)) for s in summaries]
    notes = [RATIO_EXPLANATION] if any(s.ldp_to_central_ratio for s in summaries) else []
    notes.append("The estimates come from simulated users; each report compares them with the truth it was drawn "
                 "from. summary.json holds these summaries as data.")
    (out_dir / "index.html").write_text(render_index("ldp-telemetry demo: the reports", entries, notes),
                                        encoding="utf-8")
