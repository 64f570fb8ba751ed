"""Immutable value classes without ``dataclasses``.

``dataclasses`` imports ``inspect`` (and with it ``ast``, ``dis``, ``tokenize``): about a third of the cost of
``import client_sdk``.  The classes a spec is made of (``Spec``, ``Prio3Params``, ``RapporParams``) build on
:class:`Frozen` instead, which gives what ``@dataclass(frozen=True)`` gave them: equality and hashing by the
fields, a ``Name(field=value, ...)`` repr, assignment and deletion raising ``AttributeError``, and pickling and
copying (through ``__init__``, whose positional parameters are the fields in order).
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy treats the name as True)
if TYPE_CHECKING:
    from typing import Any, ClassVar, TypeVar

    F = TypeVar("F", bound="Frozen")


class Frozen:
    "Fields (named in ``_fields``, stored in ``__slots__``) set once in ``__init__`` with :meth:`_set`"

    __slots__ = ()
    _fields: ClassVar[tuple[str, ...]] = ()  # compared, hashed and shown, in __init__'s order

    def _set(self, **values: Any) -> None:
        "Set fields while building the object (the only writes a frozen object allows)"
        for name, value in values.items():
            object.__setattr__(self, name, value)

    def _replace(self: F, **changes: Any) -> F:
        "A copy with ``changes`` (as ``dataclasses.replace``)"
        return type(self)(**{**dict(zip(self._fields, self._values())), **changes})

    def _values(self) -> tuple:
        return tuple(getattr(self, name) for name in self._fields)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, Frozen)
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._fields)
        return f"{type(self).__qualname__}({fields})"

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot assign to field {name!r} of a frozen {type(self).__name__}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r} of a frozen {type(self).__name__}")

    def __reduce__(self) -> tuple:
        return type(self), self._values()
