"""End to end: a distributed quantiles campaign through a real leader and helper (two server processes on loopback,
on SQLite files, then on two databases of the session's PostgreSQL cluster), its reports made by devices of both
SDKs.

* 3,000 values: 300 devices, each a ``client_sdk.Client`` with its own state directory, and 300 devices of the
  JavaScript SDK (sdk-js in Node, ``scripts/distributed-devices.mjs``: one ``Client`` each, the kind and the prio3
  kind's sealer loaded on demand from the listing) record one latency each (the quantiles kind clamps it, takes its
  bucket and seals it through the Prio3 histogram of the buckets); 2,400 more values are sealed by the Python SDK's
  device module (``client_sdk.distributed.seal_report``: the same kind's measurement) and uploaded in batches.
  After the day's collection the estimate's p50, p95 and p99 intervals (asked at confidence 1 - 1e-4/3: all three
  hold at once except with probability 1e-4, up to the bucket resolution that makes them conservative) cover the
  simulated truth, and ``ldp-telemetry report`` shows it.
* The noise calibration: three campaigns of 256 buckets with 3 reports each; every bucket of every release minus its
  true count is one draw of the aggregators' noise, whose sample variance is the formula's (both aggregators'
  discrete Gaussians) within k standard errors: a helper (or leader) that added no noise would halve it, which the
  same tolerance refuses.
"""

from __future__ import annotations

import json
import math
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np
import pytest

from client_sdk.kinds.quantiles.device import prio3_measurement
from estimators.distributed import Shift, calibrate
from estimators.report import report_schema
from tests.sdk_js.conftest import sdk_js  # noqa: F401 (the fixture: sdk-js installed and built)
from tests.sdk_js.test_distributed_e2e import js_devices_record
from tests.tolerances import k_sigma, second_moment_bounds

from ..helpers import BACKENDS, ldp_command
from .test_e2e_devices import Aggregators, on_backend

CLIENT_DEVICES, JS_DEVICES, UPLOADED = 300, 300, 2_400
QUANTILES = (0.5, 0.95, 0.99)
FAMILY_ALPHA = 1e-4
NOISE_CAMPAIGNS = 3  # 768 draws: the tolerance refuses half the variance (the last assertion)


def quantiles_spec(name: str, **extra: Any) -> dict:
    return {"name": name, "kind": "quantiles", "trust": "distributed", "epsilon": 1.0, "delta": 1e-6,
            "noise": "gaussian", "range": [0, 2000], "buckets": 100, "unit": "ms", **extra}


@pytest.fixture(scope="module", params=BACKENDS)
def servers(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Aggregators]:
    "The aggregators on SQLite files, then on two new databases of the session's PostgreSQL cluster"
    with on_backend(request, tmp_path_factory.mktemp("quantiles-e2e"), "quantiles") as running:
        yield running


