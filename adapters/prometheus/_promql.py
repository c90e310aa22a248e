"""PromQL text built from untrusted values, safely.

Every label *value* that reaches a query goes through :func:`quote` (a PromQL string
literal) and, for ``=~`` set matchers, through :func:`regex_escape` first. Every
*identifier* (metric name, label name) must match a strict pattern or is refused with
:class:`~openrl_inspect.core.errors.InvalidInput`; identifiers are never escaped.

Why not ``json.dumps``: a JSON string is *almost* a PromQL string, but JSON writes
characters outside the BMP as UTF-16 surrogate pairs (``\\ud83d\\ude00``), which the
PromQL lexer refuses ("invalid Unicode code point"), and the lexer also refuses a
literal U+FFFD (it cannot tell it from a decoding error). :func:`quote` follows the
PromQL lexer's own rules (Go string escapes):

* ``\\`` and ``"`` are backslash-escaped; ``\\n \\r \\t \\a \\b \\f \\v`` use their short
  escapes;
* every other non-printable character (C0/C1 controls, DEL, format and separator
  characters, unassigned code points, U+FFFD) is written ``\\uXXXX`` or ``\\UXXXXXXXX``;
* printable non-ASCII characters are written as themselves (UTF-8 on the wire);
* lone surrogates cannot be represented in UTF-8 and are refused.

RE2 (the regex engine of Prometheus) treats ``\\.+*?()|[]{}^$`` as metacharacters;
:func:`regex_escape` backslash-escapes exactly those (Go's ``regexp.QuoteMeta``).
Prometheus anchors every regex matcher (``^(?:...)$``), so an alternation of escaped
literals matches exactly the listed values.

Queries over many values are split by :func:`chunk_values` so that no query text grows
beyond a byte budget; the GPU layer issues one query per chunk (usually one in all).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from openrl_inspect.core.errors import InvalidInput

METRIC_NAME_RE = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
LABEL_NAME_RE = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
DURATION_RE = re.compile(r"[0-9]+(ms|s|m|h|d|w|y)")

# Go regexp.QuoteMeta's special characters, which are RE2's metacharacters.
_RE2_META = frozenset("\\.+*?()|[]{}^$")
_RE2_TABLE = str.maketrans({ch: "\\" + ch for ch in _RE2_META})
_SHORT_ESCAPES = {
    "\\": "\\\\",
    '"': '\\"',
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\v": "\\v",
}

MatchOp = Literal["=", "!=", "=~", "!~"]


def metric_name(name: str) -> str:
    """Return ``name`` if it is a valid metric name, else refuse it."""
    if not METRIC_NAME_RE.fullmatch(name):
        raise InvalidInput("invalid metric name")
    return name


def label_name(name: str) -> str:
    """Return ``name`` if it is a valid label name, else refuse it."""
    if not LABEL_NAME_RE.fullmatch(name):
        raise InvalidInput("invalid label name")
    return name


def _escape_char(ch: str) -> str:
    short = _SHORT_ESCAPES.get(ch)
    if short is not None:
        return short
    # The lexer reads a literal U+FFFD as a decoding error, so it is always escaped.
    if ch == " " or (ch.isprintable() and ch != "\ufffd"):
        return ch
    code = ord(ch)
    if 0xD800 <= code <= 0xDFFF:
        raise InvalidInput("label value is not valid Unicode (lone surrogate)")
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def escape_string(value: str) -> str:
    """The body of a PromQL double-quoted string literal holding ``value``."""
    if value.isascii() and value.isprintable() and '"' not in value and "\\" not in value:
        return value
    return "".join(_escape_char(ch) for ch in value)


def quote(value: str) -> str:
    """``value`` as a PromQL string literal (with the double quotes)."""
    return f'"{escape_string(value)}"'


def regex_escape(value: str) -> str:
    """``value`` as an RE2 pattern that matches exactly that text."""
    return value.translate(_RE2_TABLE)


def regex_alternation(values: Iterable[str]) -> str:
    """An RE2 pattern matching exactly one of ``values`` (de-duplicated, sorted)."""
    return "|".join(regex_escape(v) for v in sorted(set(values)))


def duration(seconds: float) -> str:
    """A PromQL duration for a whole, positive number of seconds (or milliseconds)."""
    if not seconds > 0 or seconds != seconds or seconds == float("inf"):
        raise InvalidInput("duration must be a positive number of seconds")
    millis = round(seconds * 1000)
    if millis <= 0:
        raise InvalidInput("duration must be at least one millisecond")
    if millis % 1000 == 0:
        return f"{millis // 1000}s"
    return f"{millis}ms"


@dataclass(frozen=True)
class Matcher:
    """One label matcher; ``value`` is the raw text for ``=``/``!=`` and an RE2 pattern
    for ``=~``/``!~`` (build those with :func:`in_set`)."""

    label: str
    op: MatchOp
    value: str

    def render(self) -> str:
        return f"{label_name(self.label)}{self.op}{quote(self.value)}"


def eq(label: str, value: str) -> Matcher:
    return Matcher(label, "=", value)


def neq(label: str, value: str) -> Matcher:
    return Matcher(label, "!=", value)


def in_set(label: str, values: Iterable[str]) -> Matcher:
    """``label=~"v1|v2|..."`` matching exactly the given literal values.

    An empty set is refused: ``label=~""`` would match series *without* the label.
    """
    vals = set(values)
    if not vals:
        raise InvalidInput("a set matcher needs at least one value")
    return Matcher(label, "=~", regex_alternation(vals))


def selector(metric: str, matchers: Sequence[Matcher] = ()) -> str:
    """``metric{m1,m2,...}``; the metric name and label names are validated."""
    name = metric_name(metric)
    if not matchers:
        return name
    return name + "{" + ",".join(m.render() for m in matchers) + "}"


def value_cost(value: str) -> int:
    """Bytes one value adds to a rendered ``=~`` alternation (its text plus the ``|``)."""
    return len(escape_string(regex_escape(value)).encode()) + 1


# A query builder: given the values of each set (label -> values) it renders one query.
QueryBuilder = Callable[[Mapping[str, Sequence[str]]], str]


def _probe(build: QueryBuilder, labels: Sequence[str]) -> tuple[int, dict[str, int]]:
    """Measure a builder: its size with one 1-byte value per set, and per set how many
    times a value's bytes appear in the query (the set matcher may be repeated)."""
    one = {lab: ["a"] for lab in labels}
    base = len(build(one).encode())
    mult: dict[str, int] = {}
    for lab in labels:
        longer = dict(one)
        longer[lab] = ["aa"]
        mult[lab] = len(build(longer).encode()) - base
    return base, mult


