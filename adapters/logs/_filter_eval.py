"""Evaluate the filter subset ``logfilter`` writes against LogEntry JSON.

Used by the in-memory twin and by the fake Cloud Logging server in the tests, so both
apply a filter the way the real service would for the parts we generate:

* ``AND``/``OR``/``NOT`` and parentheses; as in the Logging query language, ``OR``
  binds tighter than ``AND`` (``a OR b AND c`` is ``(a OR b) AND c``);
* ``field = "v"`` (exact), ``field : "v"`` (case-insensitive substring), ``!=``;
* ``severity`` compared by LogSeverity order, ``timestamp`` compared as instants.

Anything else (global restrictions, functions, regular expressions) is a
:class:`FilterSyntaxError`: a filter we never write should not silently match.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from openrl_inspect.adapters.logs._filter import SEVERITIES, Token, tokenize
from openrl_inspect.core.errors import FilterSyntaxError

Predicate = Callable[[Mapping[str, Any]], bool]

_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?([Zz]|[+-]\d{2}:\d{2})"
)


def parse_timestamp(text: str) -> datetime:
    """RFC 3339 with up to nanoseconds (cut to microseconds), as an aware UTC datetime."""
    match = _RFC3339.fullmatch(text.strip())
    if match is None:
        raise ValueError("not an RFC 3339 timestamp")
    year, month, day, hour, minute, second, frac, zone = match.groups()
    micros = int((frac or "0")[:6].ljust(6, "0"))
    iso = f"{year}-{month}-{day}T{hour}:{minute}:{second}.{micros:06d}"
    iso += "+00:00" if zone in ("Z", "z") else zone
    return datetime.fromisoformat(iso).astimezone(UTC)


def severity_rank(name: str) -> int:
    try:
        return SEVERITIES.index(name.upper())
    except ValueError:
        return 0


def compile_filter(text: str) -> Predicate:
    """A predicate over one LogEntry JSON object; raises FilterSyntaxError."""
    parser = _Parser(tokenize(text))
    predicate = parser.expression()
    if parser.peek() is not None:
        raise FilterSyntaxError("unexpected text after the filter")
    return predicate


class _Parser:
    def __init__(self, tokens: list[Token]) -> None:
        self._tokens = tokens
        self._pos = 0

    def peek(self) -> Token | None:
        return self._tokens[self._pos] if self._pos < len(self._tokens) else None

    def _take(self) -> Token:
        token = self.peek()
        if token is None:
            raise FilterSyntaxError("the filter ends too early")
        self._pos += 1
        return token

    def _keyword(self, word: str) -> bool:
        token = self.peek()
        if token is not None and token.kind == "NAME" and token.value == word:
            self._pos += 1
            return True
        return False

    def expression(self) -> Predicate:
        parts = [self._disjunction()]
        while self._keyword("AND"):
            parts.append(self._disjunction())
        return parts[0] if len(parts) == 1 else (lambda e: all(p(e) for p in parts))

    def _disjunction(self) -> Predicate:
        parts = [self._term()]
        while self._keyword("OR"):
            parts.append(self._term())
        return parts[0] if len(parts) == 1 else (lambda e: any(p(e) for p in parts))

    def _term(self) -> Predicate:
        if self._keyword("NOT"):
            inner = self._term()
            return lambda e: not inner(e)
        token = self.peek()
        if token is not None and token.kind == "LPAREN":
            self._pos += 1
            inner = self.expression()
            if self._take().kind != "RPAREN":
                raise FilterSyntaxError("expected )")
            return inner
        return self._comparison()

    def _comparison(self) -> Predicate:
        path = self._field_path()
        op = self._take()
        if op.kind != "OP":
            raise FilterSyntaxError(f"expected an operator at {op.offset}")
        value = self._take()
        keyword = value.kind == "NAME" and value.value in ("AND", "OR", "NOT")
        if value.kind not in ("STRING", "NAME") or keyword:
            raise FilterSyntaxError(f"expected a value at {value.offset}")
        return _comparator(path, op.value, value.value)

    def _field_path(self) -> tuple[str, ...]:
        first = self._take()
        if first.kind != "NAME" or first.value in ("AND", "OR", "NOT"):
            raise FilterSyntaxError(f"expected a field name at {first.offset}")
        path = [first.value]
        while (token := self.peek()) is not None and token.kind == "DOT":
            self._pos += 1
            segment = self._take()
            if segment.kind not in ("NAME", "STRING"):
                raise FilterSyntaxError(f"expected a field name at {segment.offset}")
            path.append(segment.value)
        return tuple(path)


def _lookup(entry: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    node: Any = entry
    for segment in path:
        if not isinstance(node, Mapping) or segment not in node:
            node = None
            break
        node = node[segment]
    if path == ("severity",) and node is None:
        return "DEFAULT"  # an entry without a severity has severity DEFAULT
    return node


def _comparator(path: tuple[str, ...], op: str, literal: str) -> Predicate:
    if path == ("severity",):
        if literal.upper() not in SEVERITIES:
            raise FilterSyntaxError("unknown severity")
        want = severity_rank(literal)
        return _ordered(path, op, want, lambda v: severity_rank(str(v)))
    if path == ("timestamp",):
        try:
            moment = parse_timestamp(literal)
        except ValueError:
            raise FilterSyntaxError("invalid timestamp") from None
        return _ordered(path, op, moment, lambda v: parse_timestamp(str(v)))
    if op == ":":
        needle = literal.casefold()
        return lambda e: _has(_lookup(e, path), needle)
    if op in ("=", "!="):
        negate = op == "!="
        return lambda e: (_scalar(_lookup(e, path)) == literal) != negate
    raise FilterSyntaxError(f"operator {op} is not supported on this field")


def _ordered(path: tuple[str, ...], op: str, want: Any, convert: Callable[[Any], Any]) -> Predicate:
    compare: dict[str, Callable[[Any, Any], bool]] = {
        "=": lambda a, b: bool(a == b),
        "!=": lambda a, b: bool(a != b),
        ">=": lambda a, b: bool(a >= b),
        "<=": lambda a, b: bool(a <= b),
        ">": lambda a, b: bool(a > b),
        "<": lambda a, b: bool(a < b),
    }
    if op not in compare:
        raise FilterSyntaxError(f"operator {op} is not supported on this field")
    check = compare[op]

    def predicate(entry: Mapping[str, Any]) -> bool:
        value = _lookup(entry, path)
        if value is None:
            return False
        try:
            return check(convert(value), want)
        except ValueError:
            return False

    return predicate


def _scalar(value: Any) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return str(value)
    return None


def _has(value: Any, needle: str) -> bool:
    text = _scalar(value)
    return text is not None and needle in text.casefold()
