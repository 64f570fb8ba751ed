"""The terminal table: header facts, columns, and the marking of values not distinguishable from zero."""

from estimators.report import ReportData, render_table, value_rows
from estimators.report.table import BELOW_ZERO_MARK, ZERO_MARK

from .report_fixtures import browser_data, load_time_result, rappor_result


def test_header_states_mechanism_epsilon_n_window_and_ratio():
    data = browser_data()
    text = render_table(data)
    header = text.split("\n\n")[0]
    assert "mechanism oue" in header and "epsilon 1" in header
    assert f"n = {data.result['n']:,} reports" in header
    assert "2025-03-01 to 2025-03-03" in header
    assert f"LDP/central ratio {data.result['central_dp']['ldp_to_central_ratio']:,.1f}" in header


def test_table_has_one_row_per_value_with_estimate_se_ci_and_norm_sub():
    text = render_table(browser_data())
    lines = text.splitlines()
    columns_line = next(line for line in lines if line.startswith("value"))
    assert columns_line.split() == ["value", "estimate", "std", "error", "CI", "low", "CI", "high", "Norm-Sub"]
    for value in ("chrome", "safari", "edge", "firefox", "other"):
        assert any(line.startswith(value) for line in lines)


def test_values_whose_interval_includes_zero_are_marked():
    data = browser_data()
    rows = {row.value: row for row in value_rows(data.result)}
    lines = {line.split()[0]: line for line in render_table(data).splitlines() if line.split()}
    assert rows["chrome"].ci_low > 0 and not lines["chrome"].endswith(ZERO_MARK)
    assert rows["other"].includes_zero and lines["other"].endswith(ZERO_MARK)
    assert "includes 0 (not distinguishable from 0)" in render_table(data)


def test_interval_entirely_below_zero_is_marked_as_noise():
    result = {"kind": "frequency", "campaign": "c", "mechanism": "grr", "epsilon": 1.0, "n": 100,
              "confidence": 0.95,
              "values": [{"value": "a", "estimate": -0.2, "std_error": 0.05, "ci_low": -0.3, "ci_high": -0.1}]}
    text = render_table(ReportData(result))
    assert text.splitlines()[-3].endswith(BELOW_ZERO_MARK) or BELOW_ZERO_MARK in text
    assert "entirely below 0" in text


def test_numeric_table_shows_mean_ci_and_central_halfwidth():
    result = load_time_result()
    text = render_table(ReportData(result))
    assert "mean estimate, mechanism hybrid" in text
    assert "central DP CI +-" in text
    assert f"{result['mean']:.4f}" in text or f"{result['mean']:.4g}" in text


def test_rappor_rows_show_proportions_not_counts():
    result = rappor_result()
    text = render_table(ReportData(result))
    assert "n = 5,000 reports" in text and f"epsilon {result['epsilon_one']:.4g}" in text
    line = next(line for line in text.splitlines() if line.startswith("5.2.0"))
    assert line.split()[1:5] == ["0.4100", "0.0300", "0.3500", "0.4700"]
    assert next(line for line in text.splitlines() if line.startswith("5.1.3")).endswith(ZERO_MARK)
    assert not any(line.startswith("4.9.9") for line in text.splitlines())  # only detected candidates are rows
    assert "together they hold 0.4300 of the reports" in text


def test_insufficient_data_status_is_stated():
    result = {**rappor_result(), "status": "insufficient_data", "message": "too little data", "values": []}
    assert "status insufficient_data: too little data" in render_table(ReportData(result))


def test_one_number_format_per_column():
    "issue 31: a CI bound of 0.000999 among 4-decimal cells printed 9.990e-04; every format shares the table"
    result = {"kind": "frequency", "campaign": "c", "mechanism": "grr", "epsilon": 1.0, "n": 100,
              "confidence": 0.95,
              "values": [{"value": "a", "estimate": 0.31, "std_error": 0.05, "ci_low": 0.000999, "ci_high": 0.41},
                         {"value": "b", "estimate": 0.0412, "std_error": 0.0004, "ci_low": -0.0815,
                          "ci_high": 0.1637}]}
    lines = render_table(ReportData(result)).splitlines()
    rows = [line.split() for line in lines if line.split() and line.split()[0] in ("a", "b")]
    for column in range(1, 5):
        cells = [row[column] for row in rows]
        assert not any("e" in cell for cell in cells), cells
        assert len({len(cell.split(".")[1]) for cell in cells}) == 1, cells  # the same decimals down the column
    assert rows[0][3] == "0.0010" and rows[1][2] == "0.0004"
    tiny = {**result, "values": [{"value": "a", "estimate": 2e-5, "std_error": 3e-6, "ci_low": 1e-6,
                                  "ci_high": 4e-5}]}
    assert next(line for line in render_table(ReportData(tiny)).splitlines() if line.startswith("a")).split()[1] \
        == "2.000e-05"
