"""The ldp-telemetry collector: a Flask service that authenticates, validates and stores perturbed reports,
keeps per-day aggregates and answers estimate queries (see docs/api.md)."""

from .app import create_app

__all__ = ["create_app"]
