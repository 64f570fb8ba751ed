"""A poplar1 walk in one process: devices' sealed reports, a leader and a helper each on its own records, the
planted heavy hitters found with intervals covering their counts; and the aggregators' rules playing the
attacker (a dishonest leader driving the helper, a helper adding no noise, devices with malformed IDPF keys)."""

from __future__ import annotations

import pytest

from collector.kinds.poplar1 import LevelRefusal, LevelRefused, Poplar1Aggregator, extensions
from collector.kinds.poplar1.walk import walk
from estimators.kinds.poplar1 import estimate_walk

from .walkkit import BATCH, Deployment, make_spec, population

PLANTED = {"ab": 90, "cd": 60}


@pytest.fixture(scope="module")
def deployed():
    deployment = Deployment(make_spec())
    values = population(PLANTED, 150)
    return deployment, [deployment.report(value if value in PLANTED else bytes.fromhex(value)) for value in values]


def test_the_walk_finds_the_planted_heavy_hitters_with_intervals_covering_their_counts(deployed):
    deployment, reports = deployed
    release = walk(deployment.leader, deployment.helper, BATCH, reports)
    result = estimate_walk(deployment.spec, release.to_dict())
    found = {row["value"]: row for row in result["heavy_hitters"]}
    assert set(PLANTED) <= set(found)  # the others are the pruning rule's possible false discoveries (count 1)
    assert {value for value, row in found.items() if row["clears_threshold"]} == set(PLANTED)
    for value, count in PLANTED.items():
        assert found[value]["ci_low"] <= count <= found[value]["ci_high"]
    assert [level["level"] for level in result["levels"]] == [3, 7, 11, 15]
    assert result["guarantee"]["epsilon"] <= 2.0 and result["guarantee"]["levels"] == 4
    assert result["reports"] == len(reports)


def fresh(deployed, seed=3):
    deployment, reports = deployed
    return Deployment(deployment.spec, seed, same_keys_as=deployment), reports


def helper_round_one(helper, agg_param, reports):
    return helper.round_one(BATCH, agg_param, [(r, p, h) for r, p, _, h in reports])


def test_the_helper_refuses_repeated_or_reordered_levels(deployed):
    deployment, reports = fresh(deployed)
    first = (7, extensions(((),), 8)[:64])
    helper_round_one(deployment.helper, first, reports)
    for level in (7, 3):  # the same level again, then a lower one
        with pytest.raises(LevelRefused) as caught:
            helper_round_one(deployment.helper, (level, tuple(p[:level + 1] for p in first[1][:1])), reports)
        assert caught.value.reason is LevelRefusal.LEVEL_NOT_INCREASING


def test_the_helper_refuses_a_level_outside_the_walk_and_prefixes_that_extend_nothing_asked(deployed):
    deployment, reports = fresh(deployed)
    with pytest.raises(LevelRefused) as caught:  # level 5 is no walk level: a 17th level would exceed the noise
        helper_round_one(deployment.helper, (5, extensions(((),), 6)[:4]), reports)
    assert caught.value.reason is LevelRefusal.LEVEL_NOT_IN_WALK
    asked = extensions(((),), 4)[:2]
    helper_round_one(deployment.helper, (3, asked), reports)
    outside = tuple(sorted(p for p in extensions(((),), 8) if p[:4] not in asked))[:3]
    with pytest.raises(LevelRefused) as caught:
        helper_round_one(deployment.helper, (7, outside), reports)
    assert caught.value.reason is LevelRefusal.PREFIXES_INVALID


def test_the_helper_refuses_a_report_replayed_into_a_level(deployed):
    deployment, reports = fresh(deployed)
    with pytest.raises(LevelRefused) as caught:
        helper_round_one(deployment.helper, (3, extensions(((),), 4)), reports + reports[:1])
    assert caught.value.reason is LevelRefusal.REPORT_REPEATED
    assert deployment.helper.records.history(BATCH) == []  # a refused level records nothing


