"""The device tests' fake collector as fixtures: ``fake`` lists SPEC and ``listed_campaigns`` (none unless a module
overrides that fixture)."""

from __future__ import annotations

import pytest

from .fakes import FakeCollector


@pytest.fixture
def listed_campaigns() -> list[dict]:
    "Items the fake collector lists after SPEC's; override in a module to list more (``fakes.listing(spec)``)"
    return []


@pytest.fixture
def fake(listed_campaigns: list[dict]) -> FakeCollector:
    collector = FakeCollector()
    collector.extra_campaigns = list(listed_campaigns)
    return collector
