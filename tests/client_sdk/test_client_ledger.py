"""The on-device privacy ledger and report policies, through the Client and directly."""

from __future__ import annotations

import pytest

from client_sdk import RecordStatus, ReportPolicy
from client_sdk.runtime.ledger import PrivacyLedger
from client_sdk.runtime.state_file import StateFile

from .fakes import FakeCollector, make_client


def test_once_per_day_is_enforced_on_the_device(tmp_path):
    fake = FakeCollector()
    now = [86_400.0 * 100 + 10]
    client = make_client(tmp_path, fake, policy=ReportPolicy(), clock=lambda: now[0])
    assert client.record("browser", "chrome")
    assert client.record("browser", "safari").status is RecordStatus.REFUSED_BY_POLICY
    now[0] += 86_400 - 20  # still the same UTC day
    assert not client.record("browser", "safari")
    now[0] += 20  # the next day
    assert client.record("browser", "safari")
    assert client.pending() == 2
    spent = client.spent("browser")
    assert spent.reports == 2 and spent.epsilon == pytest.approx(2.0)
    client.close()


def test_policy_survives_a_restart(tmp_path):
    fake = FakeCollector()
    client = make_client(tmp_path, fake, policy=ReportPolicy(), clock=lambda: 1000.0)
    client.record("browser", "chrome")
    client.close()
    again = make_client(tmp_path, fake, policy=ReportPolicy(), clock=lambda: 1000.0)
    assert not again.record("browser", "chrome")
    assert again.spent("browser").epsilon == pytest.approx(1.0)
    again.close()


def test_epsilon_budget_and_per_campaign_policies(tmp_path):
    fake = FakeCollector()
    client = make_client(tmp_path, fake, policies={"browser": ReportPolicy(max_reports=None, max_epsilon=2.5)})
    results = [client.record("browser", "chrome") for _ in range(4)]
    assert [bool(r) for r in results] == [True, True, False, False]
    assert client.spent("browser").epsilon == pytest.approx(2.0)
    client.close()


def test_ledger_directly(tmp_path):
    state = StateFile(tmp_path)
    ledger = PrivacyLedger(state)
    policy = ReportPolicy(max_reports=2, period_seconds=10)
    assert ledger.refusal("c", 0.5, policy, now=1.0) is None
    ledger.charge("c", 0.5, policy, now=1.0)
    ledger.charge("c", 0.5, policy, now=2.0)
    assert "2 report(s)" in ledger.refusal("c", 0.5, policy, now=3.0)
    assert ledger.refusal("c", 0.5, policy, now=11.0) is None
    assert [(s.campaign, s.epsilon, s.reports) for s in ledger.all_spent()] == [("c", 1.0, 2)]
    state.close()


def test_policy_validation():
    with pytest.raises(ValueError, match="max_reports"):
        ReportPolicy(max_reports=0)
    with pytest.raises(ValueError, match="period_seconds"):
        ReportPolicy(period_seconds=0)
    with pytest.raises(ValueError, match="max_epsilon"):
        ReportPolicy(max_epsilon=float("inf"))
