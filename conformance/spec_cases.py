"""What every kind's spec cases share: a spec changed from a base (``DROP`` removes a field), and the refusals of
invalid specs as the conformance files record them (the error's class and the field it names)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from client_sdk.errors import SpecError
from client_sdk.spec import load_spec

DROP = object()


def with_changes(base: dict[str, Any], **changes: Any) -> dict[str, Any]:
    "``base`` with ``changes`` applied; a change to ``DROP`` removes the field"
    return {key: value for key, value in {**base, **changes}.items() if value is not DROP}


def refusals(specs: Iterable[Any]) -> list[dict[str, Any]]:
    """Each spec (a dict or another JSON value; a string is sent as its JSON text) with the error loading it raises
    and the field it names; AssertionError if one of them loads"""
    refused = []
    for data in specs:
        try:
            load_spec(json.dumps(data)) if isinstance(data, str) else load_spec(data)
        except SpecError as exc:
            refused.append({"spec": data, "error": type(exc).__name__, "field": exc.field})
        else:
            raise AssertionError(f"spec {data!r} should be invalid")
    return refused
