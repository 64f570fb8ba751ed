"""The demo's exceptions."""

from __future__ import annotations

from client_sdk.errors import LDPError


class DemoStopped(LDPError, RuntimeError):
    "A phase of the demo stops where it is: the other phase failed, or the user pressed Ctrl-C"
