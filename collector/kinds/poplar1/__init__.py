"""The poplar1 kind, collector side: the aggregators' rules on their own records (``rules``), one aggregator's
batched preparation of a level with its noise (``prepare``), the leader's walk (``walk.walk``), their messages
and stores (``levels``, ``store``), the helper's and the leader's requests (``helper``, ``leader``), the routes
(``api``) and the registration (``kind``).

The names below load with their first use: the registry imports ``kind`` at start-up, which needs none of them
(the report command's module budget, tests/budgets)."""

from __future__ import annotations

from importlib import import_module
from typing import Any

_WHERE = {"Poplar1Aggregator": "prepare", "LevelRecords": "rules", "LevelRefusal": "rules", "LevelRefused": "rules",
          "check_level": "rules", "LevelRelease": "walk", "WalkRelease": "walk", "extensions": "walk"}
__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(name)
    return getattr(import_module(f".{_WHERE[name]}", __name__), name)