def test_devices_of_both_sdks_through_a_leader_and_helper_and_the_quantile_intervals_cover_the_truth(
        servers: Aggregators, sdk_js: Path, tmp_path: Path):  # noqa: F811 (the fixture imported above)
    generator = np.random.default_rng(34)
    values = [float(v) for v in generator.lognormal(5.0, 0.8, size=CLIENT_DEVICES + JS_DEVICES + UPLOADED)]
    values[:5] = [-3.0, 5000.0, 2500.0, 0.0, 2000.0]  # outside the range: clamped on the device, never refused
    values[CLIENT_DEVICES:CLIENT_DEVICES + 3] = [-50.0, 1e9, 2000.0]  # and on a JavaScript device
    spec, block = servers.create(quantiles_spec("latency", min_batch=100))
    assert spec.kind == "quantiles" and spec.prio3 is not None and spec.prio3.length == 100
    servers.devices_record("latency", values[:CLIENT_DEVICES], tmp_path)
    for outcome in js_devices_record(sdk_js, servers, "latency", values[CLIENT_DEVICES:CLIENT_DEVICES + JS_DEVICES]):
        assert outcome["status"] == "queued" and outcome["sent"] == 1, outcome
        assert not (outcome["remaining"] or outcome["rejected"]), outcome
        # the ledger: the release's epsilon and delta, once for the batch
        assert outcome["spent"] == {"epsilon": 1.0, "reports": 1, "delta": 1e-6, "lastBatch": servers.day}, outcome
    assert servers.upload(spec, block, values[CLIENT_DEVICES + JS_DEVICES:]) == UPLOADED

    batch = servers.end_day()
    n = CLIENT_DEVICES + JS_DEVICES + UPLOADED
    estimate = collect_and_check_quantiles(servers, spec, batch, values)
    models = estimate["trust_models"]["quantiles"]
    assert [row["p"] for row in models] == [0.5, 0.9, 0.95, 0.99]
    for row in models:  # a trusted curator beats two aggregators' noise, which beats every device's own
        assert row["central"]["rank_halfwidth"] < row["distributed"]["rank_halfwidth"] < \
            row["local"]["rank_halfwidth"], row

    done = subprocess.run(ldp_command("report", "latency", "--db", str(servers.leader_db), "--format", "json"),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["trust"] == "distributed" and report["n"] == n and report["batches"] == [batch]
    jsonschema.Draft202012Validator(report_schema()).validate(report)  # the published schema's distributed members


def collect_and_check_quantiles(servers: Aggregators, spec: Any, batch: str, values: list[float]) -> dict:
    """Collect ``batch`` of ``spec`` (every value's report counted, none rejected) and check its estimate: the p50,
    p95 and p99 intervals cover the values' (clamped into the range) and the CDF's band holds at every boundary at
    the buckets' true counts; the estimate"""
    release = servers.call("POST", f"/v1/campaigns/{spec.name}/collect", {"batch": batch})
    n, buckets = len(values), spec.params.buckets
    assert release["report_count"] == n and not release["rejected"] and len(release["release"]) == buckets
    confidence = 1 - FAMILY_ALPHA / len(QUANTILES)
    estimate = servers.call("GET", f"/v1/campaigns/{spec.name}/estimate", confidence=confidence)
    assert estimate["kind"] == "quantiles" and estimate["trust"] == "distributed" and estimate["n"] == n
    clamped = sorted(min(max(v, spec.params.low), spec.params.high) for v in values)
    rows = {row["p"]: row for row in estimate["quantiles"]}
    for p in QUANTILES:
        truth = clamped[math.ceil(p * n) - 1]  # the smallest value whose empirical CDF reaches p
        assert rows[p]["ci_low"] <= truth <= rows[p]["ci_high"], (p, truth, rows[p])
    # the CDF's band holds at every boundary (simultaneous), at the buckets' counts the devices sent
    counts = np.bincount([prio3_measurement(spec.params, v) for v in values], minlength=buckets)
    true_cdf = np.concatenate([[0.0], np.cumsum(counts)]) / n
    assert all(point["band_low"] <= f <= point["band_high"] for point, f in zip(estimate["cdf"], true_cdf))
    return estimate


def test_the_aggregators_noise_has_both_aggregators_variance(servers: Aggregators):
    "A helper (or leader) adding no noise halves the variance; the tolerance below refuses that"
    generator = np.random.default_rng(35)
    uploaded = []
    for index in range(NOISE_CAMPAIGNS):
        spec, block = servers.create(quantiles_spec(f"noise-{index}", buckets=256, range=[0, 256], min_batch=2))
        values = [float(v) + 0.5 for v in generator.integers(0, 256, size=3)]
        assert servers.upload(spec, block, values) == 3
        uploaded.append((spec, values))
    batch = servers.end_day()
    draws = []
    for spec, values in uploaded:
        release = servers.call("POST", f"/v1/campaigns/{spec.name}/collect", {"batch": batch})
        counts = np.bincount([prio3_measurement(spec.params, v) for v in values], minlength=256)
        draws.append(np.array(release["release"]) - counts)
    noise = calibrate("gaussian", epsilon=1.0, delta=1e-6, sensitivity=Shift(2, 1))  # replace-one: two buckets
    samples = np.concatenate(draws).astype(float)
    variance = noise.variance()
    offsets, pmf = noise.noise_pmf()
    assert abs(samples.mean()) < k_sigma(2) * math.sqrt(variance / samples.size)
    low, high = second_moment_bounds(offsets, pmf, samples.size, comparisons=2)
    assert low <= float((samples**2).mean()) <= high, (samples.var(), variance, low, high)
    # the test's power: with one aggregator's noise alone, the draws' second moment would lie below ``low``
    share = noise.share_pmf()
    assert second_moment_bounds(np.arange(len(share)) - (len(share) - 1) // 2, share, samples.size,
                                comparisons=2)[1] < low


def test_the_helper_takes_a_distributed_quantiles_spec_and_refuses_a_local_one(tmp_path: Path):
    "Provisioning asks the spec for its Prio3 circuit: a local quantiles spec has none (a 4xx naming spec.trust)"
    from client_sdk.distributed import b64url

    from .kit import PEER_TOKEN as KIT_TOKEN
    from .kit import Pair

    pair = Pair(tmp_path)
    helper = pair.helper_app.test_client()
    headers = {"Authorization": f"Bearer {KIT_TOKEN}"}
    good = client_sdk_spec(quantiles_spec("lat"))
    answer = helper.put("/v1/peer/campaigns/lat", json={"spec": good, "verify_key": b64url(bytes(32))},
                        headers=headers)
    assert answer.status_code in (200, 201), answer.json
    local = {key: value for key, value in quantiles_spec("lat2").items()
             if key not in ("trust", "noise", "delta")}
    for spec in (local, {**local, "trust": "distributed"}):
        refused = helper.put("/v1/peer/campaigns/lat2", json={"spec": spec, "verify_key": b64url(bytes(32))},
                             headers=headers)
        assert 400 <= refused.status_code < 500 and refused.json["field"].startswith("spec"), refused.json
    # a leader creating it provisions the helper first, and the listing carries the aggregators block
    spec, block = pair.create(quantiles_spec("lat3"))
    assert spec.prio3 is not None and set(block) >= {"leader", "helper"}


def test_the_helper_refuses_a_leader_that_reprovisions_a_campaign_with_another_verify_key(tmp_path: Path):
    "The verify key is fixed at the first provisioning: the same key again is answered, another one refused by name"
    from client_sdk.distributed import b64url

    from .kit import PEER_TOKEN as KIT_TOKEN
    from .kit import Pair

    helper = Pair(tmp_path).helper_app.test_client()
    headers = {"Authorization": f"Bearer {KIT_TOKEN}"}
    spec = client_sdk_spec(quantiles_spec("lat"))
    for verify_key in (bytes(32), bytes(32)):
        answer = helper.put("/v1/peer/campaigns/lat", json={"spec": spec, "verify_key": b64url(verify_key)},
                            headers=headers)
        assert answer.status_code in (200, 201), answer.json
    refused = helper.put("/v1/peer/campaigns/lat", json={"spec": spec, "verify_key": b64url(bytes([1]) * 32)},
                         headers=headers)
    assert refused.status_code == 409 and refused.json["field"] == "verify_key", refused.json
    assert refused.json["type"].endswith("verify-key-mismatch"), refused.json


def client_sdk_spec(data: dict) -> dict:
    "The spec as a leader sends it to its helper: the served form"
    from client_sdk.spec import load_spec

    return load_spec(data).to_dict()
