"""The device side of a distributed campaign: encode a value as a Prio3 measurement, shard it between the leader
and the helper (with its proof of validity) and seal each input share to its aggregator with HPKE.

A report's payload (inside the usual ``{"report_id", "campaign", "fingerprint", "payload"}`` envelope)::

    {"public_share": "<b64url>",
     "leader_share": {"config_id": 1, "ciphertext": "<b64url enc||ct>"},
     "helper_share": {"config_id": 1, "ciphertext": "<b64url enc||ct>"},
     "batch": "YYYY-MM-DD"}

``batch`` names the batch (``batch_of``: a UTC day, or a shorter batch of the spec's ``window``) the device means
the report for; the leader puts the report in that batch or refuses it, and the device sends at most one report per
batch (its privacy ledger), so one device adds one report to a batch (the release's replace-one guarantee is per
report). The batch is sealed into both shares' HPKE info, so no aggregator can move the report to another batch. A
payload without ``batch`` (devices of earlier versions) is put in the leader's day of receipt, with the info of
earlier versions.

The Prio3 nonce is the 16 bytes of the report id (a UUID); the Prio3 application context is
``ctx_for(spec)`` (it names the campaign version); the HPKE ``info`` binds the campaign, its fingerprint, the
report id, the public share and the batch to each sealed share (``input_share_info``), so a share cannot be
replayed under other metadata.  ``open_input_share`` is the aggregators' inverse.  The messages themselves
(the payload's encoding, base64url, the protocol's error names) are ``client_sdk.distributed_messages``.

The Prio3 and HPKE code (``client_sdk.vdaf``) needs the SDK's optional ``distributed`` extra (pycryptodome,
cryptography); it is imported on first use, so this module and ``encode_value`` work without it.
"""

from __future__ import annotations

import ipaddress
import os
import secrets
import threading
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from .clock import utc_day
from .distributed_messages import ProtocolError, ReportPayload, b64url, check_batch, parse_payload  # re-exported
from .errors import (  # re-exported: part of this module's API
    AggregatorMismatch,
    SealError,
    ShareRejected,
    SpecError,
    ValueNotInDomain,
)
from .kinds import kind_of
from .spec import Prio3Params, Spec
from .wire import is_integer

if TYPE_CHECKING:
    from .vdaf import InputShare, Prio3
    from .vdaf.hpke import HpkeConfig, HpkeKeyPair

__all__ = [
    "BATCH_INFO_PREFIX", "CTX_PREFIX", "HELPER", "INFO_PREFIX", "LEADER", "Aggregators", "ReportPayload",
    "SealError", "ShareRejected", "aggregator_configs", "batch_of", "check_batch", "checked_url",
    "configured_aggregators", "ctx_for", "encode_value", "input_share_info", "open_input_share",
    "parse_hpke_configs", "parse_payload", "pinned_config", "report_nonce", "same_url", "seal_report", "vdaf_for",
]

CTX_PREFIX = b"ldp-telemetry/v1 "
INFO_PREFIX = b"ldp-telemetry input share"
BATCH_INFO_PREFIX = b"ldp-telemetry input share for a batch"  # a batch-bound info never equals an unbound one
CLIENT = 0x01  # DAP's Role: the sender of an input share
LEADER = 0x02
HELPER = 0x03
_ROLES = {"leader": LEADER, "helper": HELPER, LEADER: LEADER, HELPER: HELPER}
_AGG_IDS = {LEADER: 0, HELPER: 1}


# -- the Prio3 instance and the measurement --------------------------------------------------------------------------
_VDAFS: dict[Prio3Params, Prio3] = {}
_VDAFS_LOCK = threading.Lock()


def vdaf_for(spec: Spec) -> Prio3:
    "The campaign's Prio3 instance (two aggregators), memoized per Prio3 parameters"
    params = _prio3(spec)
    vdaf = _VDAFS.get(params)
    if vdaf is None:
        vdaf = _build_vdaf(params)
        with _VDAFS_LOCK:
            if len(_VDAFS) >= 64:
                _VDAFS.pop(next(iter(_VDAFS)))
            _VDAFS[params] = vdaf
    return vdaf


