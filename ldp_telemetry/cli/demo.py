"""``ldp-telemetry demo``: the whole system in one command (``demo.run``)."""

from __future__ import annotations

import signal
import sys
import threading
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
@click.option("--serve", is_flag=True,
              help="Once the reports are written, keep the local collector (and its temporary database) running and "
                   "print its dashboard's address and the admin key; Ctrl-C (or SIGTERM) stops it and deletes "
                   "the temporary folder.")
def demo(users: int, out_dir: Path, bulk: bool, seed: int | None, workdir: Path | None, serve: bool) -> None:
    """Start a collector on loopback, let simulated users report through the SDK, and write reports.

    Everything runs on this machine. The collector databases and the simulated devices' state go to a temporary
    folder, in RAM (/dev/shm) where there is room, else the system's temporary folder (--workdir puts it
    elsewhere); nothing of it outlives the run. Only the reports in --out remain. With --serve the local
    collector serves its dashboard until Ctrl-C.
    """
    from demo.run import run_demo
    from demo.summary import format_summary

    click.echo(f"Writing reports to {out_dir.resolve()}", err=True)
    try:
        result = run_demo(users, out_dir, bulk=bulk, seed=seed, progress=_progressbar, workdir=workdir,
                          hold=_serve_until_stopped if serve else None)
    except (OSError, RuntimeError) as exc:  # includes requests' errors; one line, exit 1
        raise click.ClickException(f"the demo failed: {exc}") from None
    if not serve:  # --serve printed it before serving
        click.echo(format_summary(result))


def _serve_until_stopped(result: Any, admin_key: str) -> None:
    """The summary, then the dashboard's address and the admin key; returns on Ctrl-C or SIGTERM (the demo then
    stops its collector and deletes its temporary folder)"""
    from demo.summary import format_summary

    click.echo(format_summary(result))
    click.echo(f"dashboard: {result.url}/dashboard/ (admin key: {admin_key})")
    click.echo("The collector serves until Ctrl-C; then it stops and its temporary database is deleted.")
    sys.stdout.flush()
    stopped = threading.Event()
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: stopped.set())
    try:
        while not stopped.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
    click.echo("stopping the collector", err=True)


def _progressbar(total: int, label: str) -> Any:
    "A progress bar on stderr (click draws it only on a terminal)"
    return click.progressbar(length=total, label=label, file=sys.stderr, show_pos=True)
