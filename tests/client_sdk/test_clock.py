"""The one clock: ``client_sdk.clock`` gives the UTC day, and no other module of the project computes it."""

from __future__ import annotations

import datetime as dt
import pathlib
import re
import time

import pytest

from client_sdk import clock

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGES = ("client_sdk", "collector", "estimators", "ldp_telemetry", "demo")
TODAY = re.compile(r"datetime\.now\(|date\.today\(|utcnow\(|utcfromtimestamp\(|strftime\(\"%Y-%m-%d\"")


@pytest.mark.parametrize("moment", [0.0, 86399.999, 86400.0, 951782400.0 - 0.001, 951782400.0, 1735689599.5,
                                    1735689600.0, 4102444800.25])
def test_utc_day_is_the_utc_date_at_every_moment_even_across_midnight(monkeypatch, moment):
    expected = dt.datetime.fromtimestamp(moment, dt.timezone.utc).date().isoformat()
    assert clock.utc_day(moment) == expected
    monkeypatch.setattr(time, "time", lambda: moment + 86400)  # the next day: never the cached text
    assert clock.utc_today() == (dt.date.fromisoformat(expected) + dt.timedelta(days=1)).isoformat()


def test_no_other_module_computes_the_utc_day():
    paths = [path for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py")) if path.name != "clock.py"]
    found = [f"{path.relative_to(ROOT)}:{number}" for path in paths
             for number, line in enumerate(path.read_text().splitlines(), 1) if TODAY.search(line)]
    assert found == [], found