def _build_vdaf(params: Prio3Params) -> Prio3:
    # imported here: Prio3 (+54 ms, 41 modules) with the first report sealed or opened
    from . import vdaf

    length, chunk = params.length or 0, params.chunk_length or 1
    if params.type == "count":
        return vdaf.prio3_count()
    if params.type == "sum":
        assert params.max_measurement is not None
        return vdaf.prio3_sum(params.max_measurement)
    if params.type == "histogram":
        if params.noise == "coins":
            assert params.coins is not None
            return vdaf.prio3_histogram_with_coins(length, params.coins, chunk)
        return vdaf.prio3_histogram(length, chunk)
    if params.type == "sumvec":
        assert params.max_measurement is not None
        return vdaf.prio3_sum_vec(length, params.max_measurement, chunk)
    assert params.max_weight is not None
    return vdaf.prio3_multihot_count_vec(length, params.max_weight, chunk)


def _prio3(spec: Spec) -> Prio3Params:
    "The campaign's Prio3 circuit: any kind's distributed spec carries one (``spec.prio3``)"
    if spec.trust != "distributed" or spec.prio3 is None:
        raise ValueError(f"campaign {spec.name!r} is not distributed (trust {spec.trust!r})")
    return spec.prio3


def encode_value(spec: Spec, value: Any) -> object:
    "The Prio3 measurement of ``value``, as the campaign's kind encodes it (``CampaignKind.prio3_measurement``)"
    _prio3(spec)
    return kind_of(spec).prio3_measurement(spec, value)


def encode_prio3(spec: Spec, value: Any) -> object:
    """The prio3 kind's measurement of ``value``: count a bool, sum an int in [0, max_measurement], histogram a domain
    value (its index; with coin-flip noise also ``coins`` fresh CSPRNG bits per bucket), sumvec a list of ``length``
    ints in [0, max_measurement], multihot a collection of at most ``max_weight`` domain values.

    TypeError for a value of the wrong type, ValueError (naming the bound) for one outside the spec."""
    params = _prio3(spec)
    if params.type == "count":
        if isinstance(value, bool) or (is_integer(value) and value in (0, 1)):
            return bool(value)
        raise TypeError(f"campaign {spec.name!r} counts: a value is True or False, got {value!r}")
    if params.type == "sum":
        assert params.max_measurement is not None
        return _bounded_int(spec.name, value, params.max_measurement, "value")
    if params.type == "sumvec":
        assert params.length is not None and params.max_measurement is not None
        if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
            raise TypeError(f"campaign {spec.name!r} takes a list of {params.length} integers")
        if len(value) != params.length:
            raise ValueError(f"campaign {spec.name!r} takes a list of length {params.length}, got {len(value)}")
        return [_bounded_int(spec.name, entry, params.max_measurement, f"value[{i}]")
                for i, entry in enumerate(value)]
    if params.type == "histogram":
        index = _index(spec, value)
        if params.noise == "coins":
            assert params.coins is not None and params.length is not None
            return index, [secrets.randbits(1) for _ in range(params.length * params.coins)]
        return index
    assert params.max_weight is not None and params.length is not None
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise TypeError(f"campaign {spec.name!r} takes a collection (list, set) of domain values")
    indices = {_index(spec, entry) for entry in value}
    if len(indices) > params.max_weight:
        raise ValueError(f"campaign {spec.name!r} takes at most max_weight = {params.max_weight} distinct values, "
                         f"got {len(indices)}")
    return [i in indices for i in range(params.length)]


def _bounded_int(name: str, value: Any, top: int, field: str) -> int:
    if not is_integer(value):
        raise TypeError(f"campaign {name!r}: {field} must be an integer, got {type(value).__name__}")
    if not 0 <= value <= top:
        raise ValueError(f"campaign {name!r}: {field} must be in [0, max_measurement = {top}], got {value}")
    return int(value)


def _index(spec: Spec, value: Any) -> int:
    index = spec.index_of(value)
    if index is None:
        raise ValueNotInDomain(f"campaign {spec.name!r}: {value!r} is not in the domain")
    return index


# -- binding: context, nonce, HPKE info ------------------------------------------------------------------------------
def ctx_for(spec: Spec) -> bytes:
    "The Prio3 application context: b'ldp-telemetry/v1 ' + the fingerprint (ASCII hex)"
    return CTX_PREFIX + spec.fingerprint.encode("ascii")


