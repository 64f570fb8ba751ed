"""``ldp-telemetry plan``: expected errors before collecting anything."""

from __future__ import annotations

import json
from typing import Any

import click

from client_sdk.spec import CATEGORICAL_MECHANISMS, NUMERIC_MECHANISMS

# Function-level imports: the command imports the planner when it runs: its `--help` does not load it (+210 ms, numpy).


@click.command()
@click.option("--epsilon", type=float, help="Privacy parameter of one report (positive; a --spec has its own).")
@click.option("--n", "n", type=click.IntRange(min=1), required=True, help="Number of reports expected.")
@click.option("--mechanism", type=click.Choice(CATEGORICAL_MECHANISMS + NUMERIC_MECHANISMS + ("auto",)),
              help="One mechanism; default: compare all that apply.")
@click.option("--domain-size", type=click.IntRange(min=2), help="Number of categories (categorical campaigns).")
@click.option("--range", "value_range", type=(float, float), help="LOW HIGH of a numeric campaign.")
@click.option("--confidence", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.95,
              show_default=True, help="Confidence level of the intervals.")
@click.option("--target-halfwidth", type=click.FloatRange(0, min_open=True),
              help="Also print the n needed for a CI half-width this small (a fraction, or range units).")
@click.option("--spec", "spec_file", type=click.File("r"),
              help="A campaign spec (JSON) whose kind answers (quantiles: each quantile's interval in value units).")
@click.option("--quantile", "quantiles", type=click.FloatRange(0, 1, min_open=True, max_open=True), multiple=True,
              help="With --spec of a quantiles campaign: a quantile to plan (repeatable; default p50 p90 p95 p99).")
@click.option("--assume", help="With --spec: the assumed distribution (uniform, normal:MEAN,SD, lognormal:MU,SIGMA, "
                               "or a report's JSON file of a pilot campaign); default uniform.")
@click.option("--share", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.9, show_default=True,
              help="With --spec: the share of runs whose half-width the plan bounds.")
@click.option("--format", "output_format", type=click.Choice(["table", "json"]), default="table", show_default=True,
              help="Output format.")
@click.option("--frequency", "frequencies", type=float, multiple=True,
              help="With --spec: the n that finds strings of this frequency (repeatable).")
def plan(epsilon: float | None, n: int, mechanism: str | None, domain_size: int | None,
         value_range: tuple[float, float] | None, confidence: float, target_halfwidth: float | None,
         spec_file: Any, frequencies: tuple[float, ...], quantiles: tuple[float, ...], assume: str | None,
         share: float, output_format: str) -> None:
    """Expected standard error and CI half-width per mechanism, against central DP.

    Example: ldp-telemetry plan --epsilon 1 --n 100000 --domain-size 1024 --target-halfwidth 0.005

    With --spec, the campaign's kind answers: the n that finds strings of frequency 0.01
    (ldp-telemetry plan --spec words.json --n 1000000 --frequency 0.01), or the n that gives p95 within +-50 ms:
    ldp-telemetry plan --spec latency.json --n 100000 --quantile 0.95 --assume lognormal:5.3,0.9 --target-halfwidth 50
    """
    if spec_file is not None:
        if epsilon is not None or mechanism or domain_size or value_range:
            raise click.UsageError("--spec gives the epsilon, mechanism and range: drop --epsilon, --mechanism, "
                                   "--domain-size and --range")
        _plan_spec(spec_file.read(), n, dict(confidence=confidence, target_halfwidth=target_halfwidth,
                                             quantiles=quantiles, assume=assume, share=share,
                                             frequencies=frequencies), output_format)
        return
    if epsilon is None:
        raise click.UsageError("Missing option '--epsilon' (or give --spec)")
    from estimators.central import ratio_text
    from estimators.planner import compare_mechanisms
    from estimators.planner import plan as plan_one

    numeric = value_range is not None or (mechanism in NUMERIC_MECHANISMS)
    if numeric and value_range is None:
        raise click.UsageError("numeric mechanisms need --range LOW HIGH")
    if not numeric and domain_size is None:
        raise click.UsageError("categorical mechanisms need --domain-size (or give --range for numbers)")
    if numeric and mechanism in CATEGORICAL_MECHANISMS:
        raise click.UsageError(f"--mechanism {mechanism} is categorical: use --domain-size, not --range")
    options: dict[str, Any] = dict(domain_size=None if numeric else domain_size, value_range=value_range,
                                   confidence=confidence, target_halfwidth=target_halfwidth)
    try:
        plans = [plan_one(mechanism, epsilon, n, **options)] if mechanism else compare_mechanisms(epsilon, n, **options)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    if output_format == "json":
        click.echo(json.dumps([p.to_dict() for p in plans], indent=2))
        return
    what = f"range {value_range[0]:g}..{value_range[1]:g}" if value_range is not None else f"d = {domain_size}"
    click.echo(f"epsilon = {epsilon:g}, n = {n:,}, {what}, {confidence:.0%} intervals for the {plans[0].target}; "
               f"central: {plans[0].central_mechanism}, {plans[0].relation}")
    if numeric:
        click.echo("std error, CI and noise SE: the worst case over the range; LDP/central = noise SE / central SE")
    else:
        click.echo(f"std error and CI: a value of frequency 0; noise SE: privacy noise, RMS over the {domain_size} "
                   "values (any distribution);\nLDP/central = noise SE / central SE")
    header = (f"{'mechanism':<10} {'std error':>11} {'CI +-':>11} {'noise SE':>11} {'central SE':>11} "
              f"{'LDP/central':>12}")
    if target_halfwidth is not None:
        header += f" {'n for +-' + format(target_halfwidth, 'g'):>14}"
    click.echo(header)
    for p in plans:
        line = (f"{p.mechanism:<10} {p.std_error:>11.4g} {p.ci_halfwidth:>11.4g} {p.noise_std_error or 0:>11.4g} "
                f"{p.central_std_error:>11.4g} {ratio_text(p.ldp_to_central_ratio):>12}")
        if p.n_for_target is not None:
            line += f" {p.n_for_target:>14,}"
        click.echo(line)


def _plan_spec(text: str, n: int, question: dict[str, Any], output_format: str) -> None:
    "The spec's kind's plan (estimators.kinds.EstimateKind.plan), as a table or JSON"
    import os

    from client_sdk.errors import SpecError
    from client_sdk.spec import load_spec
    from estimators.kinds import estimate_kind

    assume = question["assume"]
    if assume is not None and os.path.isfile(assume):  # a pilot campaign's report
        with open(assume, encoding="utf-8") as pilot:
            question["assume"] = json.load(pilot)
    try:
        spec = load_spec(text)
        answer = estimate_kind(spec).plan(spec, n, question)
    except SpecError as exc:
        raise click.ClickException(f"--spec: {exc}") from None
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    if output_format == "json":
        click.echo(json.dumps(answer.to_dict(), indent=2))
        return
    click.echo(answer.header)
    for note in answer.notes:
        click.echo(note)
    click.echo("".join(f"{column:>16}" for column in answer.columns))
    for row in answer.rows:
        click.echo("".join(f"{_cell(value):>16}" for value in row))


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:.4g}" if isinstance(value, float) else str(value)
