"""Spec cases for the envelope's ``budget`` (``client_sdk.budget``) and the local kind's trust ``shuffled``
(``client_sdk.kinds.shuffle_params``): valid specs with their fingerprints, invalid ones with the field each error
names.  The local ones join ``conformance/local/specs.json``; a distributed budget (whose charge has a delta) is in
``conformance/prio3/specs.json``."""

from __future__ import annotations

from typing import Any

_DOMAIN = ["chrome", "firefox", "safari", "edge", "other"]
_GRR = {"name": "c", "mechanism": "grr", "epsilon": 1.0, "domain": ["a", "b"]}
_SHUFFLED = {**_GRR, "trust": "shuffled", "shuffle_batch": 100}
_PRIO3 = {"name": "crashed", "trust": "distributed", "prio3": "count", "epsilon": 1.0, "delta": 1e-6,
          "noise": "gaussian"}

LOCAL_VALID: list[dict[str, Any]] = [
    {"name": "budgeted", "mechanism": "grr", "epsilon": 1.0, "domain": _DOMAIN, "budget": {"epsilon": 10}},
    {"name": "budgeted", "mechanism": "grr", "epsilon": 1.0, "domain": _DOMAIN, "budget": {"epsilon": 10.0}},
    {"name": "budgeted_d", "mechanism": "oue", "epsilon": 0.5, "domain": _DOMAIN,
     "budget": {"epsilon": 2.5, "delta": 1e-6}},
    {"name": "one_report", "mechanism": "laplace", "epsilon": 0.7, "range": [0, 10], "budget": {"epsilon": 0.7}},
    {"name": "no_budget", "mechanism": "grr", "epsilon": 1.0, "domain": _DOMAIN, "budget": None},
    {"name": "no_budget", "mechanism": "grr", "epsilon": 1.0, "domain": _DOMAIN, "budget": {"epsilon": 3,
                                                                                             "delta": None}},
    {"name": "rappor_budget", "mechanism": "rappor", "rappor": {"k": 16, "h": 2, "m": 4}, "budget": {"epsilon": 50}},
    {"name": "shuffled", "trust": "shuffled", "mechanism": "grr", "epsilon": 4.0, "domain": _DOMAIN,
     "shuffle_batch": 1000},
    {"name": "shuffled", "trust": "shuffled", "mechanism": "grr", "epsilon": 4.0, "domain": _DOMAIN,
     "shuffle_batch": 1000, "short_batch": "hold", "shuffle_timeout": None},
    {"name": "shuffled_send", "trust": "shuffled", "mechanism": "olh", "epsilon": 2.0, "domain": list(range(8)),
     "shuffle_batch": 2, "shuffle_timeout": 3600, "short_batch": "send"},
    {"name": "shuffled_hold", "trust": "shuffled", "mechanism": "piecewise", "epsilon": 1.5, "range": [0, 100],
     "unit": "ms", "shuffle_batch": 1_000_000, "shuffle_timeout": 0.25},
    {"name": "shuffled_auto", "trust": "shuffled", "mechanism": "auto", "epsilon": 1.0, "domain": list(range(12)),
     "shuffle_batch": 500, "shuffle_timeout": 2592000, "budget": {"epsilon": 30, "delta": 1e-9}},
    {"name": "shuffled_rappor", "trust": "shuffled", "mechanism": "rappor", "rappor": {"k": 16, "h": 2, "m": 4},
     "shuffle_batch": 10},
    # a JSON number with no fractional part is that integer in both SDKs (JSON.parse reads 2.0 as 2)
    {"name": "shuffled", "trust": "shuffled", "mechanism": "grr", "epsilon": 4.0, "domain": _DOMAIN,
     "shuffle_batch": 1000.0},
    {"name": "shuffled_send", "trust": "shuffled", "mechanism": "olh", "epsilon": 2.0, "domain": list(range(8)),
     "shuffle_batch": 2.0, "shuffle_timeout": 3600, "short_batch": "send"},
]

