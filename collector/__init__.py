"""The ldp-telemetry collector: a Flask service that authenticates, validates and stores perturbed reports,
keeps per-day aggregates and answers estimate queries (see docs/api.md).

``create_app`` is loaded on first use (PEP 562), so the commands that only open the database (``keys list``,
``report --db``) import neither Flask nor the API modules."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .app import create_app

__all__ = ["create_app"]


def __getattr__(name: str) -> Any:
    if name == "create_app":
        # imported on first use: Flask and the API (+230 ms) only when an app is made (module docstring)
        from .app import create_app

        return create_app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
