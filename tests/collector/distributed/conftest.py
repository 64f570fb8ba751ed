"""Each test starts with the collector's clock of days where it found it (``Pair.end_day`` moves it on)."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _clock_of_days(monkeypatch: pytest.MonkeyPatch) -> None:
    from collector import auth

    monkeypatch.setattr(auth, "CLOCK_OFFSET", auth.CLOCK_OFFSET)  # restored after the test
