"""A dishonest leader against a real helper process: it cannot make a release less private than stated.

The test is the leader.  It provisions the campaign on a real ``serve --role helper`` process on loopback with a
verify key it chose, holds every key a leader holds (its own HPKE key pair, the verify key), decides every batch,
injects reports whose measurements (and, in a coins campaign, coin bits chosen against the coin masks) it knows,
adds no noise of its own, and tries to re-roll the helper's share.  One honest device (value 0 or 1, alternating)
is in each batch.  From the helper's share and its own, the leader computes the release minus everything it knows:
what is left over the honest device's value is the noise that protects it, and it must be the helper's own
calibrated noise, whose share alone gives the stated (epsilon, delta) (``tests/estimators/distributed``).

Before the fix the coins mode failed this: the coins in the release came only from the reports, the leader's
injected coins were known to it, and what was left was the honest device's own coin (variance 1/4 instead of N/4).
"""

from __future__ import annotations

import datetime as dt
import math
import uuid
from typing import Any

import numpy as np
import pytest

import client_sdk
from client_sdk import distributed
from client_sdk.distributed_messages import b64url as b64e
from client_sdk.distributed_messages import from_b64url as b64d
from client_sdk.vdaf.hpke import HpkeConfig, HpkeKeyPair, b64url, open_sealed, seal
from client_sdk.vdaf.xof import XofTurboShake128
from collector.distributed.aggregation import CampaignVdaf, signed
from collector.distributed.helper import checksum
from collector.distributed.peer import PeerClient, PeerRefused
from tests.tolerances import k_sigma, second_moment_bounds

from .kit import PEER_TOKEN, Pair, configs, exact_sum
from .test_processes import Aggregators

DOMAIN = ["no", "yes"]
MIN_BATCH = 2
TRIALS = 40  # batches, the honest device's value alternating 0, 1
SPEC = {"name": "audited", "trust": "distributed", "prio3": "histogram", "domain": DOMAIN, "epsilon": 1.0,
        "delta": 1e-2, "min_batch": MIN_BATCH}
LEADER, HELPER = 0x02, 0x03


