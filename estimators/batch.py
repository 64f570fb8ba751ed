"""Columnar report batches: the payloads of many reports as numpy arrays, one layout per mechanism.

``parse_payloads`` turns JSON payloads (as the SDK sends them) into a batch, checking each one with the
mechanism's ``check_payload`` (the collector's check too) unless ``checked=True`` says that was done;
``ReportBatch.to_payloads`` goes back.  The simulator produces batches directly, so a million simulated reports
never become Python objects unless asked to.  The layouts are documented per family in
``estimators.mechanisms``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .registry import ReportBatch, mechanism_for


def parse_payloads(spec: Any, payloads: Sequence[Any], *, checked: bool = False) -> ReportBatch:
    "A batch from JSON payloads; PayloadError names the first bad one (``payloads[i]...``)"
    return mechanism_for(spec).parse(payloads, checked=checked)


__all__ = ["ReportBatch", "parse_payloads"]
