"""Distributed campaigns on the collector: the leader and helper roles of two aggregators (Prio3, DAP-like).

``store`` (the tables of both roles and every statement on them, SQLite or PostgreSQL; ``schema`` their DDL),
``hpke_keys`` (each aggregator's HPKE key pair), ``aggregation``
(verification, shares, noise and unsharding, no I/O), ``helper`` and ``leader`` (the two sides of the protocol; the
leader a package with one module per stage; their messages are ``client_sdk.distributed_messages``),
``peer`` (the leader's HTTP client to the helper), ``api`` (the blueprints and the hooks of the collector's views).
docs/distributed.md describes the message flow and each difference from draft-ietf-ppm-dap.
"""

from __future__ import annotations

ROLES = ("standalone", "leader", "helper")

__all__ = ["ROLES"]
