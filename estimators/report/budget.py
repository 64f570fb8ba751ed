"""The release ledger's line in a report's header (``collector.reporting`` puts the ledger's figures, the answer of
``GET /v1/campaigns/NAME/budget``, at the estimate's ``budget``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def budget_line(view: Mapping[str, Any]) -> str:
    "One line for a report's header: what a device has spent (tight and basic) and what remains of the budget"
    basic, tight = view["spent"]["basic"], view["spent"]["tight"]
    line = (f"privacy spent per device over {view['charges']} release charge(s): epsilon {tight['epsilon']:.4g} "
            f"(tight, {tight['bound']}, delta {tight['delta']:.3g}), {basic['epsilon']:.4g} (basic composition)")
    budget = view.get("budget")
    if budget is None:
        return line + "; no budget set"
    return line + (f"; budget epsilon {budget['epsilon']:g}: {view['remaining']['epsilon']:.4g} remains "
                   "(by basic composition, the rule devices stop at)")
