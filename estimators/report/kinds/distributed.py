"""The distributed kind (Prio3), report side: the release's noise and batches, against the local and central trust
models."""

from __future__ import annotations

from collections.abc import Sequence
from statistics import NormalDist
from typing import TYPE_CHECKING, Any

from ...estimates import COMPARED_MODELS, Estimate, EstimateLike, typed_as
from ...kinds.distributed import Prio3MeanRelease, Prio3Release
from ...window import ReportData
from ..model import (
    NOT_DISTINGUISHABLE,
    ValueRow,
    central_halfwidth,
    central_mechanism,
    confidence_percent,
    describe_window,
    epsilon_text,
    format_number,
    target_text,
)
from ..sections import MEAN, PER_VALUE
from ..style import DISTRIBUTED_COLOUR, LDP_COLOUR
from .base import ReportKind, register_report_kind

if TYPE_CHECKING:
    from ..plots import Plot


# Function-level imports: the figures' modules load matplotlib (a third of a second), so they are imported by
# comparison_plots only; a table or JSON report never loads them.


class DistributedReport(ReportKind):
    "Prio3 releases: the header names the noise, the batches and the trust models' standard errors"

    name = "prio3"
    model_label = "distributed DP"
    colour = DISTRIBUTED_COLOUR
    sections = ((Prio3MeanRelease, MEAN), (Prio3Release, PER_VALUE))

    def header_lines(self, data: ReportData) -> list[str]:
        "Its Prio3 type and noise, the batches, rejections, the trust models"
        result = typed_as(Prio3Release, data.estimate)
        delta = result.delta
        n = data.n
        batches = result.batches
        lines = [
            (f"campaign {data.campaign}: {data.kind} estimate, distributed (Prio3 {result.prio3 or '?'}, "
             f"{result.noise_mode or '?'} noise), epsilon {epsilon_text(result)}"
             + (f", delta {delta:.3g}" if delta else "")),
            (f"{f'n = {n:,} reports, ' if n is not None else ''}batches: {', '.join(batches) or '-'} "
             f"(window: {describe_window(data.since, data.until)}), confidence {confidence_percent(result)}"),
        ]
        rejected = result.rejected
        if rejected:
            lines.append("rejected reports: " + ", ".join(f"{reason} {count:,}" for reason, count in
                                                          sorted(rejected.items())))
        models = trust_models_text(result)
        if models is not None:
            lines.append(models)
        target = target_text(result)
        if target:
            lines.append(target)
        return lines

    def mechanism_text(self, result: Estimate) -> str:
        release = typed_as(Prio3Release, result)
        return f"Prio3 {release.prio3 or ''}, {release.noise_mode or ''} noise"

    def summary_mechanism(self, result: Estimate) -> str:
        return f"distributed: {self.mechanism_text(result)}"

    def frequency_caption(self, result: Estimate, rows: Sequence[ValueRow], shown: int, truth: bool) -> str:
        widths = [(r.ci_high - r.ci_low) / 2 for r in rows if r.ci_low is not None and r.ci_high is not None]
        parts = [f"Bars: unbiased estimates from the noisy release with their {confidence_percent(result)} "
                 "intervals (the exact quantile of the release's noise)"]
        if len(rows) > shown:
            parts[0] += f" (the {shown} largest of {len(rows)} values)"
        central = central_halfwidth(result)
        if widths and central is not None:
            parts.append(f"A trusted curator ({central_mechanism(result)}, replace-one) would give "
                         f"±{format_number(central)} against ±{format_number(sum(widths) / len(widths))} here"
                         + ("; in red, its interval around the truth" if truth else ""))
        if any(r.includes_zero for r in rows):
            parts.append(f"Faint bars: the interval includes 0, {NOT_DISTINGUISHABLE}")
        return ". ".join(parts) + "."

    def notes(self, result: Estimate) -> list[str]:
        "Each property of the release with the assumption it rests on"
        return [f"guarantee: {line}" for line in guarantee_lines(typed_as(Prio3Release, result))]

    def bar_label(self, result: Estimate) -> str:
        return "estimate (unbiased)"

    def trust_model_halfwidths(self, result: Estimate) -> dict[str, float] | None:
        return trust_model_halfwidths(typed_as(Prio3Release, result))

    def shuffled_halfwidths(self, result: Estimate, n: Sequence[int]) -> list[float] | None:
        "One shuffled batch of each n at the epsilon0 the release's (epsilon, delta) allows (its trust-model row)"
        # the planner and the amplification (scipy): for the figure's shuffled line only
        from ...distributed.estimate import shuffled_model

        if result.epsilon is None:
            return None
        z = NormalDist().inv_cdf(0.5 + result.z_confidence / 2)
        value_range = result.range if isinstance(result, Prio3MeanRelease) else None
        domain = max(2, len(result.values))
        return [shuffled_model(result.epsilon, m, result.delta, z, domain_size=domain,
                               value_range=value_range)["ci_halfwidth"] for m in n]

    def mean_comparisons(self, result: Estimate) -> list[tuple[str, float, str, str]]:
        "Local DP's best mechanism at the same ε (its formula)"
        models = typed_as(Prio3Release, result).trust_models
        local = models.get("local") if models is not None else None
        if local is None or local.std_error is None:
            return []
        z = NormalDist().inv_cdf(0.5 + result.z_confidence / 2)
        width = z * local.std_error
        return [(f"local DP\n{local.mechanism or ''} (formula)", width, LDP_COLOUR,
                 f"local DP's best mechanism would give ± {format_number(width)} at the same ε")]

    def comparison_plots(self, data: ReportData, *, simulate_points: bool, rng: Any) -> list[Plot]:
        "The trust models' standard errors over n"
        from ..plots import trust_models_figure  # matplotlib: loaded by the figures only, never by a table
        from ..scaling import trust_model_curves

        models = trust_model_curves(data.estimate)
        return [] if models is None else [trust_models_figure(models)]


