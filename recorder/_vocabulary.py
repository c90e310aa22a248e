"""The vocabularies the writer checks its enumerated arguments against.

A model's state, an op's status and a log level are checked here against the domain's
vocabularies: a value the reader would refuse raises, and the flow counts that record
alone as dropped (``invalid``), so the writer never stores what the reader cannot decode.
"""

from __future__ import annotations

import logging
from collections.abc import Collection

from openrl_inspect.core.domain import OpStatus

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
OP_STATUSES = frozenset(OpStatus)


def allowed(name: str, value: object, vocabulary: Collection[str]) -> None:
    """Refuse ``value`` unless it is one of ``vocabulary`` (the record is dropped, invalid)."""
    if value not in vocabulary:
        raise ValueError(f"unknown {name} {value!r}")


# A level number counts as the highest standard level at or below it (25: INFO).
_LEVEL_FLOORS = tuple((logging.getLevelName(name), name) for name in reversed(LOG_LEVELS))


def level_name(level: str | int) -> str:
    """``logging`` levels (numbers, or names in any case) as one of ``LOG_LEVELS``."""
    if isinstance(level, int):
        return next((name for floor, name in _LEVEL_FLOORS if level >= floor), "DEBUG")
    upper = str(level).upper()
    name = "WARNING" if upper == "WARN" else upper
    allowed("log level", name, LOG_LEVELS)
    return name