def test_the_helper_refuses_a_level_below_min_batch(deployed):
    deployment, reports = fresh(deployed)
    with pytest.raises(LevelRefused) as caught:
        helper_round_one(deployment.helper, (3, extensions(((),), 4)), reports[:49])
    assert caught.value.reason is LevelRefusal.BATCH_TOO_SMALL


def audit_ratio(deployed, helper_class, runs=10):
    """The helper's noise audited: the leader drops its own noise, each of level 3's 16 counts minus its true count
    is the helper's noise; its mean square over the variance it is calibrated to (1 for an honest helper)"""
    deployment, reports = deployed
    values = population(PLANTED, 150)
    truth = [0] * 16
    for value in values:
        data = value.encode() if value in PLANTED else bytes.fromhex(value)
        truth[data[0] >> 4] += 1
    errors = []
    for seed in range(runs):
        run = Deployment(deployment.spec, 100 + 2 * seed, helper_class=helper_class, same_keys_as=deployment)
        run.leader.share_noise = lambda length: [0] * length  # the leader removes its own noise
        agg_param = (3, extensions(((),), 4))
        ours = run.leader.round_one(BATCH, agg_param, [(r, p, s) for r, p, s, _ in reports])
        theirs = helper_round_one(run.helper, agg_param, reports)
        second, mine = run.helper.round_two(ours), run.leader.round_two(theirs)
        _, leader_share = run.leader.finish(second)
        _, helper_share = run.helper.finish(mine)
        p = run.leader.vdaf.idpf.field_inner.MODULUS
        counts = [((a + b) % p + p // 2) % p - p // 2 for a, b in zip(leader_share, helper_share)]
        errors += [count - true for count, true in zip(counts, truth)]
    return sum(x * x for x in errors) / len(errors) / run.helper.noise.share_variance(), len(errors)


def within_audit(ratio, samples):
    "The mean of n squares of a (near-)Gaussian has sd sqrt(2/n) of its variance: 4 standard errors"
    return abs(ratio - 1) <= 4 * (2 / samples) ** 0.5


def test_the_helpers_noise_alone_has_the_calibrated_variance(deployed):
    """What protects a prefix only one device has, whatever prefixes the leader chose: the helper's own noise on
    every count it releases, calibrated for the whole walk"""
    assert within_audit(*audit_ratio(deployed, Poplar1Aggregator))


def test_a_helper_that_adds_no_noise_fails_the_audit(deployed):
    class Noiseless(Poplar1Aggregator):
        def share_noise(self, length):
            return [0] * length

    ratio, samples = audit_ratio(deployed, Noiseless)
    assert ratio == 0 and not within_audit(ratio, samples)


def test_malformed_idpf_keys_are_rejected_by_the_sketch_and_counted_by_name(deployed):
    deployment, reports = fresh(deployed)
    spec = deployment.spec
    vdaf = deployment.leader.vdaf
    bad = []
    for report_id, public, leader_ct, helper_ct in reports[:5]:  # a device that flips its leader key's bits
        honest = deployment.leader.opener(report_id, public, leader_ct)
        share = vdaf.decode_input_share(0, honest)
        tampered = share._replace(idpf_key=bytes(b ^ 0x5A for b in share.idpf_key))
        bad.append((report_id, public, vdaf.encode_input_share(tampered), helper_ct))
    plain = {r: s for r, _, s, _ in bad}
    opener = deployment.leader.opener
    deployment.leader.opener = lambda report_id, public, sealed: plain.get(report_id) or opener(report_id, public,
                                                                                                  sealed)
    release = walk(deployment.leader, deployment.helper, BATCH, bad + reports[5:])
    assert release.reports == len(reports) - 5
    assert deployment.leader.rejections["invalid-measurement"] == 5
    assert deployment.helper.rejections["invalid-measurement"] == 5
    del spec
