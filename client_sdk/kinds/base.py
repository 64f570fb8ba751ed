"""The registry of campaign kinds, device side: what every side asks of a kind before it asks its own side.

A campaign's kind is named by its spec's ``trust`` member ("local" when absent).  Each kind registers one
:class:`CampaignKind` here (``register_kind``); the collector and the estimators keep their own registries of the
same names (``collector.kinds``, ``estimators.kinds``).  Nothing outside the kind modules asks "which kind is this?":
it looks the kind up (:func:`kind_of`) and calls it.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..errors import SpecError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy treats the name as True)
if TYPE_CHECKING:
    from typing import Any, ClassVar, Protocol

    class ReportMaker(Protocol):
        "What a device offers a kind to make a payload with (``Recorder``): its randomizers and sealing configs"

        def perturbed(self, spec: Any, value: Any) -> Any: ...

        def sealed(self, spec: Any, campaign: str, value: Any, report_id: str, batch: str) -> Any: ...

DEFAULT_KIND = "local"  # a spec without ``trust``


class CampaignKind:
    """One campaign kind as a device sees it: how a report is made and what it charges to the privacy ledger.

    Subclasses set ``name`` (the spec's ``trust``) and override what differs; the defaults are a local kind's."""

    name: ClassVar[str] = ""
    # its specs are listed with an ``aggregators`` block and reports are sealed with the helper's HPKE configs
    needs_aggregators: ClassVar[bool] = False
    takes_mechanism: ClassVar[bool] = True  # its spec names one of the randomizers (``mechanism``)

    def spec_from_dict(self, spec_class: Any, data: dict, common: dict[str, Any]) -> Any:
        """The spec of this kind from its JSON (``Spec.from_dict`` has checked the fields every kind shares:
        ``common`` holds name, description, version, delta, expires); SpecError naming the field otherwise"""
        raise NotImplementedError

    def identity(self, spec: Any) -> dict:
        "What the kind adds to a spec's identity (its fingerprint and JSON): ``trust``, so that it reloads as this kind"
        return {"trust": self.name}

    def batch_of(self, spec: Any, now: float) -> str | None:
        "The batch a report of ``spec`` made at ``now`` belongs to (the ledger charges once per batch), or None"
        return None

    def report_period(self, spec: Any) -> float:
        "The campaign's period in seconds: a report policy that names none caps reports per this (a UTC day)"
        return 86400.0

    def ledger_charge(self, spec: Any) -> tuple[float, float]:
        "(epsilon, delta) one report of ``spec`` spends"
        return float(spec.epsilon), 0.0

    def make_payload(self, maker: ReportMaker, spec: Any, campaign: str, value: Any, report_id: str,
                     batch: str | None) -> Any:
        "The report's payload, or a ``RecordStatus`` saying why none is made (nothing is charged then)"
        raise NotImplementedError


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
        "The kind of ``spec`` (a Spec, its JSON or an estimate: their ``trust``), None when this side has none"
        name = kind_name(spec)
        kind = self.kinds.get(name) if isinstance(name, str) else None
        return kind if kind is not None and name in DEVICE.kinds else None

    def of(self, spec: Any) -> Any:
        "The kind of ``spec``; SpecError('trust') when this side has none"
        kind = self.find(spec)
        if kind is None:
            raise SpecError("trust", f"must be one of {[name for name in kind_names() if name in self.kinds]}")
        return kind


DEVICE = Registry("device side")  # the list of kinds: the other sides' registries take only kinds named here


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
    "The kind a spec names: its ``trust`` (a Spec or its JSON), ``local`` when it has none"
    trust = spec.get("trust", DEFAULT_KIND) if isinstance(spec, Mapping) else getattr(spec, "trust", DEFAULT_KIND)
    return DEFAULT_KIND if trust is None else trust


def find_kind(spec: Any) -> CampaignKind | None:
    "The registered kind of ``spec`` (a Spec or its JSON), or None when it names none"
    return DEVICE.find(spec)


def kind_of(spec: Any) -> CampaignKind:
    "The registered kind of ``spec``; SpecError('trust') when it names none"
    return DEVICE.of(spec)
