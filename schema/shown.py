"""Which GraphQL type shows a record.

The types refer to each other (a Model has its Session and a Session its Models; a Pod
its Node and a Node its Pods), and their modules must not import each other. A field
that returns another type's objects asks ``shown`` for them by their records, each type
says which record it shows where it is defined (``@shows(Record)``), and annotations
name the types lazily (``strawberry.lazy``). Every type module is imported before a
document runs: building the schema resolves the lazy annotations.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

_MAKERS: dict[type, Callable[[Any], Any]] = {}


def shows(record: type) -> Callable[[type[T]], type[T]]:
    """Class decorator: this type shows ``record`` (built by its ``from_record``)."""

    def register(cls: type[T]) -> type[T]:
        _MAKERS[record] = getattr(cls, "from_record")  # noqa: B009  # the type's own constructor
        return cls

    return register


def shown(record: Any) -> Any:
    """The GraphQL object that shows ``record``."""
    return _MAKERS[type(record)](record)
