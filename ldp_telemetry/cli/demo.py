"""``ldp-telemetry demo``: the whole system in one command (``demo.run``)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

# Function-level imports: the command imports the demo when it runs: its `--help` does not load it
# (+700 ms, 420 modules).


@click.command()
@click.option("--users", type=click.IntRange(min=10), default=2000, show_default=True,
              help="Number of simulated users (each reports once to every campaign).")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=Path("ldp-demo-output"),
              show_default=True, help="Folder for the HTML, Markdown and JSON reports.")
@click.option("--bulk", is_flag=True,
              help="Draw the reports with the vectorised simulator and send them through the batch API "
                   "instead of one SDK client per user (for large --users, e.g. 1000000).")
@click.option("--seed", type=int, default=None, help="Seed of the simulated population (default: random).")
@click.option("--workdir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Folder for the run's throwaway files (collector databases, the simulated devices' state); "
                   "the demo works in a subfolder of it and deletes that at the end.  "
                   "[default: /dev/shm (in RAM) where it has 512 MiB free, else the system's temporary folder]")
def demo(users: int, out_dir: Path, bulk: bool, seed: int | None, workdir: Path | None) -> None:
    """Start a collector on loopback, let simulated users report through the SDK, and write reports.

    Everything runs on this machine. The collector databases and the simulated devices' state go to a temporary
    folder, in RAM (/dev/shm) where there is room, else the system's temporary folder (--workdir puts it
    elsewhere); nothing of it outlives the run. Only the reports in --out remain.
    """
    from demo.run import run_demo
    from demo.summary import format_summary

    click.echo(f"Writing reports to {out_dir.resolve()}", err=True)
    try:
        result = run_demo(users, out_dir, bulk=bulk, seed=seed, progress=_progressbar, workdir=workdir)
    except (OSError, RuntimeError) as exc:  # includes requests' errors; one line, exit 1
        raise click.ClickException(f"the demo failed: {exc}") from None
    click.echo(format_summary(result))


def _progressbar(total: int, label: str) -> Any:
    "A progress bar on stderr (click draws it only on a terminal)"
    return click.progressbar(length=total, label=label, file=sys.stderr, show_pos=True)
