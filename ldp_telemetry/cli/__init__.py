"""The ``ldp-telemetry`` command: a thin click layer over the libraries.

Each command group lives in its own module and is registered here with its one-line help, so that
``ldp-telemetry --help`` imports no command module at all, and a command imports only its own module.  The
modules import their libraries inside the command functions (numpy, the collector, the estimators; scipy and
matplotlib only where a command needs them), which keeps ``keys list`` and ``report`` quick to start; a test
checks the import graph.  Exit codes: 0 success, 1 runtime error (one line on stderr), 2 usage error.
"""

from __future__ import annotations

import importlib

import click

from .. import __version__

# command name -> (module, attribute, one-line help as the command states it; a test keeps the two equal)
COMMANDS = {
    "plan": ("ldp_telemetry.cli.plan", "plan",
             "Expected standard error and CI half-width per mechanism, against central DP."),
    "poplar1": ("ldp_telemetry.cli.poplar1", "poplar1",
                "Poplar1 campaigns (distributed heavy hitters): walk a batch with the leader and the helper."),
    "rappor": ("ldp_telemetry.cli.rappor", "rappor",
               "RAPPOR tools that read and write the reference implementation's params, counts and map CSV files."),
    "serve": ("ldp_telemetry.cli.collector", "serve", "Run the collector under gunicorn until interrupted."),
    "keys": ("ldp_telemetry.cli.collector", "keys",
             "Create, list and revoke API keys (the database keeps only their hashes)."),
    "campaign": ("ldp_telemetry.cli.collector", "campaign",
                 "Create, list, show and close campaigns (local --db, or a running collector with --url and --token)."),
    "aggregates": ("ldp_telemetry.cli.collector", "aggregates", "Maintain the per-day aggregates."),
    "hpke-keys": ("ldp_telemetry.cli.hpke", "hpke_keys",
                  "Rotate and list a leader's or helper's HPKE keys (the keys devices seal reports to)."),
    "run-jobs": ("ldp_telemetry.cli.collector", "run_jobs",
                 "Run the pending aggregation jobs of this leader once (exit 1 if the helper does not answer)."),
    "report": ("ldp_telemetry.cli.report", "report",
               "Estimates of CAMPAIGN with standard errors, intervals and the price against central DP."),
    "demo": ("ldp_telemetry.cli.demo", "demo",
             "Start a collector on loopback, let simulated users report through the SDK, and write reports."),
    "export": ("ldp_telemetry.cli.archive", "export",
               "Export CAMPAIGN's raw perturbed reports as Parquet, one file per version and day; rerunning is "
               "idempotent."),
    "spark": ("ldp_telemetry.cli.archive", "spark",
              "Re-aggregate archived reports on Apache Spark (needs the archive extra and Java 17)."),
    "vdaf": ("ldp_telemetry.cli.vdaf", "vdaf",
             "Prio3 verifiable distributed aggregation (draft-irtf-cfrg-vdaf-20)."),
}
# old name -> the command to use: still runs (hidden from --help) and says which to use; `aggregate` read too much
# like `aggregates`, a different job (rebuilding the per-day aggregates of local campaigns)
DEPRECATED = {"aggregate": "run-jobs"}


class LazyGroup(click.Group):
    "Loads a command's module only when that command runs; the command list is written from ``COMMANDS``"

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in DEPRECATED:
            click.echo(f"Warning: 'ldp-telemetry {name}' is deprecated; use 'ldp-telemetry {DEPRECATED[name]}'.",
                       err=True)
            name = DEPRECATED[name]
        if name not in COMMANDS:
            return None
        module_name, attribute = COMMANDS[name][:2]
        return getattr(importlib.import_module(module_name), attribute, None)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        limit = formatter.width - 6 - max(len(name) for name in COMMANDS)
        rows = [(name, click.Command(name, help=self._short_help(ctx, name)).get_short_help_str(limit))
                for name in sorted(COMMANDS)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


    def _short_help(self, ctx: click.Context, name: str) -> str:
        entry = COMMANDS[name]
        if len(entry) > 2:
            return entry[2]
        command = self.get_command(ctx, name)  # registered without its help: load it
        return command.get_short_help_str(limit=1000) if command is not None else ""


@click.group(cls=LazyGroup)
@click.version_option(__version__, prog_name="ldp-telemetry")
def main() -> None:
    "Telemetry under local differential privacy: SDK, collector, estimators and reports."
