"""What ``record`` answers for a campaign the collector closed or does not have, as a user sees it: before the
device has heard of the campaign, the value is held (``record`` never waits for the network) and dropped, counted,
once the listing says closed or unknown; from then on ``campaign_closed`` (or ``unknown_campaign``) at once. That
the campaign is closed is final and kept in the state file, so a restarted app answers ``campaign_closed`` from its
first call, offline; an unknown campaign may be created later, so after a restart its values are held again until
the collector answers. sdk-js/test/closed.test.mjs plays the same steps against the JavaScript SDK."""

from __future__ import annotations

from client_sdk import RecordStatus
from client_sdk.runtime.transport import NetworkError, Response

from .fakes import FakeCollector, make_client


def closed_browser(fake: FakeCollector):
    "The fake collector, listing ``browser`` as closed"

    def answer(request):
        response = fake(request)
        if request.method == "GET":
            body = response.json()
            body["campaigns"][0]["closed"] = True
            return Response.from_json(200, body)
        return response

    return answer


def offline(request):
    raise NetworkError("connection refused")


def test_a_closed_campaign_answers_campaign_closed_once_heard_of_and_after_a_restart(tmp_path, fake):
    client = make_client(tmp_path, closed_browser(fake), campaigns=[])
    assert client.record("browser", "chrome").status is RecordStatus.HELD  # nothing known yet
    assert client.record("ghost", "x").status is RecordStatus.HELD
    client.prepare(wait=True)
    dropped = client.status().dropped
    assert dropped["held_dropped_campaign_closed"] == 1 and dropped["held_dropped_unknown_campaign"] == 1
    assert client.record("browser", "chrome").status is RecordStatus.CAMPAIGN_CLOSED
    assert client.record("ghost", "x").status is RecordStatus.UNKNOWN_CAMPAIGN
    assert client.pending() == 0
    client.close()

    restarted = make_client(tmp_path, offline, campaigns=[])
    assert restarted.record("browser", "chrome").status is RecordStatus.CAMPAIGN_CLOSED  # from the state file
    assert restarted.record("ghost", "x").status is RecordStatus.HELD  # may have been created meanwhile
    assert not restarted.prepare(["browser"])
    assert restarted.status().held == 1 and restarted.pending() == 0
    restarted.close()


def test_a_campaign_closed_after_its_spec_was_cached_answers_campaign_closed_after_the_listing(tmp_path, fake):
    client = make_client(tmp_path, fake, campaigns=["browser"])
    client.prepare(wait=True)
    assert client.record("browser", "chrome").status is RecordStatus.QUEUED
    client.close()
    restarted = make_client(tmp_path, closed_browser(fake), campaigns=["browser"], spec_ttl=0)
    restarted.prepare(wait=True)  # the spec is due again: the listing says closed
    assert restarted.record("browser", "chrome").status is RecordStatus.CAMPAIGN_CLOSED
    restarted.close()
    again = make_client(tmp_path, offline, campaigns=["browser"])
    assert again.record("browser", "chrome").status is RecordStatus.CAMPAIGN_CLOSED  # its cached spec is gone
    again.close()
