"""Strict decoding of one stored field, and the caps on what a field may return.

Every decoder names the field it refused in a ``DecodeError`` (never the key); the
adapter turns that into a ``BadRecord`` for the one record it is in. What leaves the
server is always valid JSON for a browser: no NaN or infinities, no lone surrogates,
times a ``datetime`` can hold, integers GraphQL's ``Int`` can hold, bounded nesting.
Values past a size cap are replaced or cut, with a marker that says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import orjson
from openrl_inspect.core.errors import BadRecord, DecodeError

#: Longest text value returned whole; longer ones are cut with a marker.
MAX_TEXT_CHARS: Final = 64 * 1024
#: Longest stored JSON value decoded; a longer one is answered by a marker object.
MAX_JSON_CHARS: Final = 1024 * 1024
#: Deepest nesting of a JSON value returned.
MAX_JSON_DEPTH: Final = 64
#: GraphQL's ``Int`` is 32-bit signed.
MAX_INT: Final = 2**31 - 1
#: Epoch seconds a ``datetime`` can hold (years 1 to 9999, kept clear of the edges).
_MIN_TIME: Final = -62_135_596_800.0 + 86_400
_MAX_TIME: Final = 253_402_300_799.0 - 86_400


def text(h: Mapping[str, str], name: str, default: str = "") -> str:
    raw = h.get(name)
    if raw is None:
        return default
    if len(raw) > MAX_TEXT_CHARS:
        return f"{raw[:MAX_TEXT_CHARS]}… [truncated: {len(raw)} characters stored]"
    return raw


def time(h: Mapping[str, str], name: str) -> float | None:
    raw = h.get(name)
    if raw is None or raw == "":
        return None
    try:
        value = float(raw)
    except ValueError:
        raise DecodeError(f"field {name!r} is not a number") from None
    if not _MIN_TIME <= value <= _MAX_TIME:  # also false for NaN
        raise DecodeError(f"field {name!r} is not a time in range")
    return value


def integer(h: Mapping[str, str], name: str) -> int | None:
    raw = h.get(name)
    if raw is None or raw == "":
        return None
    try:
        return counter(int(raw), name)
    except ValueError:
        raise DecodeError(f"field {name!r} is not an integer") from None


def counter(value: float, what: str) -> int:
    """A step number or count: a whole number from 0 to 2^31 - 1."""
    if not (0 <= value <= MAX_INT) or value != int(value):  # also false for NaN
        raise DecodeError(f"{what} is not a whole number from 0 to {MAX_INT}")
    return int(value)


def choice(h: Mapping[str, str], name: str, allowed: tuple[str, ...], default: str) -> str:
    raw = h.get(name)
    if raw is None or raw == "":
        return default
    if raw not in allowed:
        raise DecodeError(f"field {name!r} has an unknown value {raw[:40]!r}")
    return raw


def strings(h: Mapping[str, str], name: str) -> list[str]:
    """A JSON array of strings (GPU ids, pod names)."""
    value = _loads(h.get(name), name, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise DecodeError(f"field {name!r} is not a list of strings")
    return [v if len(v) <= MAX_TEXT_CHARS else v[:MAX_TEXT_CHARS] for v in value]


def _loads(raw: str | None, name: str, default: Any) -> Any:
    if raw is None or raw == "":
        return default
    try:
        value = orjson.loads(raw)  # refuses NaN, Infinity, 1e400, lone surrogates
    except orjson.JSONDecodeError:
        raise DecodeError(f"field {name!r} is not JSON") from None
    if _too_deep(value):
        raise DecodeError(f"field {name!r} nests deeper than {MAX_JSON_DEPTH}")
    return value


def _too_deep(value: Any) -> bool:
    level: list[Any] = [value]
    for _ in range(MAX_JSON_DEPTH + 1):
        nxt: list[Any] = []
        for v in level:
            if isinstance(v, dict):
                nxt.extend(v.values())
            elif isinstance(v, list):
                nxt.extend(v)
        if not nxt:
            return False
        level = nxt
    return True


@dataclass(frozen=True, slots=True)
class JsonField:
    """A JSON object field kept as stored and decoded only when it is asked for.

    A record whose unselected field is corrupt is still read; asking for the field
    raises ``BadRecord`` for that record alone.
    """

    kind: str
    ident: str
    name: str
    raw: str | None

    def value(self) -> dict[str, Any]:
        raw = self.raw
        if raw is not None and len(raw) > MAX_JSON_CHARS:
            return {"truncated": True, "storedChars": len(raw), "limitChars": MAX_JSON_CHARS}
        try:
            value = _loads(raw, self.name, {})
        except DecodeError as exc:
            raise BadRecord(self.kind, self.ident, str(exc)) from None
        if not isinstance(value, dict):
            raise BadRecord(self.kind, self.ident, f"field {self.name!r} is not a JSON object")
        return value

    @classmethod
    def of(cls, value: Mapping[str, Any], kind: str = "", ident: str = "") -> JsonField:
        """A field holding ``value`` (for records built in code, not read from Redis)."""
        return cls(kind, ident, "", orjson.dumps(dict(value)).decode())
