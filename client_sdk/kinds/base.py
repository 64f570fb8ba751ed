"""The registry of campaign kinds, device side: what every side asks of a kind before it asks its own side.

A campaign's kind is its spec's ``kind`` member; a spec without one is ``prio3`` when its ``trust`` is
``distributed`` and ``local`` otherwise (:func:`kind_name`).  ``trust`` names a trust model only; a kind declares the
ones it supports.  Each kind registers one :class:`CampaignKind` here (``register_kind``); the collector and the
estimators keep their own registries of the same names (``collector.kinds``, ``estimators.kinds``).  Nothing outside
the kind modules asks "which kind is this?": it looks the kind up (:func:`kind_of`) and calls it.

A kind outside the project's packages is registered by importing its module: name it in the environment variable
``LDP_TELEMETRY_KINDS`` (comma-separated module names) or in the entry-point group ``ldp_telemetry.kinds`` of its
distribution (the entry point's value is the module).  They are imported once, when a registry is first asked for
a kind it does not have (``import client_sdk`` stays cheap: ``importlib.metadata`` only then).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from ..errors import KindModuleError, SpecError, UnsupportedSpec

# Function-level imports: importlib and importlib.metadata only when a kind is looked up that is not registered
# (``import client_sdk`` does not load them: start-up).
TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy treats the name as True)
if TYPE_CHECKING:
    from typing import Any, ClassVar

    from .context import DeviceContext

DEFAULT_KIND = "local"  # a spec with neither ``kind`` nor a trust model another built-in kind supports
KINDS_VARIABLE = "LDP_TELEMETRY_KINDS"
ENTRY_POINT_GROUP = "ldp_telemetry.kinds"


class CampaignKind:
    """One campaign kind as a device sees it: its spec parameters, how a report is made and what it charges.

    Subclasses set ``name``, ``trust_models`` and ``fields`` and override what differs; the defaults are those of a
    kind with one report per value, pure epsilon and a UTC day as its period."""

    name: ClassVar[str] = ""
    trust_models: ClassVar[tuple[str, ...]] = ("local",)  # the first is a spec's when it names none
    fields: ClassVar[frozenset[str]] = frozenset()  # the top-level spec members it owns (beside the envelope's)

    # -- the spec -----------------------------------------------------------------------------------------------
    def parse_params(self, data: dict, envelope: dict[str, Any]) -> Any:
        """The kind's parameters from a spec's JSON (``envelope`` holds the envelope's validated fields: name,
        description, version, delta, expires, trust); SpecError naming the field otherwise.  The object has at
        least ``epsilon`` (what one report spends)."""
        raise NotImplementedError

    def identity(self, spec: Any) -> dict:
        "The kind's part of the spec's identity (its fingerprint): here its name, trust model and epsilon"
        return {"kind": self.name, "trust": spec.trust, "epsilon": spec.epsilon}

    def to_dict(self, spec: Any, out: dict, *, derived: bool) -> dict:
        "The spec's JSON: ``out`` (identity and envelope) with what the kind adds (``derived``: informational)"
        return out

    def json_schema(self) -> dict:
        "A JSON Schema of the kind's own fields (the OpenAPI document and the conformance cases read it)"
        return {"type": "object", "properties": {}}

    # -- the device -------------------------------------------------------------------------------------------
    def make_report(self, ctx: DeviceContext, spec: Any, value: Any) -> Any:
        "The report's payload, or a ``RecordStatus`` saying why none is made (nothing is charged then)"
        raise NotImplementedError

    def batch_of(self, spec: Any, now: float) -> str | None:
        "The batch a report of ``spec`` made at ``now`` belongs to (the ledger charges once per batch), or None"
        return None

    def report_period(self, spec: Any) -> float:
        "The campaign's period in seconds: a report policy that names none caps reports per this (a UTC day)"
        return 86400.0

    def period_origin(self, spec: Any) -> float:
        "A UTC second one of the campaign's periods starts at (the periods of ``report_period`` are counted from it)"
        return 0.0

    def ledger_charge(self, spec: Any, ctx: DeviceContext | None = None) -> tuple[float, float]:
        """(epsilon, delta) one report of ``spec`` spends; ``ctx`` is the report's (asked in the record's
        transaction, after ``make_report``: a kind whose reports reuse memoized answers charges only a new one)"""
        return float(spec.epsilon), 0.0

    # -- what other modules ask the kind to do ------------------------------------------------------------------
    def aggregators_of(self, listing: Mapping[str, Any]) -> Any:
        "The aggregators block a campaign listing item carries for this kind's reports (None: it seals to none)"
        return None

    def wants_sealing_configs(self, spec: Any) -> bool:
        "Whether a device must fetch the aggregators' HPKE configs before it can report to ``spec``"
        return False

    def vdaf_of(self, spec: Any) -> Any:
        """The VDAF a distributed kind's reports are sharded with (``client_sdk.distributed.seal_report`` asks): by
        default the spec's Prio3 circuit (``spec.prio3``), for any kind whose distributed campaigns carry one"""
        if getattr(spec, "prio3", None) is None:
            raise SpecError("kind", f"campaign {spec.name!r} is a {self.name!r} campaign: it seals no VDAF shares")
        from .. import distributed  # here: as in make_report

        return distributed.vdaf_for(spec)

    def measurement_of(self, spec: Any, value: Any) -> Any:
        "The VDAF measurement of ``value`` (TypeError, ValueError naming what is wrong): the Prio3 one by default"
        if getattr(spec, "prio3", None) is None:
            raise SpecError("kind", f"campaign {spec.name!r} is a {self.name!r} campaign: it seals no VDAF shares")
        from .. import distributed  # here: as in make_report

        return distributed.encode_value(spec, value)

    def prio3_measurement(self, spec: Any, value: Any) -> object:
        """The Prio3 measurement a distributed campaign of this kind shards for ``value`` (its circuit is
        ``spec.prio3``); TypeError or ValueError for a value the spec does not take"""
        raise ValueError(f"campaign {spec.name!r} is a {self.name!r} campaign: it has no Prio3 measurement")

    def require_randomizer(self, spec: Any) -> None:
        "Raise SpecError unless ``spec``'s reports are made by one of the local randomizers (``mechanism``)"
        raise SpecError("kind", f"campaign {spec.name!r} is a {self.name!r} campaign: it has no local randomizer")

    def randomizer_of(self, ctx: DeviceContext, spec: Any) -> Any:
        "The device's local randomizer for ``spec``; UnsupportedSpec for a kind whose reports no randomizer makes"
        raise UnsupportedSpec(f"campaign {spec.name!r} is a {self.name!r} campaign: it has no local randomizer")


