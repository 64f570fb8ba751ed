"""Free loopback ports for the test harness and the benchmarks (standard library only: the benchmarks import it
without pytest)."""

from __future__ import annotations

import socket

_HANDED_OUT: set[int] = set()  # ports free_port has returned in this process


def free_port() -> int:
    """A loopback port nothing listens on now, and one this process has not been given before.  The kernel may hand
    a closed probe's port out again at once, so two ports taken before either server binds (a leader's and its
    helper's, or a server's and a PostgreSQL cluster's) could be the same: the second server then fails to bind
    while the first answers its readiness check (the leader provisioned the campaign at itself and got a 404)"""
    while True:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = int(sock.getsockname()[1])
        if port not in _HANDED_OUT:
            _HANDED_OUT.add(port)
            return port