OPTIONAL_MODELS = ("shuffled",)  # an estimate stored before the shuffled row still compares the other three


def trust_model_errors(result: EstimateLike) -> dict[str, float] | None:
    "The standard error of one value's fraction (or of the mean) under each trust model, or None"
    models = typed_as(Prio3Release, result).trust_models
    if models is None:
        return None
    errors: dict[str, float] = {}
    for name in COMPARED_MODELS:
        model = models.get(name)
        if model is None or model.std_error is None:
            if name in OPTIONAL_MODELS:
                continue
            return None
        errors[name] = model.std_error
    return errors


def trust_model_halfwidths(result: EstimateLike) -> dict[str, float] | None:
    """The CI half-width of one value's fraction (or of the mean) under each trust model, the quantity the local
    pages plot: the model's own ``ci_halfwidth``, or z times its standard error"""
    release = typed_as(Prio3Release, result)
    errors = trust_model_errors(release)
    if errors is None or release.trust_models is None:
        return None
    z = NormalDist().inv_cdf(0.5 + release.z_confidence / 2)
    stated = {name: release.trust_models[name].ci_halfwidth for name in errors}
    return {name: width if width is not None else z * errors[name] for name, width in stated.items()}


def trust_models_text(result: EstimateLike) -> str | None:
    "The trust models' standard errors side by side, as every format prints them"
    release = typed_as(Prio3Release, result)
    errors = trust_model_errors(release)
    if errors is None or release.trust_models is None:
        return None
    models = release.trust_models
    parts = [f"local {format_number(errors['local'])} ({models['local'].mechanism or '?'})"]
    if "shuffled" in errors:
        shuffled = models["shuffled"]
        epsilon0 = f"epsilon0 {shuffled.epsilon0:.4g}, " if shuffled.epsilon0 is not None else ""
        delta = f" at delta {shuffled.delta:.3g}" if shuffled.delta else ""
        parts.append(f"shuffled {format_number(errors['shuffled'])} ({shuffled.mechanism or '?'}, {epsilon0}"
                     f"one batch of n{delta})")
    mode = models["distributed"].mode or release.noise_mode or "?"
    parts.append(f"distributed {format_number(errors['distributed'])} ({mode})")
    parts.append(f"central {format_number(errors['central'])} ({models['central'].mechanism or '?'})")
    return f"standard error of {release.quantity}: {', '.join(parts)}"


def guarantee_lines(result: EstimateLike) -> list[str]:
    "Each property of a distributed release with the assumption it rests on"
    return [f"{holds}, assuming {assuming}" for holds, assuming in typed_as(Prio3Release, result).guarantee]


DISTRIBUTED_REPORT = register_report_kind(DistributedReport())