def report_nonce(report_id: str) -> bytes:
    "The Prio3 nonce of a report: the 16 bytes of its id, a UUID in canonical (lower-case, hyphenated) text"
    try:
        parsed = uuid.UUID(report_id) if isinstance(report_id, str) else None
    except ValueError:
        parsed = None
    if parsed is None or str(parsed) != report_id:
        raise ValueError(f"report_id: must be a UUID in canonical lower-case text, got {report_id!r}")
    return parsed.bytes


def _role(role: Any) -> int:
    try:
        return _ROLES[role]
    except (KeyError, TypeError):
        raise ValueError(f"role: must be 'leader' ({LEADER}) or 'helper' ({HELPER}), got {role!r}") from None


def _length_prefixed(data: bytes) -> bytes:
    return len(data).to_bytes(4, "big") + data


def batch_of(now: float, spec: Spec | None = None) -> str:
    """The batch a report made at ``now`` (seconds since the epoch) is for: the batch of ``spec``'s ``window`` (a UTC
    day by default, or without a spec)"""
    return spec.prio3.batch_at(now) if spec is not None and spec.prio3 is not None else utc_day(now)


def input_share_info(spec: Spec, report_id: str, role: int | str, public_share: bytes,
                     batch: str | None = None) -> bytes:
    """The HPKE info of one input share: ``INFO_PREFIX || 0x01 || role || canonical``, where canonical is the
    length-prefixed campaign name, the 16 fingerprint bytes, the 16 report-id bytes and the length-prefixed
    encoded public share (lengths 4-byte big-endian); a report for a named ``batch``: ``BATCH_INFO_PREFIX`` and
    the length-prefixed batch after canonical"""
    info = _info(spec, report_nonce(report_id), _role(role), public_share)
    if batch is None:
        return info
    return BATCH_INFO_PREFIX + info[len(INFO_PREFIX):] + _length_prefixed(check_batch(batch).encode("ascii"))


def _info(spec: Spec, nonce: bytes, role: int, public_share: bytes) -> bytes:
    "input_share_info from the report's nonce (its id's 16 bytes) and a checked role"
    canonical = (_length_prefixed(spec.name.encode("utf-8")) + bytes.fromhex(spec.fingerprint) + nonce
                 + _length_prefixed(public_share))
    return INFO_PREFIX + bytes([CLIENT, role]) + canonical


# -- sealing and opening -----------------------------------------------------------------------------------------
def seal_report(spec: Spec, value: Any, leader: HpkeConfig, helper: HpkeConfig, *, report_id: str,
                batch: str | None = None) -> dict:
    """Shard ``value`` (validated by encode_value: TypeError, ValueError) and seal each input share, for ``batch``
    if given: the report's payload; SealError if a config's public key cannot be used"""
    # imported here: HPKE (+56 ms, 57 modules) with the first report sealed or opened
    from .vdaf.hpke import HpkeError, seal

    kind = kind_of(spec)  # prio3 or poplar1: the same envelope around the kind's VDAF shares
    vdaf = kind.vdaf_of(spec)
    measurement = kind.measurement_of(spec, value)
    nonce = report_nonce(report_id)
    public, shares = vdaf.shard(ctx_for(spec), measurement, nonce, os.urandom(vdaf.RAND_SIZE))
    public_share = vdaf.encode_public_share(public)
    payload: dict[str, Any] = {"public_share": b64url(public_share)}
    for key, role, config, share in (("leader_share", LEADER, leader, shares[0]),
                                     ("helper_share", HELPER, helper, shares[1])):
        info = input_share_info(spec, report_id, role, public_share, batch)
        try:
            sealed = seal(config, vdaf.encode_input_share(share), info)
        except HpkeError as exc:
            raise SealError(f"{key}: {exc}") from None
        payload[key] = {"config_id": config.id, "ciphertext": b64url(sealed)}
    if batch is not None:
        payload["batch"] = batch
    return payload


LOOPBACK_HOSTS = ("localhost", "::1")


