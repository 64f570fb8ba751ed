"""The CLI's start-up machinery behaves: lazy packages still offer their names, the static help matches the commands,
deprecated names still run.  Its import-graph budget is tests/budgets/test_cli_startup.py."""

from __future__ import annotations

import click
import pytest

from ldp_telemetry.cli import COMMANDS, main


def test_the_collector_package_still_offers_create_app():
    import collector
    from collector.app import create_app

    assert collector.create_app is create_app and "create_app" in collector.__all__
    with pytest.raises(AttributeError, match="no attribute 'create_ap'"):
        collector.create_ap  # noqa: B018


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_static_help_is_the_commands_own(name):
    "--help lists commands without importing them, so the registered one-liners must match the commands"
    command = main.get_command(click.Context(main), name)
    assert command is not None
    assert COMMANDS[name][2] == command.get_short_help_str(limit=1000)


def test_a_deprecated_name_runs_its_command_hidden_and_says_which_to_use():
    "`aggregate` (the leader's jobs) read like `aggregates` (local aggregates): its name is now run-jobs"
    from click.testing import CliRunner

    old = CliRunner().invoke(main, ["aggregate", "--help"])
    assert old.exit_code == 0 and "Run the pending aggregation jobs" in old.stdout
    assert "'ldp-telemetry aggregate' is deprecated; use 'ldp-telemetry run-jobs'" in old.stderr
    listed = CliRunner().invoke(main, ["--help"]).stdout
    assert "  run-jobs " in listed and "  aggregates " in listed and "  aggregate " not in listed