LOCAL_INVALID: list[Any] = [
    {**_GRR, "budget": "10"},
    {**_GRR, "budget": [10]},
    {**_GRR, "budget": {}},
    {**_GRR, "budget": {"epsilon": 0}},
    {**_GRR, "budget": {"epsilon": -1}},
    {**_GRR, "budget": {"epsilon": "10"}},
    {**_GRR, "budget": {"epsilon": True}},
    {**_GRR, "budget": {"epsilon": None}},
    {**_GRR, "budget": {"epsilon": 10, "delta": 0}},
    {**_GRR, "budget": {"epsilon": 10, "delta": 1}},
    {**_GRR, "budget": {"epsilon": 10, "delta": "1e-6"}},
    {**_GRR, "budget": {"epsilon": 10, "colour": 1, "zeta": 2}},
    {**_GRR, "budget": {"epsilon": 0.5}},
    {**_GRR, "budget": {"epsilon": 0.999}},
    {**_GRR, "budget": {"epsilon": 10}, "epsilon": 25},
    {**_GRR, "shuffle_batch": 100},
    {**_GRR, "short_batch": "send", "shuffle_timeout": 5},
    {**_GRR, "trust": "local", "shuffle_timeout": 5},
    {**_GRR, "trust": "shuffled"},
    {**_GRR, "trust": "shuffled", "mechanism": "gaussian"},
    {**_SHUFFLED, "shuffle_batch": 1},
    {**_SHUFFLED, "shuffle_batch": 1_000_001},
    {**_SHUFFLED, "shuffle_batch": "100"},
    {**_SHUFFLED, "shuffle_batch": True},
    {**_SHUFFLED, "shuffle_batch": 10.5},
    {**_SHUFFLED, "shuffle_batch": 2.5},
    {**_SHUFFLED, "shuffle_batch": 1.0},
    {**_SHUFFLED, "shuffle_batch": 1000001.0},
    {**_SHUFFLED, "shuffle_batch": 1e300},
    {**_SHUFFLED, "shuffle_batch": -2.0},
    {**_SHUFFLED, "shuffle_batch": None},
    {**_SHUFFLED, "shuffle_timeout": 0},
    {**_SHUFFLED, "shuffle_timeout": -5},
    {**_SHUFFLED, "shuffle_timeout": 2592000.5},
    {**_SHUFFLED, "shuffle_timeout": "60"},
    {**_SHUFFLED, "shuffle_timeout": True},
    {**_SHUFFLED, "short_batch": "drop"},
    {**_SHUFFLED, "short_batch": None},
    {**_SHUFFLED, "short_batch": "send"},
    {**_SHUFFLED, "short_batch": "send", "shuffle_timeout": None},
    {**_SHUFFLED, "epsilon": 0.001},
    {**_SHUFFLED, "domain": ["a"]},
    {**_SHUFFLED, "budget": {"epsilon": 0.5}},
    {**_SHUFFLED, "colour": "red"},
]

PRIO3_VALID: list[dict[str, Any]] = [
    _PRIO3,
    {**_PRIO3, "budget": {"epsilon": 365}},
    {**_PRIO3, "budget": {"epsilon": 365, "delta": 1e-4}},
    {**_PRIO3, "budget": {"epsilon": 1, "delta": 1e-6}},
]

PRIO3_INVALID: list[Any] = [
    {**_PRIO3, "budget": {"epsilon": 365, "delta": 1e-7}},
    {**_PRIO3, "budget": {"epsilon": 0.5, "delta": 1e-4}},
    {**_PRIO3, "budget": {"epsilon": 365, "delta": 1.5}},
    {**_PRIO3, "budget": {"delta": 1e-4}},
    {**_PRIO3, "trust": "shuffled"},
    {**_PRIO3, "shuffle_batch": 100},
    {**_PRIO3, "aggregators": {"helper": "https://helper.example"}},  # a listing's block, never a spec's field
]