class DishonestLeader:
    "The leader's keys and its view of every batch it makes with the helper"

    def __init__(self, helper_url: str, spec: client_sdk.Spec) -> None:
        self.peer = PeerClient.for_url(helper_url, PEER_TOKEN, retries=0)
        self.spec = spec
        self.pair = HpkeKeyPair.generate(7)
        self.helper_config = HpkeConfig.from_dict(self.peer.hpke_configs()[0])
        self.vdaf = CampaignVdaf(spec, bytes(range(CampaignVdaf(spec, b"").vdaf.VERIFY_KEY_SIZE)))
        body = {k: v for k, v in spec.to_dict(derived=False).items() if k not in ("version", "fingerprint")}
        self.peer.provision(spec.name, {"spec": body, "verify_key": b64e(self.vdaf.verify_key)})
        self.calibrated = self.vdaf.noise
        # the device-coin noise of earlier versions released only from a batch of its coin subset's size
        self.batch_size = max(MIN_BATCH, int(getattr(self.calibrated, "subset_size", 0)))

    def honest_report(self, value: str, batch: str) -> tuple[str, dict]:
        report_id = str(uuid.uuid4())
        return report_id, distributed.seal_report(self.spec, value, self.pair.config, self.helper_config,
                                                  report_id=report_id, batch=batch)

    def injected_report(self, bucket: int) -> tuple[str, dict]:
        "A report of a value the leader knows; its coin bits (coins campaigns) equal their masks: masked, all 0"
        report_id = str(uuid.uuid4())
        nonce = uuid.UUID(report_id).bytes
        vdaf = self.vdaf.vdaf
        measurement = [int(b == bucket) for b in range(len(DOMAIN))] + self.masks(nonce)
        public, shares = vdaf._shard_encoded(distributed.ctx_for(self.spec), measurement, nonce,
                                             bytes(vdaf.RAND_SIZE))
        public_share = vdaf.encode_public_share(public)
        payload: dict[str, Any] = {"public_share": b64url(public_share)}
        for key, role, config, share in (("leader_share", LEADER, self.pair.config, shares[0]),
                                         ("helper_share", HELPER, self.helper_config, shares[1])):
            info = distributed.input_share_info(self.spec, report_id, role, public_share)
            payload[key] = {"config_id": config.id, "ciphertext": b64url(seal(config, vdaf.encode_input_share(share),
                                                                               info))}
        return report_id, payload

    def masks(self, nonce: bytes) -> list[int]:
        "The coin masks every holder of the verify key derives (TurboSHAKE128 over the key and the nonce)"
        count = len(DOMAIN) * self.vdaf.coins
        stream = XofTurboShake128(self.vdaf.verify_key, b"ldp-telemetry coin mask", nonce).next((count + 7) // 8)
        return [(stream[i // 8] >> (i % 8)) & 1 for i in range(count)]

    def batch(self, day: str, honest_value: str) -> list[int]:
        """Run one batch of the honest report and batch_size - 1 injected ones (bucket 0) with the helper; the
        release minus everything the leader knows (its injected values): the honest value plus the noise"""
        reports = [self.honest_report(honest_value, day)]
        reports += [self.injected_report(0) for _ in range(self.batch_size - 1)]
        verified, job = zip(*(self.job_entry(report_id, payload) for report_id, payload in reports))
        key = {"campaign": self.spec.name, "fingerprint": self.spec.fingerprint, "batch": day}
        answers = self.peer.aggregation_job(str(uuid.uuid4()), {**key, "reports": list(job)})["reports"]
        p = self.vdaf.modulus
        own = [0] * len(DOMAIN)
        ids = []
        for (report_id, _), mine, answer in zip(reports, verified, answers):
            assert answer["result"] == "continue", answer
            message = self.vdaf.vdaf.decode_verifier_message(b64d(answer["verifier_message"], "verifier_message"))
            out_share = self.vdaf.vdaf.verify_next(self.vdaf.ctx, mine.state, message)
            own = [(a + b) % p for a, b in zip(own, self.own_contribution(out_share, uuid.UUID(report_id).bytes))]
            ids.append(uuid.UUID(report_id).bytes)
        body = {**key, "report_count": len(reports), "checksum": checksum(ids), **self.coin_seed(key)}
        helper = self.peer.aggregate_share(body)
        # a re-roll: the same request gets the same share, another one is refused
        assert self.peer.aggregate_share(body) == helper
        with pytest.raises(PeerRefused):
            self.peer.aggregate_share({**body, "report_count": len(reports) - 1})
        share = self.vdaf.decode(b64d(helper["aggregate_share"], "aggregate_share"))
        release = [signed(a + b, p) for a, b in zip(own, share)]  # no noise of the leader's own
        return [release[0] - (self.batch_size - 1), release[1]]

    def job_entry(self, report_id: str, payload: dict) -> tuple[Any, dict]:
        "The leader's verification of one report (its share opened for the batch the payload names) and its entry"
        public_share = b64d(payload["public_share"], "public_share")
        info = distributed.input_share_info(self.spec, report_id, LEADER, public_share, payload.get("batch"))
        plaintext = open_sealed(self.pair, b64d(payload["leader_share"]["ciphertext"], "ct"), info)
        mine = self.vdaf.verify_init(0, [(uuid.UUID(report_id).bytes, public_share, plaintext)])[0]
        return mine, {"report_id": report_id, "public_share": payload["public_share"],
                      "helper_share": payload["helper_share"],
                      "leader_verifier_share": b64e(self.vdaf.vdaf.encode_verifier_share(mine.verifier_share))}

    def job_outcome(self, batch: str, report_id: str, payload: dict) -> str:
        "The helper's answer to a job of this one report sent for ``batch``: continue, or the error"
        _, entry = self.job_entry(report_id, payload)
        body = {"campaign": self.spec.name, "fingerprint": self.spec.fingerprint, "batch": batch, "reports": [entry]}
        answer = self.peer.aggregation_job(str(uuid.uuid4()), body)["reports"][0]
        return str(answer["result"] if answer["result"] == "continue" else answer["error"])

    def own_contribution(self, out_share: list[int], nonce: bytes) -> list[int]:
        """The leader's share of one report in the release: its histogram part, plus (coins campaigns of earlier
        versions, whose release held every report's masked coins when the batch is the subset) its share of
        coin XOR mask, b XOR r = r + (1 - 2r) b"""
        p, length = self.vdaf.modulus, len(DOMAIN)
        histogram = [x % p for x in out_share[:length]]
        if not self.helper_takes_coins:
            return histogram
        coins = self.vdaf.coins
        half = pow(2, -1, p)
        masks = self.masks(nonce)
        for bucket in range(length):
            for j in range(bucket * coins, (bucket + 1) * coins):
                histogram[bucket] += (1 - 2 * masks[j]) * out_share[length + j] + masks[j] * half
        return [x % p for x in histogram]

    @property
    def helper_takes_coins(self) -> bool:
        return self.vdaf.coins > 0 and hasattr(self.peer, "coin_seed")

    def coin_seed(self, key: dict) -> dict:
        "Earlier versions' coin-subset seed exchange, if this helper has it (a leader follows what the helper asks)"
        if not self.helper_takes_coins:
            return {}
        import hashlib

        own = bytes(32)
        self.peer.coin_seed({**key, "commitment": b64e(hashlib.sha256(own).digest())})
        return {"coin_seed": b64e(own)}


@pytest.mark.parametrize("noise", ["coins", "gaussian", "laplace"])
def test_a_dishonest_leader_is_left_with_the_helpers_calibrated_noise(tmp_path, monkeypatch, noise):
    extra = {"coins": 1, "honest_fraction": 1.0} if noise == "coins" else {}
    spec = client_sdk.load_spec({**SPEC, "noise": noise, **extra})
    servers = Aggregators(tmp_path)
    residuals = []
    with servers.helper(monkeypatch):
        leader = DishonestLeader(servers.helper_url, spec)
        for trial in range(TRIALS):
            value = trial % 2
            left = leader.batch((dt.date(2026, 1, 1) + dt.timedelta(days=trial)).isoformat(), DOMAIN[value])
            residuals += [left[0] - (value == 0), left[1] - (value == 1)]  # the noise on each bucket
    samples = np.array(residuals, dtype=float)
    share = leader.calibrated
    variance = share.share_variance()  # the helper's noise alone
    pmf = share.share_pmf()
    offsets = np.arange(len(pmf)) - (len(pmf) - 1) // 2
    assert abs(samples.mean()) < k_sigma(2) * math.sqrt(variance / samples.size), samples
    low, high = second_moment_bounds(offsets, pmf, samples.size, comparisons=2)
    assert low <= float((samples**2).mean()) <= high, (samples, variance)
    # and that noise alone is what the release states: (epsilon, delta) from one share
    achieved = share.privacy(spec.epsilon)
    assert achieved[0] <= spec.epsilon and achieved[1] <= spec.delta


class NoiselessHelperVdaf(CampaignVdaf):
    "A dishonest helper's: it adds no noise to its share"

    def add_noise(self, share: list[int]) -> list[int]:
        return share


@pytest.mark.parametrize("noise", ["coins", "gaussian", "laplace"])
def test_a_helper_that_adds_no_noise_leaves_the_leaders_calibrated_noise(tmp_path, monkeypatch, noise):
    "The other way round (in process: the helper's code replaced): the release minus the truth is the leader's noise"
    import collector.distributed.helper as helper_module

    monkeypatch.setattr(helper_module, "CampaignVdaf", NoiselessHelperVdaf)
    pair = Pair(tmp_path)
    spec, block = pair.create({**SPEC, "noise": noise, **({"coins": 1} if noise == "coins" else {})})
    leader_config, helper_config = configs(block)
    residuals = []
    for trial in range(TRIALS):
        day = (dt.date(2025, 1, 1) + dt.timedelta(days=trial)).isoformat()
        reports = []
        for value in ("no", "yes"):
            report_id = str(uuid.uuid4())
            reports.append({"report_id": report_id, "campaign": spec.name, "fingerprint": spec.fingerprint,
                            "payload": distributed.seal_report(spec, value, leader_config, helper_config,
                                                               report_id=report_id, batch=day)})
        assert pair.upload(reports)["accepted"] == 2
        pair.aggregate()
        truth = exact_sum(pair.leader_db, pair.helper_db, spec, day)[2]
        release = pair.collect(spec.name, day).json
        residuals += [got - want for got, want in zip(release["release"], truth)]
    share = CampaignVdaf(spec, b"").noise
    samples = np.array(residuals, dtype=float)
    variance = share.share_variance()
    pmf = share.share_pmf()
    offsets = np.arange(len(pmf)) - (len(pmf) - 1) // 2
    assert abs(samples.mean()) < k_sigma(2) * math.sqrt(variance / samples.size), samples
    low, high = second_moment_bounds(offsets, pmf, samples.size, comparisons=2)
    assert low <= float((samples**2).mean()) <= high, (samples, variance)
