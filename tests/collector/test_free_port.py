"""The test harness's free_port never hands one port out twice: a leader's and its helper's ports are taken before
either server binds, and the kernel may give a closed probe's port out again at once."""

import socket

from . import helpers, ports


class _Probe:
    "A socket whose bind(0) gets the next port of a scripted sequence"

    def __init__(self, ports: list[int]) -> None:
        self.ports = ports

    def __enter__(self) -> "_Probe":
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def bind(self, address: tuple[str, int]) -> None:
        assert address == ("127.0.0.1", 0)

    def getsockname(self) -> tuple[str, int]:
        return "127.0.0.1", self.ports.pop(0)


def test_a_port_the_kernel_gives_again_is_not_handed_out_twice(monkeypatch):
    scripted = [47001, 47001, 47001, 47002]  # the kernel repeats the closed probe's port twice
    monkeypatch.setattr(ports, "_HANDED_OUT", set())
    monkeypatch.setattr(ports.socket, "socket", lambda *args: _Probe(scripted))
    assert [helpers.free_port(), helpers.free_port()] == [47001, 47002]
    assert scripted == []


def test_the_ports_are_free_loopback_ports():
    port = helpers.free_port()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))  # nothing listens there
    assert port != helpers.free_port()
