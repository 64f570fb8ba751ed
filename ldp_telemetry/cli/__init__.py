"""The ``ldp-telemetry`` command: a thin click layer over the libraries.

Each command group lives in its own module and is registered here; the modules import their libraries lazily so
``ldp-telemetry --help`` stays fast.  Exit codes: 0 success, 1 runtime error (one line on stderr), 2 usage error.
"""

from __future__ import annotations

import importlib

import click

from .. import __version__

# command name -> (module, attribute); a module that is not there yet is skipped
COMMANDS = {
    "plan": ("ldp_telemetry.cli.plan", "plan"),
    "rappor": ("ldp_telemetry.cli.rappor", "rappor"),
    "serve": ("ldp_telemetry.cli.collector", "serve"),
    "keys": ("ldp_telemetry.cli.collector", "keys"),
    "campaign": ("ldp_telemetry.cli.collector", "campaign"),
    "aggregates": ("ldp_telemetry.cli.collector", "aggregates"),
    "report": ("ldp_telemetry.cli.report", "report"),
    "demo": ("ldp_telemetry.cli.demo", "demo"),
    "vdaf": ("ldp_telemetry.cli.vdaf", "vdaf"),
}


class LazyGroup(click.Group):
    "Loads each command's module only when that command (or the full help) is needed"

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(name for name in COMMANDS if self.get_command(ctx, name) is not None)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS:
            return None
        module_name, attribute = COMMANDS[name]
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name == module_name:
                return None
            raise
        return getattr(module, attribute, None)


@click.group(cls=LazyGroup)
@click.version_option(__version__, prog_name="ldp-telemetry")
def main() -> None:
    "Telemetry under local differential privacy: SDK, collector, estimators and reports."
