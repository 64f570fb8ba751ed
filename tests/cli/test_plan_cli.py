import json

from click.testing import CliRunner

from ldp_telemetry.cli import main


def table_rows(output: str) -> list[str]:
    "The table's rows, after its header line"
    lines = output.splitlines()
    return lines[[line.split()[0] for line in lines].index("mechanism") + 1:]


def test_plan_prints_the_estimate_s_ratio_and_says_what_it_assumes():
    "issue 31: GRR, eps 4, n 1e4, d 8: 26.5 (the RMS over values, the estimate's), not 20.5 (a value at f = 0)"
    result = CliRunner().invoke(main, ["plan", "--epsilon", "4", "--n", "10000", "--domain-size", "8",
                                       "--mechanism", "grr"])
    assert result.exit_code == 0, result.output
    row = table_rows(result.output)[0].split()
    assert row[0] == "grr" and row[-1] == "26.5"
    assert "RMS over the 8 values (any distribution)" in result.output
    assert "std error and CI: a value of frequency 0" in result.output


def test_plan_compares_mechanisms():
    result = CliRunner().invoke(main, ["plan", "--epsilon", "1", "--n", "100000", "--domain-size", "1024",
                                       "--target-halfwidth", "0.005"])
    assert result.exit_code == 0, result.output
    rows = table_rows(result.output)
    assert rows[0].split()[0] in ("oue", "olh") and "grr" in rows[-1]


def test_plan_json_for_numbers():
    result = CliRunner().invoke(main, ["plan", "--epsilon", "2", "--n", "1000", "--range", "0", "5000",
                                       "--format", "json"])
    assert result.exit_code == 0
    rows = json.loads(result.output)
    assert rows[0]["mechanism"] == "hybrid" and rows[0]["std_error"] > 0


def test_plan_auto_with_a_range_and_the_stated_relation():
    "issue 22: numeric 'auto' plans the best mean mechanism; the header names the target and the relation"
    result = CliRunner().invoke(main, ["plan", "--epsilon", "2", "--n", "1000", "--range", "0", "5000",
                                       "--mechanism", "auto"])
    assert result.exit_code == 0, result.output
    assert table_rows(result.output)[0].split()[0] == "hybrid"
    assert "replace-one" in result.output.splitlines()[0] and "population" in result.output.splitlines()[0]


def test_plan_usage_errors_exit_2():
    assert CliRunner().invoke(main, ["plan", "--epsilon", "1", "--n", "10"]).exit_code == 2
    assert CliRunner().invoke(main, ["plan", "--epsilon", "1", "--n", "0", "--domain-size", "4"]).exit_code == 2
    bad = CliRunner().invoke(main, ["plan", "--epsilon", "-1", "--n", "10", "--domain-size", "4"])
    assert bad.exit_code == 1 and "epsilon" in bad.output


def test_every_command_has_help():
    runner = CliRunner()
    for name in main.list_commands(None):
        result = runner.invoke(main, [name, "--help"])
        assert result.exit_code == 0 and len(result.output) > 50, name