def chunk_values(
    sets: Mapping[str, Sequence[str]],
    build: QueryBuilder,
    max_bytes: int,
) -> list[str]:
    """Render the fewest queries (each at most ``max_bytes``) that together cover every
    value of every set. Values are de-duplicated and sorted so queries are stable.

    ``build`` receives, per chunk, only the sets that have values in that chunk (a set
    with no values must be left out of the query by the builder, never rendered as an
    empty alternation). A single value too long for any query is refused.
    """
    labels = [lab for lab, vals in sets.items() if vals]
    if not labels:
        return []
    base, mult = _probe(build, labels)
    # ``base`` holds one 1-byte value (cost 2 with its "|") per set; the first value of
    # a set adds no "|", so ``base`` is an upper bound for the empty-chunk overhead.
    items = [(lab, v) for lab in labels for v in sorted(set(sets[lab]))]
    queries: list[str] = []
    chunk: dict[str, list[str]] = {}
    used = base
    for lab, v in items:
        cost = mult[lab] * value_cost(v)
        if base + cost > max_bytes:
            raise InvalidInput("a label value is too long for one query")
        if chunk and used + cost > max_bytes:
            queries.append(build(chunk))
            chunk, used = {}, base
        chunk.setdefault(lab, []).append(v)
        used += cost
    if chunk:
        queries.append(build(chunk))
    if any(len(q.encode()) > max_bytes for q in queries):
        raise InvalidInput("query builder grew past the byte budget")
    return queries