def checked_url(url: Any, field: str) -> str:
    """``url`` without a trailing slash, if it is https, or http to a loopback host (127.0.0.0/8, ::1, localhost);
    ValueError naming ``field`` otherwise (a peer token, a verify key or an HPKE config would travel in clear)"""
    if not isinstance(url, str):
        raise ValueError(f"{field}: must be an URL string, got {type(url).__name__}")
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        parts.port  # noqa: B018 (ValueError for a malformed port)
    except ValueError as exc:
        raise ValueError(f"{field}: {url!r} is not an URL ({exc})") from None
    if parts.scheme not in ("http", "https") or not host or parts.query or parts.fragment:
        raise ValueError(f"{field}: must be an https:// URL without query or fragment, got {url!r}")
    if parts.scheme == "http" and not _loopback(host):
        raise ValueError(f"{field}: must be https:// (plain http only to a loopback host), got {url!r}")
    return url.rstrip("/")


def _loopback(host: str) -> bool:
    if host.lower() in LOOPBACK_HOSTS:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def same_url(a: str, b: str) -> bool:
    "Two aggregator URLs name the same endpoint (scheme and host case-insensitive, default port, trailing slash)"
    def key(url: str) -> tuple:
        parts = urlsplit(url.rstrip("/"))
        port = parts.port or {"http": 80, "https": 443}.get(parts.scheme.lower())
        return parts.scheme.lower(), (parts.hostname or "").lower(), port, parts.path

    try:
        return key(a) == key(b)
    except ValueError:
        return False


@dataclass(frozen=True)
class Aggregators:
    """What the app knows out of band about a distributed campaign's aggregators (``Client(aggregators=...)``): the
    helper's URL (its HPKE config is fetched from there, never from the leader) and optional pinned HPKE configs"""

    helper_url: str | None
    helper_pin: HpkeConfig | None = None
    leader_pin: HpkeConfig | None = None


def configured_aggregators(aggregators: Any, client_url: str) -> Aggregators:
    """Check the ``aggregators`` argument of ``Client``: ``{"helper": URL or {"url": URL, "hpke_config": pin},
    "leader": {"hpke_config": pin}}`` (the leader's URL, if given, is the client's).  ValueError naming the field."""
    if not isinstance(aggregators, dict) or set(aggregators) - {"leader", "helper"} or "helper" not in aggregators:
        raise ValueError('aggregators: must be {"helper": URL or {"url": URL, "hpke_config": {...}}} '
                         '(and optionally "leader")')
    entries: dict[str, tuple[str | None, HpkeConfig | None]] = {}
    for role in ("leader", "helper"):
        entry = aggregators.get(role)
        if entry is None:
            entries[role] = (None, None)
            continue
        if isinstance(entry, str):
            entry = {"url": entry}
        if not isinstance(entry, dict) or not entry or set(entry) - {"url", "hpke_config"}:
            raise ValueError(f"aggregators.{role}: must be an URL or {{\"url\": URL, \"hpke_config\": {{...}}}}")
        url = checked_url(entry["url"], f"aggregators.{role}.url") if "url" in entry else None
        pin = None
        if "hpke_config" in entry:
            try:
                pin = pinned_config(entry["hpke_config"])
            except ValueError as exc:
                raise ValueError(f"aggregators.{role}.hpke_config: {exc}") from None
        entries[role] = (url, pin)
    leader_url, leader_pin = entries["leader"]
    helper_url, helper_pin = entries["helper"]
    if leader_url is not None and not same_url(leader_url, client_url):
        raise ValueError(f"aggregators.leader.url: the leader is the client's url ({client_url}), not {leader_url}")
    if helper_url is None and helper_pin is None:
        raise ValueError("aggregators.helper: needs the helper's url (its HPKE config is fetched from there) or a "
                         "pinned hpke_config")
    checked_url(client_url, "url")  # the leader's URL: the same rule as the helper's
    return Aggregators(helper_url, helper_pin, leader_pin)


def parse_hpke_configs(body: Any, field: str = "hpke_config") -> list[HpkeConfig]:
    "The configs of an aggregator's ``GET /v1/hpke_config`` answer (ValueError naming the field)"
    # imported here: HPKE (+56 ms, 57 modules) with the first configuration read
    from .vdaf.hpke import HpkeConfig

    configs = body.get("configs") if isinstance(body, dict) else None
    if not isinstance(configs, list) or not configs:
        raise ValueError(f"{field}: the answer lists no HPKE config")
    return [HpkeConfig.from_dict(config) for config in configs]


