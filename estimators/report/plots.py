"""The report's figures, drawn with matplotlib's object API (``Figure`` + Agg canvas, never pyplot's global state).

Each ``*_figure`` function returns a :class:`Plot`: the figure and a caption that states its numbers, so the
HTML and Markdown renderers can print the caption under the image.  ``png_bytes`` renders a figure; a plot keeps
its PNG (``Plot.png``), so a figure shown in two reports (HTML and Markdown) is drawn once.
"""

from __future__ import annotations

import io
import math
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from weakref import WeakSet

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backend_bases import RendererBase
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter, NullLocator

from ..estimates import Estimate, EstimatedMean, as_estimate, typed_as
from ..window import DailyResult, ReportData
from .kinds.base import report_kind
from .model import (
    DAILY_SERIES,
    NOT_DISTINGUISHABLE,
    EstimateLike,
    central_halfwidth,
    central_mechanism,
    confidence_percent,
    display_rows,
    epsilon_text,
    format_number,
    value_rows,
    with_unit,
)
from .scaling import ScalingCurves, TrustModelCurves
from .style import CENTRAL_COLOUR, DISTRIBUTED_COLOUR, LDP_COLOUR, SHUFFLED_COLOUR

MAX_BARS = 20
MAX_SERIES = DAILY_SERIES
FAINT_COLOUR = "#a6c8e6"
TRUTH_COLOUR = "#2ca02c"
SUPERSCRIPTS = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


@dataclass(frozen=True)
class Plot:
    "A figure, the file-name stem it is saved under, its title and a caption with its numbers"

    name: str
    title: str
    figure: Figure
    caption: str

    @cached_property
    def png(self) -> bytes:
        "The figure as PNG, drawn on first use and kept: the HTML and Markdown reports share one rendering"
        return png_bytes(self.figure)


def new_figure(width: float = 8.0, height: float = 4.5) -> Figure:
    "A figure bound to an Agg canvas (no pyplot, no global state); :func:`png_bytes` lays it out (:func:`fit_layout`)"
    figure = Figure(figsize=(width, height), dpi=100)
    FigureCanvasAgg(figure)
    _LAID_OUT_HERE.add(figure)
    return figure


_LAID_OUT_HERE: WeakSet[Figure] = WeakSet()  # figures of new_figure: png_bytes fits their margins before drawing
MARGIN_PAD = 6.0  # pixels between the outermost text and the figure's edge


def png_bytes(figure: Figure) -> bytes:
    """The figure as PNG, drawn once by its Agg canvas; a figure of :func:`new_figure` is laid out first.

    ``Figure.savefig`` draws a figure with a layout engine twice (a first pass, output discarded, to run the
    layout); the canvas's ``print_png`` draws once."""
    canvas = figure.canvas if isinstance(figure.canvas, FigureCanvasAgg) else FigureCanvasAgg(figure)
    if figure in _LAID_OUT_HERE:
        fit_layout(figure)
    buffer = io.BytesIO()
    canvas.print_png(buffer)
    return buffer.getvalue()


def fit_layout(figure: Figure, pad: float = MARGIN_PAD) -> None:
    """Margins that hold every text of the figure's axes (tick labels, rotated ones too, axis labels, the title,
    legends, annotations), measured once.

    Matplotlib's constrained layout measured them twice per drawing (it iterates) and the draw measured them again:
    a third of a figure's drawing.  Here one pass of :meth:`Axes.get_tightbbox` gives how far the texts reach
    beyond each axes' box, and the box is moved in by that much (plus ``pad`` pixels).  A title wider than the
    room above its axes is wrapped at spaces (the one case that measures twice)."""
    renderer = figure.canvas.get_renderer()  # type: ignore[attr-defined]
    width, height = figure.bbox.width, figure.bbox.height
    for attempt in range(2):
        left = right = bottom = top = 0.0
        for axes in figure.axes:
            box = axes.get_window_extent(renderer)
            reach = axes.get_tightbbox(renderer, for_layout_only=True)
            if reach is None:
                continue
            left, right = max(left, box.x0 - reach.x0), max(right, reach.x1 - box.x1)
            bottom, top = max(bottom, box.y0 - reach.y0), max(top, reach.y1 - box.y1)
        figure.subplots_adjust(left=(left + pad) / width, right=1 - (right + pad) / width,
                               bottom=(bottom + pad) / height, top=1 - (top + pad) / height)
        if attempt or not any([_wrap_title(axes, renderer, pad) for axes in figure.axes]):
            return


