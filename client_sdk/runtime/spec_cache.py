"""The spec cache: each campaign's spec from memory, the state file, the app's shipped specs or the collector.

Specs are fetched in the background (one ``GET /v1/campaigns`` for every wanted campaign), cached in the state file
with their fingerprint, refreshed after ``spec_ttl`` seconds, and a shipped spec (``shipped.py``) is used until the
collector's arrives, which then wins (logged once as superseded).  A distributed campaign's spec is cached with its
listed aggregators block; the helper's HPKE configs are fetched from the helper itself (or pinned by the app), and
the configs a report is sealed with are checked against what the app configured (``distributed.aggregator_configs``).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import quote

from ..errors import LDPError, SpecError, UnsupportedSpec
from ..kinds import kind_of
from ..spec import Spec, canonical_json, load_spec
from .answers import campaign_list, condition_for, problem, retry_after
from .shipped import ShippedSpec
from .state_file import CLOSED_SPEC_BODY, StateFile
from .status import RecordStatus
from .transport import CampaignUnavailable, Request, Response, TransportError, UnknownCampaign
from .uploader import Send, Uploader

logger = logging.getLogger("client_sdk")
HELPER_CONFIGS_SETTING = "helper_hpke_configs"


class OnceLog:
    "Log a condition as a warning the first time its key is seen, at debug level after that"

    def __init__(self) -> None:
        self.seen: set[tuple[str, str]] = set()

    def __call__(self, key: tuple[str, str], message: str, *args: object) -> None:
        if key in self.seen:
            logger.debug(message, *args)
        else:
            self.seen.add(key)
            logger.warning(message, *args)


class SpecCache:
    """The specs a client knows and wants, and the distributed campaigns' aggregators.

    ``uploader`` lends its backoff and delivery condition to the fetches; ``wake`` asks the background sender to
    fetch what is due."""

    def __init__(self, url: str, headers: dict[str, str], state: StateFile, send: Send, uploader: Uploader, *,
                 shipped: dict[str, ShippedSpec], trusted: Any, cached_at: dict[str, float], closed: set[str],
                 wanted: Iterable[str], spec_ttl: float, clock: Callable[[], float], wake: threading.Event,
                 log_once: OnceLog) -> None:
        self.url, self.headers, self.state, self.send, self.uploader = url, headers, state, send, uploader
        self.shipped, self.trusted = shipped, trusted
        self.spec_ttl, self.clock, self.wake, self.log_once = spec_ttl, clock, wake, log_once
        self.specs: dict[str, tuple[Spec, float]] = {}
        self.cached_at = cached_at
        self.wanted: set[str] = set(wanted)
        self.unknown: set[str] = set()
        self.closed_campaigns = set(closed)  # as the collector listed them, here or before a restart (stored)
        self.spec_errors: dict[str, SpecError] = {}
        self.checked = float("-inf")
        self.lock = threading.Lock()
        # Distributed campaigns: the aggregators block listed with each spec (cached with it) is checked against
        # what the app knows out of band (``trusted``: the helper's URL, whose HPKE configs are fetched from the
        # helper itself, and optional pins)
        self.aggregators: dict[str, Any] = {}
        self.helper_configs: list[Any] | None = None  # fetched from the helper (or read from the state file)
        self.helper_configs_loaded = False
        self.helper_configs_wanted = False
        self.sealers: dict[str, tuple[Any, Any]] = {}
        self.keys_refused = False  # an aggregator refused a report's HPKE key: fetch the listing after this send

    def has_spec(self, campaign: str) -> bool:
        "A spec fetched, cached or shipped (one the collector has not listed as unknown or closed)"
        return campaign not in self.closed_campaigns and (campaign in self.specs or campaign in self.cached_at
                or (campaign in self.shipped and campaign not in self.unknown))

    def answered(self, campaign: str) -> bool:
        "Whether the collector (or the app's shipped specs) has said anything about ``campaign``"
        return (campaign in self.specs or campaign in self.cached_at or campaign in self.unknown
                or campaign in self.closed_campaigns or campaign in self.shipped)

    def known(self, campaign: str) -> Spec | RecordStatus:
        "The spec held in memory or in the state file, or why there is none; asks the sender to fetch what is due"
        if campaign in self.spec_errors:
            raise UnsupportedSpec(f"campaign {campaign!r}: {self.spec_errors[campaign]}")
        if campaign in self.closed_campaigns:
            return RecordStatus.CAMPAIGN_CLOSED
        held = self.specs.get(campaign)
        if held is None and campaign in self.cached_at:
            cached = self.state.cached_spec(campaign)
            if cached is not None:
                try:
                    spec, self.aggregators[campaign] = _split_cached(cached[0])
                    held = self.specs[campaign] = (spec, cached[1])
                except SpecError as exc:
                    self.spec_errors[campaign] = exc
                    raise UnsupportedSpec(f"campaign {campaign!r}: {exc}") from None
        if campaign not in self.wanted:
            self.wanted.add(campaign)
        if held is None:
            if campaign in self.unknown:
                return RecordStatus.UNKNOWN_CAMPAIGN
            self.wake.set()
            shipped = self.shipped.get(campaign)
            if shipped is None:
                return RecordStatus.SPEC_UNAVAILABLE
            self.aggregators.setdefault(campaign, shipped[1])
            return shipped[0]  # until the collector's spec arrives (fetched, it replaces this one)
        if self.clock() - held[1] >= self.spec_ttl:
            self.wake.set()  # stale: keep using it, refresh in the background
        if kind_of(held[0]).wants_sealing_configs(held[0]) and self.helper_configs_missing():
            self.helper_configs_wanted = True
            self.wake.set()
            return RecordStatus.SPEC_UNAVAILABLE
        return held[0]

    def expire(self, campaign: str) -> None:
        """Fetch ``campaign``'s listing (and the helper's configs) again at the next chance: an aggregator refused a
        report as sealed to a key it retired or does not know.  Takes no lock: the uploader calls it while sending."""
        held = self.specs.get(campaign)
        if held is not None:
            self.specs[campaign] = (held[0], float("-inf"))
        if campaign in self.cached_at:
            self.cached_at[campaign] = float("-inf")
        self.wanted.add(campaign)
        self.keys_refused = True
        self.wake.set()

    def needed(self) -> bool:
        "Whether a wanted spec (or the helper's configs) is missing or older than ``spec_ttl``"
        if self.helper_configs_wanted:
            return True
        now = self.clock()
        for campaign in list(self.wanted):
            if campaign in self.unknown or campaign in self.closed_campaigns:
                if now - self.checked >= self.spec_ttl:
                    return True
                continue
            fetched = self.specs[campaign][1] if campaign in self.specs else self.cached_at.get(campaign)
            if fetched is None or now - fetched >= self.spec_ttl:
                return True
        return False

    def refresh(self, timeout: float | None = None) -> bool:
        "One ``GET /v1/campaigns`` for every wanted spec; False (and a backoff) if the collector did not answer"
        with self.lock:
            now = self.clock()
            try:
                response = self.send(Request("GET", f"{self.url}/v1/campaigns", dict(self.headers)), timeout)
            except TransportError as exc:
                self.uploader.fail("unreachable", str(exc), None)
                return False
            if response.status != 200:
                self.uploader.fail(condition_for(response.status), f"HTTP {response.status}: {problem(response)}",
                                   retry_after(response, now))
                return False
            listing = _parsed_listing(response.body)
            if listing is None:
                self.uploader.fail("unexpected_answer", "GET /v1/campaigns did not answer a list of campaigns", None)
                return False
            newly_closed = self.wanted & set(listing.items) - self.closed_campaigns
            fresh = self._fresh_specs(listing)
            newly_closed &= self.closed_campaigns
            with self.state.without_fsync():  # a cache: lost in a power cut, fetched again
                self.state.cache_spec_texts([*((campaign, text, spec.fingerprint, now)
                                               for campaign, (spec, _, text) in fresh.items()),
                                             *((campaign, CLOSED_SPEC_BODY, "", now) for campaign in newly_closed)])
            for campaign, (spec, body, _) in fresh.items():
                shipped = self.shipped.get(campaign)
                if shipped is not None and shipped[0].fingerprint != spec.fingerprint:
                    self.log_once(("superseded", campaign), "campaign %s: the collector's spec (fingerprint %s) "
                                  "replaces the one shipped with the app (%s)", campaign, spec.fingerprint,
                                  shipped[0].fingerprint)
                self.aggregators[campaign] = body.get("aggregators")
                self.specs[campaign] = (spec, now)
                self.cached_at[campaign] = now
            if any(kind_of(spec).wants_sealing_configs(spec) for spec, _, _ in fresh.values()):
                self.fetch_helper_configs(timeout)  # with every listing: the helper may have rotated its key
            self.checked = now
            self.keys_refused = False
            self.uploader.succeeded()
            return True

    def _fresh_specs(self, listing: _Listing) -> dict[str, tuple[Spec, dict, str]]:
        "The wanted campaigns' usable specs in ``listing``; the others marked unknown, closed or unusable"
        fresh: dict[str, tuple[Spec, dict, str]] = {}
        for campaign in list(self.wanted):
            item = listing.items.get(campaign)
            if item is None:
                if campaign not in self.unknown:
                    self.log_once(("unknown", campaign), "campaign %s: the collector has no such campaign", campaign)
                self.unknown.add(campaign)
                continue
            self.unknown.discard(campaign)
            if item.get("closed") is True:
                self.closed_campaigns.add(campaign)
                continue
            self.closed_campaigns.discard(campaign)
            parsed = listing.parsed(campaign)
            if isinstance(parsed, SpecError):
                self.spec_errors[campaign] = parsed
                continue
            if parsed is None:
                self.log_once(("fingerprint", campaign), "campaign %s: the spec does not match its fingerprint",
                              campaign)
                continue
            self.spec_errors.pop(campaign, None)
            fresh[campaign] = parsed
        return fresh

    def fetch(self, campaign: str, now: float) -> Spec:
        "``GET /v1/campaigns/<name>`` on this thread (raises UnknownCampaign or CampaignUnavailable)"
        try:
            response = self.send(Request("GET", f"{self.url}/v1/campaigns/{quote(campaign, safe='')}",
                                         dict(self.headers)), None)
        except TransportError:
            raise CampaignUnavailable(f"cannot fetch the spec of campaign {campaign!r}") from None
        if response.status == 404:
            raise UnknownCampaign(f"the collector has no campaign {campaign!r}")
        if response.status != 200:
            raise CampaignUnavailable(f"fetching campaign {campaign!r}: HTTP {response.status} {problem(response)}")
        body = response.json()
        spec = load_spec(body["spec"])
        if spec.fingerprint != body.get("fingerprint") or spec.name != campaign:
            raise LDPError(f"campaign {campaign!r}: the spec does not match its fingerprint")
        cached = _with_aggregators(spec, body["spec"], body.get("aggregators"))
        self.state.cache_spec(campaign, cached, spec.fingerprint, now)
        self.aggregators[campaign] = cached.get("aggregators")
        self.specs[campaign] = (spec, now)
        self.cached_at[campaign] = now
        if kind_of(spec).wants_sealing_configs(spec):
            self.fetch_helper_configs()
        return spec

    # -- distributed campaigns: the aggregators' HPKE configs ------------------------------------------------------
    def sealing_configs(self, campaign: str) -> tuple[Any, Any]:
        """The leader's and the helper's HPKE configs for ``campaign``: as its listing names them and the app's
        configuration vouches for (raises AggregatorMismatch, SpecError, or ImportError without the extra)"""
        # imported here: the distributed module (+10 ms; HPKE after it) only for a distributed campaign
        from .. import distributed

        aggregators = self.aggregators.get(campaign)
        helper_configs = self.helper_configs or []
        key = canonical_json([campaign, aggregators, [c.to_dict() for c in helper_configs]])
        configs = self.sealers.get(key)
        if configs is None:
            configs = distributed.aggregator_configs(aggregators, self.trusted, helper_configs)
            self.sealers[key] = configs
        return configs

    def helper_configs_missing(self) -> bool:
        "True when the configured helper's HPKE configs are needed and neither fetched nor in the state file"
        trusted = self.trusted
        if trusted is None or trusted.helper_pin is not None:
            return False
        try:
            # imported here: whether the optional distributed extra (cryptography) is installed
            from ..vdaf import hpke  # noqa: F401
        except ImportError:  # no `distributed` extra: record() names it (UnsupportedSpec) instead of holding
            return False
        if self.helper_configs is None and not self.helper_configs_loaded:
            self.helper_configs_loaded = True
            stored = self.state.setting(HELPER_CONFIGS_SETTING, "")
            try:
                cached = json.loads(stored) if stored else None
                if isinstance(cached, dict) and cached.get("url") == trusted.helper_url:
                    # imported here: the distributed module (+10 ms) only for a distributed campaign
                    from ..distributed import parse_hpke_configs

                    self.helper_configs = parse_hpke_configs(cached)
            except (ValueError, ImportError):
                pass  # fetched again
        return self.helper_configs is None

    def fetch_helper_configs(self, timeout: float | None = None) -> None:
        "``GET <helper>/v1/hpke_config`` from the helper itself (no API key: it is not the leader's to see)"
        trusted = self.trusted
        if trusted is None or trusted.helper_pin is not None or trusted.helper_url is None:
            return
        try:
            # imported here: the distributed module and HPKE (+66 ms) only for a distributed campaign
            from ..distributed import parse_hpke_configs

            response = self.send(Request("GET", f"{trusted.helper_url}/v1/hpke_config",
                                         {"Accept": "application/json"}), timeout)
            if response.status != 200:
                raise ValueError(f"HTTP {response.status}")
            configs = parse_hpke_configs(response.json())
        except (TransportError, ValueError, ImportError) as exc:
            self.log_once(("helper", "hpke_config"), "the helper's HPKE config could not be fetched from %s: %s",
                          trusted.helper_url, exc)
            return
        self.helper_configs = configs
        self.helper_configs_wanted = False
        with self.state.without_fsync():  # a cache: fetched again if lost
            self.state.set_setting(HELPER_CONFIGS_SETTING, json.dumps(
                {"url": trusted.helper_url, "configs": [c.to_dict() for c in configs]}))


class _Listing:
    """A ``GET /v1/campaigns`` answer, parsed: its items by name, and each item's spec parsed and checked against its
    fingerprint on first use (the Spec, the body the state file caches and that body's JSON; a SpecError; or None
    when the fingerprint does not match)"""

    def __init__(self, body: bytes, items: dict[str, dict]) -> None:
        self.body, self.items = body, items
        self._parsed: dict[str, tuple[Spec, dict, str] | SpecError | None] = {}

    def parsed(self, campaign: str) -> tuple[Spec, dict, str] | SpecError | None:
        if campaign in self._parsed:
            return self._parsed[campaign]
        item = self.items[campaign]
        result: tuple[Spec, dict, str] | SpecError | None
        try:
            spec = load_spec(item["spec"])
        except SpecError as exc:
            result = exc
        else:
            if spec.fingerprint != item.get("fingerprint") or spec.name != campaign:
                result = None
            else:
                body = _with_aggregators(spec, item["spec"], item.get("aggregators"))
                result = (spec, body, json.dumps(body))
        self._parsed[campaign] = result
        return result


_LAST_LISTING: list[_Listing] = []


def _parsed_listing(body: bytes) -> _Listing | None:
    """The parsed listing, from the process's last one when the collector answered the same bytes (every device of
    a process, as in the demo, gets the same listing: Specs are immutable, so they can share its parse)"""
    last = _LAST_LISTING[:1]
    if last and last[0].body == body:
        return last[0]
    items = campaign_list(Response(200, {}, body))
    if items is None:
        return None
    listing = _Listing(body, items)
    _LAST_LISTING[:] = [listing]
    return listing


def _with_aggregators(spec: Spec, body: dict, aggregators: Any) -> dict:
    "What the state file caches: the spec as listed, with the aggregators block its kind seals to (if any)"
    block = kind_of(spec).aggregators_of({"aggregators": aggregators})
    return body if block is None else {**body, "aggregators": block}


def _split_cached(body: dict) -> tuple[Spec, Any]:
    "The spec and the aggregators block (None for a local campaign) of a cached body"
    if isinstance(body, dict) and "aggregators" in body:
        spec_body = dict(body)
        aggregators = spec_body.pop("aggregators")
        return load_spec(spec_body), aggregators
    return load_spec(body), None
