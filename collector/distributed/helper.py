"""The helper's side: campaign provisioning, aggregation jobs and the aggregate share.

Aggregation job (``PUT /v1/peer/aggregation_jobs/<job_id>``): the helper opens its input share of each report (HPKE,
role 0x03), runs verify_init on the whole job at once (``collector.vdaf_batch``), combines each verifier share with
the leader's into the verifier message, and for the reports that pass adds their output shares to the batch's
aggregate share.  Then, in one transaction: the job's answer is stored under its id, the id of every report whose
input share opened and decoded is recorded as seen (with its outcome; an entry that does not open or decode is
rejected by name and recorded nowhere, so garbage cannot burn a report id), and the aggregate share updated.  The
same job id again returns the stored answer (a leader retrying after a lost answer counts nothing twice); a
different body under the same id is refused; a report id seen in an earlier job (or one committed meanwhile) is
rejected ``report-replayed``.

Aggregate share (``POST /v1/peer/aggregate_shares``): the helper checks on its own clock that the batch has ended
plus the collection grace (``batch-open`` before, as the leader's collection: ``collector.distributed.batches``),
that the leader's report count and checksum (SHA-256 of the sorted ids) are its own, that the batch reaches
``min_batch`` and has not been collected, adds its
own noise (calibrated so that it alone protects the release: ``estimators.distributed.noise``) and answers; the
answer is stored and repeated unchanged for a retried request (fresh noise on a retry would let the analyst
average it away).  Nothing the leader sends reaches this noise.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import uuid
from typing import Any

from client_sdk.distributed import HELPER, LEADER, input_share_info
from client_sdk.distributed_messages import (
    AGGREGATE_SHARE_FIELDS,
    JOB_REPORT_FIELDS,
    ProtocolError,
    b64url,
    check_batch,
    from_b64url,
    job_answer_entry,
    parse_job_entry,
    parse_job_request,
)
from client_sdk.errors import LDPError, ShareRejected, SpecError
from client_sdk.kinds import DISTRIBUTED, find_kind
from client_sdk.spec import Spec, load_spec
from client_sdk.vdaf.hpke import HpkeError, open_sealed

from ..storage import CampaignVersion, StorageBase
from . import hpke_keys
from .aggregation import CampaignVdaf
from .batches import still_open
from .store import BatchKey, DistCampaign, DistStore, failpoint

HELPER_ROLE, LEADER_ROLE = HELPER, LEADER  # DAP's roles, as the device seals to them


class PeerProblem(LDPError):
    "A request the helper refuses: its problem type (slug), detail and field (its answer: collector.distributed.api)"

    def __init__(self, slug: ProtocolError, detail: str, field: str | None = None) -> None:
        super().__init__(detail)
        self.slug, self.detail, self.field = slug, detail, field


def digest(body: Any) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def checksum(report_ids: list[bytes]) -> str:
    "SHA-256 over the sorted 16-byte report ids, hex"
    return hashlib.sha256(b"".join(sorted(report_ids))).hexdigest()


# -- provisioning -----------------------------------------------------------------------------------------------
def provision(storage: StorageBase, store: DistStore, name: str, body: Any, day: str) -> tuple[CampaignVersion, bool]:
    "Store the leader's campaign (same spec, same fingerprint) and its verify key; idempotent"
    if not isinstance(body, dict) or set(body) != {"spec", "verify_key"}:
        raise PeerProblem(ProtocolError.INVALID_FIELD, "body must be {\"spec\", \"verify_key\"}", "body")
    spec_source = body["spec"]
    if not isinstance(spec_source, dict) or spec_source.get("name") != name:
        raise PeerProblem(ProtocolError.INVALID_FIELD, "spec must be an object whose name is the path's", "spec")
    if spec_source.get("trust") != "distributed" and find_kind(spec_source) is not DISTRIBUTED:
        raise PeerProblem(ProtocolError.INVALID_FIELD, "spec must be a distributed campaign", "spec.trust")
    try:
        verify_key = from_b64url(body["verify_key"], "verify_key")
    except ValueError as exc:
        raise PeerProblem(ProtocolError.INVALID_FIELD, str(exc), "verify_key") from None

    source = {k: v for k, v in spec_source.items() if k not in ("version", "fingerprint", "derived")}
    try:
        spec = load_spec(source)
        vdaf = CampaignVdaf(spec, verify_key)
    except SpecError as exc:
        raise PeerProblem(ProtocolError.INVALID_FIELD, f"spec: {exc}", f"spec.{exc.field}") from None
    except ValueError as exc:  # a spec with no Prio3 circuit (any kind's distributed spec has one)
        raise PeerProblem(ProtocolError.INVALID_FIELD, f"spec: {exc}", "spec.trust") from None
    if len(verify_key) != vdaf.vdaf.VERIFY_KEY_SIZE:
        raise PeerProblem(ProtocolError.INVALID_FIELD,
                          f"verify_key must be {vdaf.vdaf.VERIFY_KEY_SIZE} bytes", "verify_key")
    return record_campaign(storage, store, spec, source, verify_key, day)


def record_campaign(storage: StorageBase, store: DistStore, spec: Spec, source: dict, verify_key: bytes,
                    day: str) -> tuple[CampaignVersion, bool]:
    """The helper's campaign version and its verify key, created once (the same spec again returns it); a second
    provisioning with another verify key is refused (PeerProblem VERIFY_KEY_MISMATCH)"""
    known = store.campaign(spec.name, spec.fingerprint)
    if known is not None and known.verify_key != verify_key:
        raise PeerProblem(ProtocolError.VERIFY_KEY_MISMATCH,
                          "this campaign was provisioned with another verify key",
                          "verify_key")
    campaign, created = storage.create_campaign(source, day)
    if known is None:
        with store.transaction():
            store.put_campaign(DistCampaign(spec.name, spec.fingerprint, "helper", verify_key, None, None, "ready"))
    return campaign, created


def _campaign(storage: StorageBase, store: DistStore, name: Any, fingerprint: Any) -> tuple[Spec, DistCampaign]:
    if not isinstance(name, str) or not isinstance(fingerprint, str):
        raise PeerProblem(ProtocolError.INVALID_FIELD, "campaign and fingerprint must be strings", "campaign")
    known = store.campaign(name, fingerprint)
    version = storage.find_version(name, fingerprint)
    if known is None or version is None or known.role != "helper":
        raise PeerProblem(ProtocolError.UNKNOWN_CAMPAIGN,
                          f"no distributed campaign {name!r} with this fingerprint here",
                          "campaign")
    return version.spec, known


def _batch(spec: Spec, value: Any) -> str:
    "The request's batch, a batch of the campaign's window"
    try:
        batch = check_batch(value, "batch")
        assert spec.prio3 is not None, "a distributed campaign"
        spec.prio3.batch_end(batch)
        return batch
    except ShareRejected as exc:
        raise PeerProblem(ProtocolError.INVALID_FIELD, f"batch {exc.message}", "batch") from None
    except ValueError as exc:
        raise PeerProblem(ProtocolError.INVALID_FIELD, f"batch: {exc}", "batch") from None


# -- aggregation jobs -------------------------------------------------------------------------------------------
def aggregation_job(storage: StorageBase, store: DistStore, job_id: str, body: Any,
                    overlap_days: int = hpke_keys.DEFAULT_OVERLAP_DAYS) -> dict:
    """Run (or replay the stored answer of) one aggregation job; see the module doc.

    A share sealed to a retired key of this helper is rejected ``outdated-config`` if its batch is after the key's
    retirement day: the leader refuses such shares at upload from that day on (when it has read the helper's
    configs since), and a report it accepted the day before may name the next day's batch (a device's clock ahead),
    so an acknowledged report is never refused here for a key that retired while its job waited."""
    try:
        uuid.UUID(job_id)
    except ValueError:
        raise PeerProblem(ProtocolError.INVALID_FIELD, "job id must be a UUID", "job_id") from None
    try:
        entries = parse_job_request(body)
    except ValueError:
        raise PeerProblem(ProtocolError.INVALID_FIELD, "body must be {campaign, fingerprint, batch, reports: "
                          "[...]}", "body") from None
    request_digest = digest(body)
    stored = store.helper_job(job_id)
    if stored is not None:
        return _replayed(stored, request_digest)
    spec, campaign = _campaign(storage, store, body["campaign"], body["fingerprint"])
    key: BatchKey = (spec.name, spec.fingerprint, _batch(spec, body["batch"]))
    vdaf = CampaignVdaf(spec, campaign.verify_key)

    results: list[dict] = []
    candidates: list[tuple[int, bytes, bytes, bytes, Any]] = []  # position, id, public share, input share, leader vs
    keys = hpke_keys.keys(store)  # once per job, not per report
    # retired for batches after the day (the batch's UTC day: its name's first ten characters)
    as_of = (dt.date.fromisoformat(key[2][:10]) - dt.timedelta(days=1)).isoformat()
    pairs, retired = keys.usable(as_of, overlap_days), keys.retired(as_of, overlap_days)
    ids: list[bytes] = []
    for position, report in enumerate(entries):
        if not isinstance(report, dict) or set(report) != JOB_REPORT_FIELDS:
            raise PeerProblem(ProtocolError.INVALID_FIELD,
                              f"reports[{position}] must have {sorted(JOB_REPORT_FIELDS)}",
                              f"reports[{position}]")
        try:
            report_uuid = uuid.UUID(report["report_id"])
        except (ValueError, TypeError, AttributeError):
            raise PeerProblem(ProtocolError.INVALID_FIELD, f"reports[{position}].report_id must be a UUID",
                              f"reports[{position}].report_id") from None
        ids.append(report_uuid.bytes)
        results.append(job_answer_entry(report["report_id"], error=ProtocolError.INVALID_MESSAGE))
        try:
            public_share, config_id, ciphertext, encoded_vs = parse_job_entry(report)
            leader_vs = vdaf.vdaf.decode_verifier_share(encoded_vs)
        except ValueError:
            continue  # VerifyError is a ValueError: a malformed leader message or share
        pair = pairs.get(config_id) if type(config_id) is int else None
        if pair is None:
            retired_key = type(config_id) is int and config_id in retired
            results[-1]["error"] = (ProtocolError.OUTDATED_CONFIG if retired_key
                                    else ProtocolError.HPKE_UNKNOWN_CONFIG_ID)
            continue

        input_share = None
        for batch in (key[2], None):  # sealed for the job's batch, or (devices of earlier versions) for none
            try:
                info = input_share_info(spec, str(report_uuid), HELPER_ROLE, public_share, batch)
                input_share = open_sealed(pair, ciphertext, info)
                break
            except HpkeError:
                continue
        if input_share is None:  # another key, another report, another batch, or altered
            results[-1]["error"] = ProtocolError.HPKE_DECRYPT_ERROR
            continue
        candidates.append((position, report_uuid.bytes, public_share, input_share, leader_vs))
    if len(set(ids)) != len(ids):
        raise PeerProblem(ProtocolError.INVALID_FIELD, "a report id appears twice in the job", "reports")

    verified = vdaf.verify_init(1, [(c[1], c[2], c[3]) for c in candidates])
    outputs: dict[int, list[int]] = {}
    decoded: set[int] = set()  # the reports whose input share opened and decoded: only their ids are recorded
    for (position, _, _, _, leader_vs), mine in zip(candidates, verified):
        if mine.error is not None:
            results[position]["error"] = ProtocolError.INVALID_MESSAGE  # a share that does not decode
            continue
        decoded.add(position)
        try:
            message = vdaf.vdaf.verifier_shares_to_message(vdaf.ctx, [leader_vs, mine.verifier_share])
            out_share = vdaf.vdaf.verify_next(vdaf.ctx, mine.state, message)
        except ValueError:
            results[position]["error"] = ProtocolError.INVALID_MEASUREMENT
            continue
        outputs[position] = vdaf.contribution(out_share)
        results[position] = job_answer_entry(results[position]["report_id"],
                                             vdaf.vdaf.encode_verifier_message(message))

    with store.transaction():
        # the batch's aggregate share first: two processes running jobs of one batch (or one job twice, retried by
        # two leader processes) take turns here, and each reads what the other committed
        count, share = store.lock_agg_share(key)
        stored = store.helper_job(job_id)  # a concurrent retry of the same job committed first
        if stored is not None:
            return _replayed(stored, request_digest)
        collected = store.batch_state(key) != "open"
        replayed = store.seen_ids(ids)
        # Only reports that opened and decoded are recorded as seen: an entry of garbage under some report's id
        # (from anyone holding the peer token) is rejected by name and burns nothing.
        replayed |= store.add_seen(key, job_id, [(ids[p], p in outputs and not collected) for p in sorted(decoded)
                                                 if ids[p] not in replayed])
        for position, report_id in enumerate(ids):
            if report_id in replayed or collected:
                outputs.pop(position, None)
                results[position] = job_answer_entry(
                    results[position]["report_id"], error=ProtocolError.REPORT_REPLAYED if report_id in replayed
                    else ProtocolError.BATCH_COLLECTED)
        valid = sorted(outputs)
        if valid:
            total = vdaf.add(vdaf.decode(share), [outputs[p] for p in valid])
            store.put_agg_share(key, count + len(valid), vdaf.encode(total))
        answer = {"reports": results}
        if not store.put_helper_job(job_id, key, request_digest, answer):
            # a request of another batch under this id committed meanwhile (one of the same batch waited for the
            # lock above and was answered from it): everything here is rolled back
            raise _job_mismatch()
        failpoint("helper-job-before-commit")
    failpoint("helper-job-committed")
    return answer


def _job_mismatch() -> PeerProblem:
    return PeerProblem(ProtocolError.JOB_MISMATCH, "this job id was used with another request", "job_id")


def _replayed(stored: tuple[str, str], request_digest: str) -> dict:
    if stored[0] != request_digest:
        raise _job_mismatch()
    return json.loads(stored[1])


# -- collection -------------------------------------------------------------------------------------------------
def aggregate_share(storage: StorageBase, store: DistStore, body: Any, *, now: float, grace: float) -> dict:
    """This helper's noisy aggregate share of a batch, once (a retried request gets the same answer), and only once
    the batch has ended plus ``grace`` at ``now`` (this helper's clock, ``COLLECT_GRACE``): 409 ``batch-open``"""
    if not isinstance(body, dict) or set(body) != AGGREGATE_SHARE_FIELDS:
        raise PeerProblem(ProtocolError.INVALID_FIELD,
                          "body must be {campaign, fingerprint, batch, report_count, checksum}",
                          "body")
    spec, campaign = _campaign(storage, store, body["campaign"], body["fingerprint"])
    key: BatchKey = (spec.name, spec.fingerprint, _batch(spec, body["batch"]))
    request_digest = digest(body)
    state, _, _, answer = store.batch_row(key)
    if state == "collected":
        assert answer is not None
        stored = json.loads(answer)
        if stored.pop("request_digest") != request_digest:
            raise PeerProblem(ProtocolError.BATCH_COLLECTED, "this batch was collected already", "batch")
        return stored
    assert spec.prio3 is not None
    open_detail = still_open(spec.prio3, key[2], now=now, grace=grace, role="helper")  # the name is checked
    if open_detail is not None:
        raise PeerProblem(ProtocolError.BATCH_OPEN, open_detail, "batch")
    vdaf = CampaignVdaf(spec, campaign.verify_key)
    valid_ids = store.helper_valid_ids(key)
    count, share = store.agg_share(key)
    if body["report_count"] != count or body["checksum"] != checksum(valid_ids):
        raise PeerProblem(ProtocolError.BATCH_MISMATCH,
                          f"the helper holds {count} valid reports with another checksum",
                          "checksum")
    if count < vdaf.params.min_batch:
        raise PeerProblem(ProtocolError.BATCH_TOO_SMALL,
                          f"{count} valid reports; min_batch is {vdaf.params.min_batch}",
                          "batch")
    noisy = vdaf.add_noise(vdaf.decode(share))  # this helper's own noise: alone, it protects the release
    out = {"report_count": count, "aggregate_share": b64url(vdaf.encode(noisy))}
    with store.transaction():
        raced = store.lock_batch(key, exclusive=True) == "collected"
        if not raced:
            store.set_batch(key, "collected", answer=json.dumps({**out, "request_digest": request_digest}))
    if raced:  # a concurrent request answered first: repeat its answer, never a second noise draw
        return aggregate_share(storage, store, body, now=now, grace=grace)
    store.scrub_batch(key)  # no job of the batch runs any more: its reports' order of arrival goes
    return out