def _wrap_title(axes: Axes, renderer: RendererBase, pad: float) -> bool:
    "Break the axes' title into lines that fit the figure on both sides of its centre; whether it changed"
    title = axes.title
    text = title.get_text()
    if not text:
        return False
    figure_width = axes.figure.bbox.width
    box = axes.get_window_extent(renderer)
    centre = (box.x0 + box.x1) / 2
    room = 2 * (min(centre, figure_width - centre) - pad)
    extent = title.get_window_extent(renderer)
    if extent.width <= room:
        return False
    chars = int(len(text) * room / extent.width)  # a line's length in characters, at the title's mean width
    while True:
        title.set_text(textwrap.fill(text, width=max(chars, 8)))
        if chars <= 8 or title.get_window_extent(renderer).width <= room:
            return True
        chars -= max(1, chars // 10)


def power_of_ten(value: float, _position: object = None) -> str:
    """A log axis' tick label in plain text, ``10³`` or ``10⁻⁶`` (Unicode superscripts): matplotlib's default
    labels are mathtext (``$10^{3}$``), parsed again for every figure, a third of a log-log figure's drawing"""
    if not value > 0:
        return ""
    exponent = round(math.log10(value))
    if not math.isclose(value, 10.0 ** exponent, rel_tol=1e-6):
        return ""
    return "10" + str(exponent).translate(SUPERSCRIPTS)


def _plain_log_labels(axes: Axes) -> None:
    """Both (log) axes labelled at the powers of ten in plain text, with their grid lines, and no minor ticks
    (every curve here spans more than two decades on each axis; matplotlib's 8 minor ticks per decade were
    about 100 more tick artists per figure to make, place and measure)"""
    for axis in (axes.xaxis, axes.yaxis):
        axis.set_major_formatter(FuncFormatter(power_of_ten))
        axis.set_minor_locator(NullLocator())


def frequency_figure(result: EstimateLike, truth: dict | None = None, campaign: str | None = None) -> Plot:
    """Bars of the estimates with their local-DP intervals; beside each, central DP's interval when known.

    Values whose interval includes 0 are drawn faint.  At most ``MAX_BARS`` values (the largest estimates)."""
    result = as_estimate(result)
    rows = display_rows(result)[:MAX_BARS]  # the table's order
    central = central_halfwidth(result)
    offset = 0.17 if central is not None and truth else 0.0
    figure = new_figure(max(6.0, 0.55 * len(rows) + 3), 4.5)
    axes = figure.add_subplot()
    x = np.arange(len(rows))
    estimates = [row.estimate for row in rows]
    colours = [FAINT_COLOUR if row.includes_zero else LDP_COLOUR for row in rows]
    axes.bar(x - offset, estimates, width=0.34 if offset else 0.5, color=colours,
             label=report_kind(result).bar_label(result))
    low = [row.estimate - row.ci_low if row.ci_low is not None else 0.0 for row in rows]
    high = [row.ci_high - row.estimate if row.ci_high is not None else 0.0 for row in rows]
    model = report_kind(result).model_label
    axes.errorbar(x - offset, estimates, yerr=[low, high], fmt="none", ecolor="black", capsize=4, linewidth=1.2,
                  label=f"{model} {confidence_percent(result)} CI")
    if central is not None and truth:  # around the truth, never around the estimate: a width, not a second claim
        axes.errorbar(x + offset, [truth.get(row.value, np.nan) for row in rows], yerr=central, fmt="_",
                      color=CENTRAL_COLOUR, ecolor=CENTRAL_COLOUR, capsize=4, markersize=9, linewidth=1.2,
                      label="central DP CI around the truth, same ε")
    if truth:
        axes.scatter(x - offset, [truth.get(row.value, np.nan) for row in rows], marker="D", color=TRUTH_COLOUR,
                     zorder=3, s=22, label="ground truth")
    axes.axhline(0, color="grey", linewidth=0.8)
    tilted = len(rows) > 6
    axes.set_xticks(x, [_short(row.value) for row in rows], rotation=30 if tilted else 0,
                    ha="right" if tilted else "center")
    axes.set_ylabel("fraction of reports")
    name = campaign or result.campaign or ""
    mechanism = report_kind(result).mechanism_text(result)
    axes.set_title(f"{name}: {mechanism}, {_privacy_text(result)}, n = {_count(result)}")
    handles, _ = axes.get_legend_handles_labels()
    if any(row.includes_zero for row in rows):
        handles.append(Patch(color=FAINT_COLOUR, label=f"CI includes 0 ({NOT_DISTINGUISHABLE})"))
    axes.legend(handles=handles, fontsize=8, loc="upper right")
    caption = report_kind(result).frequency_caption(result, value_rows(result), len(rows), bool(truth))
    return Plot("frequencies", "Frequency estimates", figure, caption)


def scaling_figure(curves: ScalingCurves) -> Plot:
    "CI half-width against n, log-log: local DP falls as n^-1/2, central DP as n^-1; simulated points on top"
    figure = new_figure(8.0, 4.8)
    axes = figure.add_subplot()
    axes.loglog(curves.n, curves.ldp_halfwidth, color=LDP_COLOUR, label="local DP (formula), slope −1/2")
    axes.loglog(curves.n, curves.central_halfwidth, color=CENTRAL_COLOUR,
                label=f"central DP, {curves.central_mechanism} (formula), slope −1")
    if len(curves.simulated_n):
        if len(curves.simulated_ldp_low) == len(curves.simulated_n):
            axes.errorbar(curves.simulated_n, curves.simulated_ldp, fmt="none", ecolor="black", elinewidth=1,
                          capsize=3, zorder=2,
                          yerr=[curves.simulated_ldp - curves.simulated_ldp_low,
                                curves.simulated_ldp_high - curves.simulated_ldp])
        axes.scatter(curves.simulated_n, curves.simulated_ldp, color=LDP_COLOUR, edgecolor="black", zorder=3,
                     label="local DP, simulated (Monte-Carlo interval)")
        axes.scatter(curves.simulated_n, curves.simulated_central, marker="s", color=CENTRAL_COLOUR,
                     edgecolor="black", zorder=3, label="central DP, simulated")
    axes.axvline(curves.current_n, color="grey", linestyle="--", linewidth=1)
    for y, colour in ((curves.current_ldp, LDP_COLOUR), (curves.current_central, CENTRAL_COLOUR)):
        axes.plot([curves.current_n], [y], marker="*", markersize=14, color=colour, markeredgecolor="black",
                  zorder=4)
    axes.annotate(f"this campaign\nn = {curves.current_n:,}", (curves.current_n, curves.current_ldp),
                  textcoords="offset points", xytext=(8, 8), fontsize=8)
    axes.set_xlabel("number of reports n")
    axes.set_ylabel(f"{curves.confidence_text} CI half-width ({curves.unit})")
    delta = f", δ = {curves.delta:.0e} (central)" if curves.delta else ""
    axes.set_title(f"The price of local DP: {curves.mechanism}, ε = {curves.epsilon:.4g}{delta}")
    _plain_log_labels(axes)
    axes.grid(True, which="major", linewidth=0.5, alpha=0.5)
    axes.legend(fontsize=8, loc="lower left")
    caption = (
        f"{curves.confidence_text} CI half-width of {curves.quantity} against the number of reports. Under local DP "
        f"it shrinks as 1/√n, under central DP (a trusted curator: {curves.central_mechanism}, replace-one) as 1/n. "
        f"At this campaign's "
        f"n = {curves.current_n:,}: ±{format_number(curves.current_ldp)} locally against "
        f"±{format_number(curves.current_central)} centrally. "
        f"Points: {curves.trials_text}.")
    return Plot("sqrt_n", "The √n price of local DP", figure, caption)


def trust_models_figure(curves: TrustModelCurves) -> Plot:
    "Standard error against n, log-log, for the three trust models: local above, distributed near central"
    figure = new_figure(8.0, 4.8)
    axes = figure.add_subplot()
    axes.loglog(curves.n, curves.local, color=LDP_COLOUR, label=f"local DP ({curves.local_mechanism}), slope −1/2")
    models = [("local", LDP_COLOUR), ("distributed", DISTRIBUTED_COLOUR), ("central", CENTRAL_COLOUR)]
    if curves.shuffled is not None:
        axes.loglog(curves.n, curves.shuffled, color=SHUFFLED_COLOUR, linestyle="-.",
                    label=f"shuffled DP ({curves.local_mechanism} at its amplified ε0, one batch of n)")
        models.insert(1, ("shuffled", SHUFFLED_COLOUR))
    axes.loglog(curves.n, curves.distributed, color=DISTRIBUTED_COLOUR,
                label=f"distributed DP (Prio3, {curves.noise_mode} noise), slope −1")
    axes.loglog(curves.n, curves.central, color=CENTRAL_COLOUR, linestyle="--",
                label=f"central DP ({curves.central_mechanism}), slope −1")
    axes.axvline(curves.current_n, color="grey", linestyle="--", linewidth=1)
    for name, colour in models:
        axes.plot([curves.current_n], [curves.current[name]], marker="*", markersize=14, color=colour,
                  markeredgecolor="black", zorder=4)
    axes.annotate(f"this campaign\nn = {curves.current_n:,}", (curves.current_n, curves.current["local"]),
                  textcoords="offset points", xytext=(8, 8), fontsize=8)
    axes.set_xlabel("number of reports n")
    axes.set_ylabel(f"95% CI half-width of {curves.quantity}")
    delta = f", δ = {curves.delta:.0e}" if curves.delta else ""
    axes.set_title(f"{'Four' if curves.shuffled is not None else 'Three'} trust models at ε = "
                   f"{curves.epsilon:.4g}{delta}")
    _plain_log_labels(axes)
    axes.grid(True, which="major", linewidth=0.5, alpha=0.5)
    axes.legend(fontsize=8, loc="lower left")
    now = curves.current
    caption = (
        f"95% CI half-width of {curves.quantity} against the number of reports (the quantity the local pages plot), "
        f"same ε and δ, neighbouring relation replace-one. Local DP (every device "
        f"randomizes its own report) shrinks as 1/√n; distributed DP (two aggregators, noise added once to the "
        f"secret-shared sum) and central DP (a trusted curator) shrink as 1/n. At this campaign's "
        f"n = {curves.current_n:,}: local {format_number(now['local'])}, distributed "
        f"{format_number(now['distributed'])}, central {format_number(now['central'])} (distributed is "
        f"{now['distributed'] / now['central']:.2g}× central, local {now['local'] / now['distributed']:,.0f}× "
        f"distributed). Lines: formulas")
    if curves.shuffled is not None:
        caption += (f". Shuffled DP (a shuffler, not colluding with the collector, forwards the n reports in one "
                    f"batch; each device randomizes at the largest ε0 whose shuffled batch is (ε, "
                    f"δ = {curves.shuffled_delta or 0:.0e})-DP, Feldman, McMillan, Talwar 2021) shrinks faster "
                    f"than 1/√n as ε0 grows with n: {format_number(now['shuffled'])} at this n")
    return Plot("sqrt_n", "Local, distributed and central DP against n", figure, caption + ".")


def mean_figure(result: EstimateLike, truth: float | None = None) -> Plot:
    """The mean with its interval; below it, the 95% half-widths each trust model would give, as widths.

    The comparison is never drawn around this estimate (a second interval there reads as a confident claim about
    the same number); with a known truth (simulations) the other models' intervals are drawn around the truth."""
    result = typed_as(EstimatedMean, result)
    mean, low, high = result.mean, result.ci_low, result.ci_high
    if mean is None or low is None or high is None:
        raise ValueError("a mean figure needs the mean and its interval")
    central = result.central.ci_halfwidth if result.central is not None else None
    kind = report_kind(result)
    model = kind.model_label
    ldp_width = (high - low) / 2
    comparisons = kind.mean_comparisons(result)
    widths = [(f"{model}\n{kind.mechanism_text(result)}", ldp_width, kind.colour)]
    widths += [(label, width, colour) for label, width, colour, _ in comparisons]
    if central is not None:
        widths.append((f"central DP\n{central_mechanism(result).split(',')[0]}", central, CENTRAL_COLOUR))
    figure = new_figure(8.0, 2.2 + 0.6 * len(widths))
    estimate_axes, width_axes = figure.subplots(2, 1, height_ratios=[1, max(1, len(widths) - 1)],
                                                gridspec_kw={"hspace": 0.9})
    estimate_axes.errorbar([mean], [0], xerr=[[mean - low], [high - mean]], fmt="o",
                           color=widths[0][2], capsize=6, linewidth=2, markersize=7, label=f"{model} estimate")
    if truth is not None:
        estimate_axes.axvline(truth, color=TRUTH_COLOUR, linestyle="--", label="ground truth")
        for position, (label, width, colour) in enumerate(widths[1:], start=1):
            estimate_axes.errorbar([truth], [-position], xerr=width, fmt="none", color=colour, capsize=6,
                                   linewidth=2, label=f"{label.splitlines()[0]} around the truth")
    estimate_axes.set_yticks([])
    unit = result.unit
    estimate_axes.set_xlabel(f"mean ({unit}, {confidence_percent(result)} CI)" if unit else
                             f"mean ({confidence_percent(result)} CI)")
    estimate_axes.legend(fontsize=7, loc="upper right")
    _half_width_dots(width_axes, widths)
    width_axes.set_xlabel(with_unit(f"{confidence_percent(result)} CI half-width, same ε, log scale", result))
    estimate_axes.set_title(f"{result.campaign or ''}: mean over n = {_count(result)}, {_privacy_text(result)}")
    suffix = f" {unit}" if unit else ""
    caption = (f"Mean {format_number(mean)}{suffix} ± {format_number(ldp_width)}{suffix} under {model}")
    caption += "".join(f"; {text}" for _, _, _, text in comparisons)
    if central is not None:
        caption += (f"; a trusted curator ({central_mechanism(result)}, replace-one) at the same ε would report "
                    f"± {format_number(central)}")
    caption += (". The lower panel compares the half-widths; the other models' intervals are drawn around the truth"
                if truth is not None else ". The lower panel compares the half-widths")
    return Plot("mean", "Mean", figure, caption + ".")


def _half_width_dots(axes: Axes, widths: Sequence[tuple[str, float, str]]) -> None:
    """The half-widths as dots on a log axis, each with its value: positions, not bars (a bar's length from an
    arbitrary left edge on a log axis is no measure: 10x looked like 30x)"""
    positions = np.arange(len(widths))[::-1]
    values = [width for _, width, _ in widths]
    axes.scatter(values, positions, s=60, c=[colour for _, _, colour in widths], zorder=3)
    for value, position in zip(values, positions):
        axes.annotate(format_number(value), (value, position), xytext=(7, 0), textcoords="offset points",
                      va="center", fontsize=8)
    axes.set_xscale("log")
    positive = [value for value in values if value > 0]
    if positive:
        axes.set_xlim(min(positive) / 3, max(positive) * 6)
    axes.set_ylim(-0.6, len(widths) - 0.4)
    axes.set_yticks(positions, [label for label, _, _ in widths], fontsize=8)
    axes.grid(axis="x", alpha=0.3)


def _privacy_text(result: Estimate) -> str:
    "ε, and δ where one applies (a distributed release's, or the central baseline's Gaussian)"
    delta = result.delta
    if not delta:
        delta = result.central.gaussian_delta if result.central is not None else None
    text = f"ε = {epsilon_text(result)}"
    return text + (f", δ = {delta:.0e}" if delta else "")


def daily_figure(daily: Sequence[DailyResult]) -> Plot | None:
    "One line per top value (or the mean) per day with its CI band; None for fewer than two days"
    days = [entry for entry in daily if entry.result]
    if len(days) < 2:
        return None
    figure = new_figure(8.0, 4.5)
    axes = figure.add_subplot()
    x = np.arange(len(days))
    first = days[0].estimate
    lines = report_kind(first).daily_series(days)
    series = lines.series
    for index, (label, points) in enumerate(series.items()):
        values = np.array(points, dtype=float)
        colour = f"C{index}"
        axes.plot(x, values[:, 0], marker="o", color=colour, label=_short(label))
        axes.fill_between(x, values[:, 1], values[:, 2], color=colour, alpha=0.18)
    axes.set_xticks(x, [d.day for d in days], rotation=30 if len(days) > 7 else 0)
    axes.set_ylabel(lines.ylabel)
    axes.set_title(f"Per day, with {confidence_percent(first)} CI bands")
    axes.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    caption = (f"Daily estimates of {lines.shown} over {len(days)} days; the bands are each day's local-DP intervals, "
               "wider than the whole window's because each day has fewer reports.")
    return Plot("daily", "Per day", figure, caption)


def _count(result: Estimate) -> str:
    n = result.n
    return f"{n:,}" if n is not None else "?"


def _short(text: str, limit: int = 18) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def report_plots(data: ReportData, *, simulate_points: bool = True,
                 rng: np.random.Generator | None = None) -> list[Plot]:
    "Every figure that applies to this report, in reading order"
    kind = report_kind(data.estimate)
    plots: list[Plot] = list(kind.main_plots(data))  # the kind's layout of this estimate's type: bars, the mean, ...
    plots += kind.comparison_plots(data, simulate_points=simulate_points, rng=rng)
    daily = daily_figure(data.daily)
    if daily is not None:
        plots.append(daily)
    return plots
