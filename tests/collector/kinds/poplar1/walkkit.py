"""Devices, a leader and a helper of a poplar1 campaign in one process (the reports sealed with HPKE as devices
seal them; each aggregator opens its own share)."""

from __future__ import annotations

import os
import uuid

from client_sdk import distributed
from client_sdk.distributed_messages import parse_payload
from client_sdk.randomness import DeterministicRandom
from client_sdk.spec import Spec
from client_sdk.vdaf.hpke import HpkeKeyPair, open_sealed
from collector.kinds.poplar1 import Poplar1Aggregator

BATCH = "2026-12-02"
BASE = {"name": "top", "kind": "poplar1", "trust": "distributed", "epsilon": 2.0, "delta": 1e-6, "bits": 16,
        "threshold": 0.1, "stride": 4, "min_batch": 50}


def make_spec(**changes) -> Spec:
    return Spec.from_dict({**BASE, **changes})


class Deployment:
    "Key pairs, a verify key and both aggregators of one campaign"

    def __init__(self, spec: Spec, seed: int = 1, helper_class: type = Poplar1Aggregator,
                 same_keys_as: Deployment | None = None) -> None:
        self.spec = spec
        if same_keys_as is None:
            self.leader_keys, self.helper_keys = HpkeKeyPair.generate(1), HpkeKeyPair.generate(2)
            verify_key = os.urandom(32)
        else:
            self.leader_keys, self.helper_keys = same_keys_as.leader_keys, same_keys_as.helper_keys
            verify_key = same_keys_as.leader.verify_key
        self.leader = Poplar1Aggregator(spec, verify_key, 0, self.opener(self.leader_keys, distributed.LEADER),
                                        rng=DeterministicRandom(seed))
        self.helper = helper_class(spec, verify_key, 1, self.opener(self.helper_keys, distributed.HELPER),
                                   rng=DeterministicRandom(seed + 1))

    def opener(self, keys: HpkeKeyPair, role: int):
        def open_share(report_id: bytes, public_share: bytes, sealed: bytes) -> bytes:
            info = distributed.input_share_info(self.spec, str(uuid.UUID(bytes=report_id)), role, public_share,
                                                BATCH)
            return open_sealed(keys, sealed, info)
        return open_share

    def report(self, value) -> tuple[bytes, bytes, bytes, bytes]:
        "A device's report as the leader stores it: (id, public share, leader ciphertext, helper ciphertext)"
        report_id = str(uuid.uuid4())
        payload = parse_payload(distributed.seal_report(self.spec, value, self.leader_keys.config,
                                                        self.helper_keys.config, report_id=report_id, batch=BATCH))
        return uuid.UUID(report_id).bytes, payload.public_share, payload.leader_ciphertext, payload.helper_ciphertext


def population(planted: dict[str, int], others: int, seed: int = 7) -> list[str]:
    "The planted strings that many times, and ``others`` distinct random two-byte strings"
    import random

    rng = random.Random(seed)
    values = [value for value, count in planted.items() for _ in range(count)]
    pool = {bytes([rng.randrange(1, 256), rng.randrange(1, 256)]).hex() for _ in range(others * 2)}
    values += sorted(pool - set(planted))[:others]
    return values