def aggregator_configs(aggregators: Any, trusted: Aggregators | None = None,
                       helper_configs: list[HpkeConfig] | None = None) -> tuple[HpkeConfig, HpkeConfig]:
    """The leader's and the helper's HPKE configs from the ``aggregators`` block the leader lists with a distributed
    campaign, checked against what the device knows out of band: the helper's URL must be the configured one and its
    config one that the helper itself published (``helper_configs``) or the pin; a pinned leader config must match.

    SpecError naming the field for a malformed block; AggregatorMismatch when the block names another helper or
    another key (a leader that listed a key of its own as the helper's would otherwise see both shares)."""
    # imported here: HPKE (+56 ms, 57 modules) with the first configuration read
    from .vdaf.hpke import HpkeConfig

    if not isinstance(aggregators, dict):
        raise SpecError("aggregators", "the campaign listing carries no aggregators block (the leader's and the "
                                       "helper's HPKE configs)")
    configs = []
    for role in ("leader", "helper"):
        entry = aggregators.get(role)
        if not isinstance(entry, dict) or "hpke_config" not in entry:
            raise SpecError(f"aggregators.{role}.hpke_config", "is missing")
        try:
            configs.append(HpkeConfig.from_dict(entry["hpke_config"]))
        except ValueError as exc:
            raise SpecError(f"aggregators.{role}.hpke_config", str(exc)) from None
    leader, helper = configs
    if leader.public_key == helper.public_key:
        raise AggregatorMismatch("aggregators", "the leader and the helper list the same public key")
    if trusted is None:
        return leader, helper
    listed_url = aggregators["helper"].get("url")
    if trusted.helper_url is not None and not (isinstance(listed_url, str) and same_url(listed_url,
                                                                                       trusted.helper_url)):
        raise AggregatorMismatch("aggregators.helper.url", f"the leader lists the helper {listed_url!r}; this device "
                                                           f"knows {trusted.helper_url!r}")
    known = [trusted.helper_pin] if trusted.helper_pin is not None else list(helper_configs or [])
    if helper not in known:
        source = "pinned on this device" if trusted.helper_pin is not None else "the helper publishes"
        raise AggregatorMismatch("aggregators.helper.hpke_config", f"is not the HPKE config {source}")
    if trusted.leader_pin is not None and leader != trusted.leader_pin:
        raise AggregatorMismatch("aggregators.leader.hpke_config", "is not the leader HPKE config pinned on this "
                                                                   "device")
    return leader, helper


def pinned_config(config: Any) -> HpkeConfig:
    "An HpkeConfig, or one from its dict (ValueError naming the field)"
    # imported here: HPKE (+56 ms, 57 modules) with the first configuration read
    from .vdaf.hpke import HpkeConfig

    return config if isinstance(config, HpkeConfig) else HpkeConfig.from_dict(config)


def open_input_share(spec: Spec, keypair: HpkeKeyPair, role: int | str, report_id: str, public_share: bytes,
                     sealed: bytes, batch: str | None = None) -> InputShare:
    """The aggregator's side of ``seal_report``: open ``sealed`` (enc || ct) with ``keypair`` and the report's
    metadata and decode the input share of ``role``.  ShareRejected with reason ``hpke-decrypt-error`` (wrong key,
    other metadata, tampered) or ``invalid-message`` (a malformed share or public share)"""
    # imported here: Prio3 and HPKE (+110 ms) with the first report opened
    from .vdaf import VerifyError
    from .vdaf.hpke import HpkeError, open_sealed

    code = _role(role)
    field = "payload.leader_share" if code == LEADER else "payload.helper_share"
    vdaf = kind_of(spec).vdaf_of(spec)
    try:
        vdaf.decode_public_share(public_share)
    except (VerifyError, ValueError) as exc:
        raise ShareRejected(ProtocolError.INVALID_MESSAGE, "payload.public_share", str(exc)) from None
    try:
        plaintext = open_sealed(keypair, sealed, input_share_info(spec, report_id, code, public_share, batch))
    except HpkeError as exc:
        raise ShareRejected(ProtocolError.HPKE_DECRYPT_ERROR, field, str(exc)) from None
    try:
        return vdaf.decode_input_share(_AGG_IDS[code], plaintext)
    except (VerifyError, ValueError) as exc:
        raise ShareRejected(ProtocolError.INVALID_MESSAGE, field, f"the input share does not decode: {exc}") from None