class Registry:
    """The kinds one side registered, by name; every side has one (``collector.kinds``, ``estimators.kinds``,
    ``estimators.report.kinds``), and a kind is known to a side only if its device side is registered too"""

    def __init__(self, side: str) -> None:
        self.side = side
        self.kinds: dict[str, Any] = {}

    def register(self, kind: Any) -> Any:
        "Register ``kind`` under its name (once: a second kind of the same name is a bug)"
        if not kind.name or self.kinds.get(kind.name, kind) is not kind:
            raise ValueError(f"campaign kind {kind.name!r} is empty or already has a {self.side}")
        self.kinds[kind.name] = kind
        return kind

    def unregister(self, name: str) -> None:
        "Forget a kind (tests registering a toy kind remove it again)"
        self.kinds.pop(name, None)

    def find(self, spec: Any) -> Any:
        "The kind of ``spec`` (a Spec, its JSON or an estimate), None when this side has none"
        name = kind_name(spec)
        if not isinstance(name, str):
            return None
        if name not in self.kinds or name not in DEVICE.kinds:
            load_outside_kinds()
        kind = self.kinds.get(name)
        return kind if kind is not None and name in DEVICE.kinds else None

    def of(self, spec: Any) -> Any:
        "The kind of ``spec``; SpecError('kind') when this side has none"
        kind = self.find(spec)
        if kind is None:
            raise SpecError("kind", f"must be one of {[name for name in kind_names() if name in self.kinds]}")
        return kind


DEVICE = Registry("device side")  # the list of kinds: the other sides' registries take only kinds named here
_LOADED: list[bool] = []


def outside_kind_modules() -> list[str]:
    "The modules that register outside kinds: the environment variable's, then the entry points'"
    names = [name.strip() for name in os.environ.get(KINDS_VARIABLE, "").split(",") if name.strip()]
    from importlib.metadata import entry_points  # here: importlib.metadata costs more than import client_sdk

    names += [point.value.partition(":")[0].strip() for point in entry_points(group=ENTRY_POINT_GROUP)]
    return list(dict.fromkeys(names))


def load_outside_kinds(*, again: bool = False) -> None:
    "Import the outside kinds' modules (once; ``again`` for tests that change the environment)"
    if _LOADED and not again:
        return
    _LOADED[:] = [True]
    from importlib import import_module

    for module in outside_kind_modules():
        try:
            import_module(module)
        except Exception as exc:  # noqa: BLE001 - any failure of an outside module names the module
            raise KindModuleError(f"campaign kind module {module!r} (named in {KINDS_VARIABLE} or the entry-point "
                                  f"group {ENTRY_POINT_GROUP!r}) cannot be imported: {exc}") from exc


def register_kind(kind: CampaignKind) -> CampaignKind:
    "Register ``kind`` under its name (once: a second kind of the same name is a bug)"
    return DEVICE.register(kind)


def unregister_kind(name: str) -> None:
    "Forget a kind (tests registering a toy kind remove it again)"
    DEVICE.unregister(name)


def kind_names() -> tuple[str, ...]:
    "The registered kinds' names: the default (local) first, the others in registration order"
    return tuple(sorted(DEVICE.kinds, key=lambda name: name != DEFAULT_KIND))


def kind_name(spec: Any) -> Any:
    """The kind a spec names (a Spec, its JSON or an estimate): its ``kind``; else the built-in kind whose trust
    model its ``trust`` is (``distributed``: prio3); else ``local``.  An estimate's ``kind`` is its type
    ("frequency"): its campaign's kind is the one its ``trust`` implies, or names"""
    if isinstance(spec, Mapping):
        named, trust = spec.get("kind"), spec.get("trust")
    else:  # a Spec, or an Estimate
        named, trust = getattr(spec, "kind", None), getattr(spec, "trust", None)
    if isinstance(named, str):
        if named not in DEVICE.kinds:
            load_outside_kinds()
        if named in DEVICE.kinds:
            return named
    if not isinstance(trust, str):
        return DEFAULT_KIND
    # An estimate names its campaign's kind by ``trust`` (the estimate's own ``kind`` is its type, "frequency")
    return _TRUST_KINDS.get(trust, trust if trust in DEVICE.kinds else DEFAULT_KIND)


_TRUST_KINDS = {"distributed": "prio3"}  # a spec without ``kind``: the kind its trust model implies


def find_kind(spec: Any) -> CampaignKind | None:
    "The registered kind of ``spec`` (a Spec or its JSON), or None when it names none"
    return DEVICE.find(spec)


def kind_of(spec: Any) -> CampaignKind:
    "The registered kind of ``spec``; SpecError('kind') when it names none"
    return DEVICE.of(spec)
