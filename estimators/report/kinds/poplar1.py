"""The poplar1 kind, report side: one batch's walk of the prefix tree.  The header states the threshold, the
noise every level's counts carry, the walk's composed (epsilon, delta) and what the leader learned; the table is
the heavy hitters with their de-biased counts and intervals; the notes summarise every level (its candidates,
the prefixes it kept with their noisy counts, the largest it pruned); the figures are the heavy hitters' counts
against the threshold, and every level's noisy counts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ...estimates import Estimate, typed_as
from ...kinds.poplar1.kind import Poplar1Walk
from ...window import ReportData
from ..model import confidence_percent, epsilon_text, format_column, format_number
from ..sections import Section
from ..style import DISTRIBUTED_COLOUR
from .base import ReportKind, register_report_kind

if TYPE_CHECKING:
    from ..plots import Plot

# Function-level imports: the figures' module loads matplotlib, so only main_plots imports it.

SHOWN_PREFIXES = 8  # a level's note lists at most this many kept prefixes (the JSON has every count)
THRESHOLD_COLOUR = "#d62728"


def walked(result: Estimate) -> Poplar1Walk:
    "The estimate as the poplar1 kind reads it"
    return typed_as(Poplar1Walk, result)


class Poplar1Section(Section):
    "The heavy hitters of a walk: value, its bytes, the noisy count with its interval, the fraction of the batch"

    def value_table(self, estimate: Estimate) -> tuple[list[str], list[list[str]]]:
        rows = walked(estimate).heavy_hitters
        fractions = format_column([row.get("estimate") for row in estimate.json.get("values", [])])
        return (["value", "bytes", "count", "std error", "CI low", "CI high", "fraction"],
                [[_printable(str(row.get("value", ""))), str(row.get("bytes", "")), _count(row.get("count")),
                  format_number(row.get("std_error")), _count(row.get("ci_low")), _count(row.get("ci_high")),
                  fraction] for row, fraction in zip(rows, fractions)])

    def intervals(self, estimate: Estimate) -> list[tuple[str, float, float, float]]:
        return [(_printable(str(row["value"])), float(row["count"]), float(row["ci_low"]), float(row["ci_high"]))
                for row in walked(estimate).heavy_hitters]

    def value_label(self, estimate: Estimate) -> str:
        return "count (noisy, unbiased)"


POPLAR1_SECTION = Poplar1Section()


class Poplar1Report(ReportKind):
    "Distributed heavy hitters: the walk's heavy hitters, its levels, its noise and its guarantee"

    name = "poplar1"
    model_label = "distributed DP"
    colour = DISTRIBUTED_COLOUR
    sections = ((Poplar1Walk, POPLAR1_SECTION),)

    def header_lines(self, data: ReportData) -> list[str]:
        result = walked(data.estimate)
        noise, guarantee = result.noise, result.guarantee
        levels = noise.get("levels", "?")
        lines = [f"campaign {data.campaign}: poplar1 heavy hitters, distributed ({noise.get('noise')}, at every "
                 f"level), epsilon {epsilon_text(result)}, delta {_delta(result.delta)} for the whole walk",
                 f"batch {result.batch}: n = {result.n or 0:,} reports, threshold {format_number(result.threshold)} "
                 f"(count {format_number(result.threshold_count)}; a prefix is kept when its count reaches "
                 f"{format_number(_keep_count(result))}, so a string of count >= the threshold's survives every level "
                 f"with probability >= {format_number(1 - float(result.pruning.get('miss_probability', 0.0)))}), "
                 f"{len(result.levels)} of {levels} levels walked, confidence {confidence_percent(result)}",
                 f"noise per level: sigma2 {format_number(noise.get('sigma2'))} from each aggregator on every count "
                 f"(a count's std error {format_number(_std_error(result))}, interval +-"
                 f"{format_number(noise.get('ci_halfwidth'))}); the exact composition of the {levels} levels "
                 f"({guarantee.get('relation')}): epsilon {format_number(guarantee.get('epsilon'))}, delta "
                 f"{_delta(guarantee.get('delta'))}"]
        if result.rejected:
            lines.append("rejected reports: " + ", ".join(f"{reason} {count:,}" for reason, count in
                                                          sorted(result.rejected.items())))
        learned = result.leader_learned
        if learned:
            lines.append(f"the leader learned: {learned.get('prefixes_asked', 0):,} candidate prefixes over "
                         f"{learned.get('levels', 0)} levels with their noisy counts, nothing about any one report")
        stopped = result.stopped
        if stopped:
            lines.append(f"the walk stopped after its first level: {stopped.get('accepted', 0):,} reports accepted, "
                         f"fewer than the {stopped.get('needed', 0):,} at which the noise's own candidates stop "
                         "multiplying level by level (the others were rejected)")
        if not result.heavy_hitters:
            lines.append("no string reached the keep count at every level: no heavy hitter in this batch")
        else:
            clear = sum(1 for row in result.heavy_hitters if row.get("clears_threshold"))
            lines.append(f"{clear:,} of the {len(result.heavy_hitters):,} released strings clear the threshold count "
                         "(interval above it); the others may be below it (the rule's possible false discoveries)")
        return lines

    def notes(self, result: Estimate) -> list[str]:
        "Every level's summary, then the guarantee's statements"
        walk = walked(result)
        return [level_line(level, _keep_count(walk)) for level in walk.levels] + [
            f"guarantee: {s.get('holds')} (assuming {s.get('assuming')})"
            for s in walk.guarantee.get("statements", []) if isinstance(s, Mapping)]

    def mechanism_text(self, result: Estimate) -> str:
        return "Poplar1 walk, discrete Gaussian noise per level"

    def summary_mechanism(self, result: Estimate) -> str:
        return f"distributed: {self.mechanism_text(result)}"

    def bar_label(self, result: Estimate) -> str:
        return "count (unbiased)"

    def main_plots(self, data: ReportData) -> list[Plot]:
        "The heavy hitters' counts against the threshold (when there are any), then every level's counts"
        result = walked(data.estimate)
        plots = [hitters_figure(data)] if result.heavy_hitters else []
        return plots + ([levels_figure(data)] if result.levels else [])


def _keep_count(result: Poplar1Walk) -> float:
    "The count a prefix's noisy count must reach to be kept (the threshold count less the pruning margin)"
    keep = result.pruning.get("keep_count")
    return float(keep) if isinstance(keep, (int, float)) else (result.threshold_count or 0.0)


def level_line(level: Mapping[str, Any], threshold: float) -> str:
    "One level's note: its candidates, the prefixes it kept with their noisy counts, the largest it pruned"
    counts = dict(zip(level.get("prefixes", []), level.get("counts", [])))
    kept = [prefix for prefix in level.get("kept", []) if prefix in counts]
    pruned = [count for prefix, count in counts.items() if prefix not in set(kept)]
    shown = ", ".join(f"{prefix} {counts[prefix]:,}" for prefix in
                      sorted(kept, key=lambda prefix: -counts[prefix])[:SHOWN_PREFIXES])
    more = f" (+{len(kept) - SHOWN_PREFIXES} more)" if len(kept) > SHOWN_PREFIXES else ""
    width = int(level.get("level", -1)) + 1
    return (f"level {level.get('level')} ({width}-bit prefixes, {level.get('reports', 0):,} reports): "
            f"{len(counts):,} candidates, {len(kept):,} kept (count >= {format_number(threshold)})"
            + (f": {shown}{more}" if kept else "")
            + (f"; largest pruned {max(pruned):,}" if pruned else ""))


def hitters_figure(data: ReportData) -> Plot:
    "The heavy hitters' noisy counts with their intervals, and the threshold count as a line"
    from ..plots import Plot, fit_layout, new_figure

    result = walked(data.estimate)
    rows = result.heavy_hitters
    figure = new_figure(max(6.0, 0.45 * len(rows) + 3), 4.5)
    axes = figure.add_subplot()
    x = list(range(len(rows)))
    counts = [float(row["count"]) for row in rows]
    axes.bar(x, counts, width=0.6, color=DISTRIBUTED_COLOUR, label="noisy count")
    axes.errorbar(x, counts, yerr=[[c - float(r["ci_low"]) for c, r in zip(counts, rows)],
                                   [float(r["ci_high"]) - c for c, r in zip(counts, rows)]],
                  fmt="none", ecolor="black", capsize=3, linewidth=1.0,
                  label=f"distributed DP {confidence_percent(result)} CI")
    axes.axhline(result.threshold_count or 0.0, color=THRESHOLD_COLOUR, linestyle="--", linewidth=1.2,
                 label=f"threshold count {format_number(result.threshold_count)}")
    axes.set_xticks(x, [_printable(str(row["value"]))[:14] for row in rows], rotation=45, ha="right", fontsize=8)
    axes.set_ylabel("count (of the batch's reports)")
    axes.set_title(f"{data.campaign}: Poplar1 heavy hitters, ε = {epsilon_text(result)}, n = {result.n or 0:,}")
    axes.legend(fontsize=8, loc="upper right")
    fit_layout(figure)
    caption = (f"Bars: the {len(rows)} heavy hitters' noisy counts (both aggregators' noise, unbiased) with their "
               f"{confidence_percent(result)} intervals (the exact quantile of the noise). Dashed line: the "
               f"threshold count {format_number(result.threshold_count)}; every prefix of a released string reached "
               f"the keep count {format_number(_keep_count(result))} at every level of the walk.")
    return Plot("poplar1_heavy_hitters", "Heavy hitters", figure, caption)


def levels_figure(data: ReportData) -> Plot:
    "Every level's candidates' noisy counts (kept ones filled), and the threshold count"
    from ..plots import Plot, fit_layout, new_figure

    result = walked(data.estimate)
    figure = new_figure(8.0, 4.5)
    axes = figure.add_subplot()
    for index, level in enumerate(result.levels):
        kept = set(level.get("kept", []))
        points = list(zip(level.get("prefixes", []), level.get("counts", [])))
        for is_kept, colour in ((True, DISTRIBUTED_COLOUR), (False, "grey")):
            ys = [count for prefix, count in points if (prefix in kept) == is_kept]
            axes.scatter([index] * len(ys), ys, s=14, color=colour, alpha=0.8 if is_kept else 0.4,
                         label=("kept" if is_kept else "pruned") if index == 0 else None)
    axes.axhline(result.threshold_count or 0.0, color=THRESHOLD_COLOUR, linestyle="--", linewidth=1.2,
                 label=f"threshold count {format_number(result.threshold_count)}")
    axes.set_xticks(range(len(result.levels)),
                    [f"{int(level.get('level', -1)) + 1} bits" for level in result.levels])
    axes.set_xlabel("level (prefix length)")
    axes.set_ylabel("noisy count")
    axes.set_title(f"{data.campaign}: every level's candidate prefixes")
    axes.legend(fontsize=8, loc="upper right")
    fit_layout(figure)
    caption = ("Each level's candidate prefixes (the extensions of the previous level's kept ones) with their "
               "noisy counts: the leader learns these and nothing else. Filled: kept (count at least the keep count "
               f"{format_number(_keep_count(result))}), grey: pruned. Dashed: the threshold count.")
    return Plot("poplar1_levels", "Every level", figure, caption)


def _printable(value: str) -> str:
    "A decoded string as a table cell: its padding and control bytes escaped"
    return value.rstrip("\x00").encode("unicode_escape").decode("ascii")


def _std_error(result: Poplar1Walk) -> float | None:
    variance = result.noise.get("variance")
    return float(variance) ** 0.5 if isinstance(variance, (int, float)) else None


def _count(value: Any) -> str:
    return f"{value:,.0f}" if isinstance(value, (int, float)) else "-"


def _delta(value: Any) -> str:
    return f"{value:.3g}" if isinstance(value, (int, float)) else "?"


POPLAR1_REPORT = register_report_kind(Poplar1Report())
