"""Devices of one process share what is safe to share, and nothing else.  What a device lifecycle costs
(requests, statements, fsyncs) is a budget: tests/budgets/test_client_lifecycle.py."""

from __future__ import annotations

import client_sdk
from client_sdk import Client
from client_sdk.runtime.transport import MockTransport

from .fakes import SPEC, FakeCollector


def test_only_stateless_randomizers_are_shared_between_devices(tmp_path):
    "OS-CSPRNG randomizers are built once per process; RAPPOR's (memoized responses, device secret) per device"
    rappor = client_sdk.load_spec({"name": "r", "mechanism": "rappor", "candidates": ["x", "y"],
                                   "rappor": {"k": 8, "h": 2, "m": 4, "f": 0.5, "p": 0.5, "q": 0.75}})
    fake = FakeCollector()
    fake.extra_campaigns = [{"name": "r", "version": 1, "fingerprint": rappor.fingerprint, "spec": rappor.to_dict()}]
    clients = [Client("http://collector.test", "key", tmp_path / f"d{i}", transport=MockTransport(fake),
                      background=False, campaigns=["browser", "r"]) for i in range(2)]
    for client in clients:
        assert client.record("browser", "chrome") and client.record("r", "x")
    first, second = (c._recorder.mechanisms for c in clients)
    assert first[SPEC.fingerprint] is second[SPEC.fingerprint]
    assert first[rappor.fingerprint] is not second[rappor.fingerprint]
    assert first[rappor.fingerprint].secret != second[rappor.fingerprint].secret
    seeded = Client("http://collector.test", "key", tmp_path / "seeded", transport=MockTransport(fake),
                    background=False, campaigns=["browser"], rng=client_sdk.DeterministicRandom(1))
    assert seeded.record("browser", "chrome")
    assert seeded._recorder.mechanisms[SPEC.fingerprint] is not first[SPEC.fingerprint]  # an injected rng is its own
    for client in (*clients, seeded):
        client.close(timeout=0)
