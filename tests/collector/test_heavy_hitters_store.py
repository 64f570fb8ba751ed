"""The heavy_hitters kind's tables on both backends: each day's reports are binned into the count table, and the
aggregate of any days is the aggregate of their reports (the days merge by addition)."""

import uuid

import pytest

from client_sdk.kinds.heavy_hitters import make_report
from client_sdk.randomness import DeterministicRandom
from collector.kinds.heavy_hitters.store import HeavyHittersStore
from estimators.kinds.heavy_hitters import empty_aggregate
from estimators.kinds.heavy_hitters.aggregate import payload_cells

from .helpers import on_both_backends

ALPHABET = "abcdefghijklmnopqrstuvwxyz."
SPECS = [{"kind": "heavy_hitters", "name": "words", "epsilon": 3.0, "max_length": 6, "alphabet": ALPHABET,
          "algorithm": "pem", "segment_length": 2},
         {"kind": "heavy_hitters", "name": "words", "epsilon": 3.0, "max_length": 6, "alphabet": ALPHABET,
          "algorithm": "sfp", "fragment_length": 2}]
DAYS = ("2026-01-01", "2026-01-02", "2026-01-03")


@on_both_backends
@pytest.mark.parametrize("spec", SPECS)
def test_days_merge_into_the_aggregate_of_their_reports(storage, spec):
    campaign, _ = storage.create_campaign(spec, DAYS[0])
    params, rng = campaign.spec.params, DeterministicRandom(5)
    store = HeavyHittersStore(storage)
    by_day = {}
    for i, day in enumerate(DAYS):
        payloads = [make_report(rng, params, word) for word in ["hello", "abc", ""] * (40 + 10 * i)]
        by_day[day] = payloads
        for start in range(0, len(payloads), 50):  # several batches a day add to the same cells
            with storage.transaction():
                chunk = payloads[start:start + 50]
                store.add(campaign, day, [str(uuid.uuid4()) for _ in chunk], payload_cells(params, chunk))
    assert store.days(campaign, None, None) == list(DAYS)
    for chosen in (DAYS, DAYS[1:], DAYS[:1]):
        expected = empty_aggregate(params).add([p for day in chosen for p in by_day[day]])
        assert store.aggregate(campaign, chosen).to_json() == expected.to_json()
