"""Specs an app ships with itself (``Client(..., specs=...)``), so that a fresh device records from its first call.

A shipped spec is parsed and checked exactly as a fetched one (``load_spec``; a ``fingerprint`` it carries, or its
listing item carries, must be its own) and is used only while the collector's word on the campaign is missing:
a spec fetched (or cached) from the collector always wins, and a campaign the collector lists as closed or does
not list at all is not recorded, shipped spec or not.

Accepted forms: a spec (``dict`` or :class:`Spec`); an item as ``GET /v1/campaigns`` lists it (``{"name", "spec",
"fingerprint", "aggregators", ...}``: a distributed campaign's ``aggregators`` block is checked when it is used,
as a fetched one's); a list of those; or
the path of a JSON file holding any of these, or a whole saved listing (``{"campaigns": [...]}``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..errors import SpecError
from ..kinds import kind_of
from ..spec import Spec, load_spec

ShippedSpec = tuple[Spec, Any]  # the spec and its aggregators block (None for a local campaign)


def shipped_specs(source: Any) -> dict[str, ShippedSpec]:
    "The shipped specs by campaign name; SpecError (a ValueError) naming ``specs[i].field`` for a bad one"
    if source is None:
        return {}
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        try:
            source = json.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise SpecError("specs", f"cannot read {path} ({exc.strerror or exc})") from None
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise SpecError("specs", f"{path} is not a JSON file ({exc})") from None
        if isinstance(source, dict) and isinstance(source.get("campaigns"), list):
            source = source["campaigns"]
    if isinstance(source, (dict, Spec)):
        source = [source]
    if not isinstance(source, Iterable):
        raise SpecError("specs", "must be a list of specs or the path of a JSON file of specs")
    out: dict[str, ShippedSpec] = {}
    for index, item in enumerate(source):
        spec, aggregators = _one(item, f"specs[{index}]")
        if spec.name in out:
            raise SpecError(f"specs[{index}].name", f"campaign {spec.name!r} is shipped twice")
        out[spec.name] = (spec, aggregators)
    return out


def _one(item: Any, where: str) -> ShippedSpec:
    if isinstance(item, Spec):
        body: Any = item
        listed: dict = {}
    elif isinstance(item, dict) and isinstance(item.get("spec"), dict):
        body, listed = item["spec"], item
    elif isinstance(item, dict):
        body, listed = item, {}
    else:
        raise SpecError(where, "must be a spec (a JSON object) or a campaign listing item")
    try:
        spec = load_spec(body)
    except SpecError as exc:
        raise SpecError(f"{where}.{exc.field}", exc.reason) from None
    if listed.get("fingerprint") is not None and listed["fingerprint"] != spec.fingerprint:
        raise SpecError(f"{where}.fingerprint", "does not match the spec's parameters (the spec was altered)")
    if listed.get("name") is not None and listed["name"] != spec.name:
        raise SpecError(f"{where}.name", f"is not the spec's name {spec.name!r}")
    return spec, kind_of(spec).aggregators_of(listed)
