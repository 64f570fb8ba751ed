"""``ldp-telemetry rappor``: decode RAPPOR counts and hash candidates, with the reference tools' file formats."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import click

PARAMS_OPTION = click.option(
    "--params",
    "params_path",
    required=True,
    type=click.Path(exists=True, dir_okay=False),
    help="Params CSV: header k,h,m,p,q,f and one row of values.",
)
OUT_OPTION = click.option(
    "--out",
    "out_path",
    type=click.Path(dir_okay=False, writable=True),
    help="Write the output to this file instead of standard output.",
)


def _emit(text: str, out_path: str | None) -> None:
    "``text`` to ``out_path``, or to standard output"
    if out_path:
        with open(out_path, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
    else:
        click.echo(text, nl=False)


@click.group()
def rappor() -> None:
    "RAPPOR tools that read and write the reference implementation's params, counts and map CSV files."


@rappor.command()
@PARAMS_OPTION
@click.option(
    "--counts",
    "counts_path",
    required=True,
    type=click.Path(exists=True, dir_okay=False),
    help="Counts CSV: one row per cohort, the number of reports then the k bit counts.",
)
@click.option(
    "--map",
    "map_path",
    type=click.Path(exists=True, dir_okay=False),
    help="Map CSV: a candidate string, then its h*m 1-based Bloom rows (as hash-candidates writes).",
)
@click.option(
    "--candidates",
    "candidates_path",
    type=click.Path(exists=True, dir_okay=False),
    help="Candidate strings, one per line; hashed here instead of reading a map.",
)
@OUT_OPTION
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["table", "json", "csv"]),
    default="table",
    show_default=True,
    help="table for people, json for programs, csv in the reference decoder's columns.",
)
@click.option(
    "--alpha",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.05,
    show_default=True,
    help="Family-wise false-detection rate, split over the candidates (Bonferroni).",
)
@click.option(
    "--resamples",
    type=click.IntRange(min=0),
    default=20,
    show_default=True,
    help="Refits on resampled counts used for the standard errors.",
)
@click.option(
    "--seed", type=int, default=0, show_default=True, help="Seed of the resampling, for reproducibility."
)
@click.option(
    "--basic",
    is_flag=True,
    help="Basic RAPPOR (h = 1, no hashing): bit i of the filter is the i-th line of --candidates.",
)
def decode(
    params_path: str,
    counts_path: str,
    map_path: str | None,
    candidates_path: str | None,
    out_path: str | None,
    output_format: str,
    alpha: float,
    resamples: int,
    seed: int,
    basic: bool,
) -> None:
    """Estimate which candidate strings were reported, and how often, from aggregated RAPPOR counts.

    Give either --map or --candidates (neither for boolean RAPPOR, k = 1).  Only candidates that clear the
    detection threshold are listed; with too little data nothing is listed and a note goes to standard error."""
    from client_sdk.errors import SpecError
    from client_sdk.rappor import RapporParams
    from estimators.rappor import (
        RapporFileError,
        decode_rappor,
        read_candidates,
        read_counts_csv,
        read_map_csv,
        read_params_csv,
    )

    if map_path and candidates_path:
        raise click.UsageError("give --map or --candidates, not both")
    try:
        params = read_params_csv(params_path)
        if basic:
            if map_path:
                raise click.UsageError("--basic takes --candidates (bit i is the i-th line), not --map")
            params = RapporParams.from_dict({**params.to_dict(), "encoding": "basic"})
        if not (map_path or candidates_path) and params.encoding != "boolean":
            raise click.UsageError("give --map or --candidates (only boolean RAPPOR, k = 1, needs neither)")
        counts = read_counts_csv(counts_path, params)
        candidates: Any = None
        if map_path:
            candidates = read_map_csv(map_path, params)
        elif candidates_path:
            candidates = read_candidates(candidates_path)
        result = decode_rappor(params, counts, candidates, alpha=alpha, resamples=resamples, seed=seed)
    except (RapporFileError, SpecError, ValueError, OSError) as exc:
        raise click.ClickException(str(exc)) from None
    if result.status != "ok":
        click.echo(f"note: {result.message}; no candidates reported", err=True)
    _emit(_render(result, output_format), out_path)


@rappor.command("hash-candidates")
@PARAMS_OPTION
@click.option(
    "--candidates",
    "candidates_path",
    required=True,
    type=click.Path(exists=True, dir_okay=False),
    help="Candidate strings, one per line.",
)

# Function-level imports: each command imports the RAPPOR decoder when it runs: its `--help` does not load it
# (+300 ms, 155 modules).
@OUT_OPTION
def hash_candidates(params_path: str, candidates_path: str, out_path: str | None) -> None:
    "Write the map CSV for a list of candidates (the reference's hash_candidates.py, same output)."
    from estimators.rappor import (
        CandidateMap,
        RapporFileError,
        read_candidates,
        read_params_csv,
        write_map_csv,
    )

    try:
        params = read_params_csv(params_path)
        candidate_map = CandidateMap.from_candidates(params, read_candidates(candidates_path))
    except (RapporFileError, ValueError, OSError) as exc:
        raise click.ClickException(str(exc)) from None
    buffer = io.StringIO()
    write_map_csv(candidate_map, buffer)
    _emit(buffer.getvalue(), out_path)


def _render(result: Any, output_format: str) -> str:
    "The result as a table, JSON or the reference decoder's CSV"
    from estimators.rappor.decode import REFERENCE_COLUMNS

    if output_format == "json":
        return json.dumps(result.to_dict(), indent=2, allow_nan=False) + "\n"
    rows = result.rows()
    if output_format == "csv":
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=list(REFERENCE_COLUMNS), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
        return buffer.getvalue()
    return _table(result, rows)


def _table(result: Any, rows: list[dict]) -> str:
    "A fixed-width table of the detected candidates under a short summary"
    summary = (
        f"reports {result.reports:,}  candidates {result.candidates:,}  detected {len(rows)}  "
        f"allocated mass {result.allocated_mass:.4f}\n"
        f"epsilon_1 {_number(result.epsilon_one)}  epsilon_inf {_number(result.epsilon_inf)}  "
        f"detection frequency {_number(result.detection_frequency)}\n"
    )
    if result.status != "ok":
        summary += f"{result.message}\n"
    header = (
        f"{'string':<30} {'estimate':>12} {'std_error':>10} {'proportion':>10} {'low_95':>8} {'high_95':>8}"
    )
    lines = [summary, header, "-" * len(header)]
    for row in rows:
        lines.append(
            f"{row['string'][:30]:<30} {row['estimate']:>12,.0f} {_number(row['std_error'], 10)} "
            f"{row['proportion']:>10.4f} {row['prop_low_95']:>8.4f} {row['prop_high_95']:>8.4f}"
        )
    return "\n".join(lines) + "\n"


def _number(value: float | None, width: int = 0) -> str:
    text = "inf" if value is None or value == float("inf") else f"{value:.4g}"
    return f"{text:>{width}}"
