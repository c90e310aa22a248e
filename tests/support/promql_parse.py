"""An independent reader of PromQL selectors, for tests of ``adapters.promql``.

It follows the PromQL lexer's rules for double-quoted strings (Go escapes; a literal
newline or U+FFFD, an unknown escape, a surrogate or out-of-range code point are
errors) and returns every label matcher it reads, so a test can check that a built
query holds exactly the matchers it meant to, with the original values.
"""

from __future__ import annotations

import re

_IDENT = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_LABEL = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
_SIMPLE = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}
_SIMPLE.update({"\\": "\\", '"': '"'})


class ParseError(ValueError):
    pass


# A lexer is one loop over cases, as in Prometheus's own; splitting it hides the grammar.
def read_string(text: str, pos: int) -> tuple[str, int]:  # noqa: C901
    """Read the double-quoted literal starting at ``text[pos]``; return (value, end)."""
    if text[pos] != '"':
        raise ParseError(f"expected a string at {pos}")
    out: list[str] = []
    i = pos + 1
    while True:
        if i >= len(text):
            raise ParseError("unterminated string")
        ch = text[i]
        if ch == '"':
            return "".join(out), i + 1
        if ch == "\n":
            raise ParseError("newline in string")
        if ch == "\ufffd":
            raise ParseError("invalid UTF-8 rune")
        if ch != "\\":
            out.append(ch)
            i += 1
            continue
        i += 1
        if i >= len(text):
            raise ParseError("escape not terminated")
        esc = text[i]
        if esc in _SIMPLE:
            out.append(_SIMPLE[esc])
            i += 1
            continue
        if esc in "01234567":
            digits, base, width = text[i : i + 3], 8, 3
        elif esc == "x":
            digits, base, width = text[i + 1 : i + 3], 16, 2
        elif esc == "u":
            digits, base, width = text[i + 1 : i + 5], 16, 4
        elif esc == "U":
            digits, base, width = text[i + 1 : i + 9], 16, 8
        else:
            raise ParseError(f"unknown escape {esc!r}")
        if len(digits) != width:
            raise ParseError("short escape")
        try:
            code = int(digits, base)
        except ValueError as exc:
            raise ParseError("bad escape digits") from exc
        if code > 0x10FFFF or 0xD800 <= code < 0xE000:
            raise ParseError("invalid code point")
        if esc in "01234567x" and code > 0x7F:
            raise ParseError("byte escape outside ASCII (not UTF-8 text)")
        out.append(chr(code))
        i += width if esc in "01234567" else width + 1


def parse_selector(text: str) -> tuple[str, list[tuple[str, str, str]]]:
    """``metric{l1 op "v1", ...}`` -> (metric, [(label, op, value), ...]); the whole
    text must be one selector."""
    m = _IDENT.match(text)
    if not m:
        raise ParseError("no metric name")
    metric = m.group()
    pos = m.end()
    matchers: list[tuple[str, str, str]] = []
    if pos == len(text):
        return metric, matchers
    if text[pos] != "{":
        raise ParseError("trailing text after metric name")
    pos += 1
    while True:
        if text[pos] == "}":
            pos += 1
            break
        lm = _LABEL.match(text, pos)
        if not lm:
            raise ParseError(f"no label name at {pos}")
        pos = lm.end()
        op = next((o for o in ("=~", "!~", "!=", "=") if text.startswith(o, pos)), None)
        if op is None:
            raise ParseError(f"no match operator at {pos}")
        pos += len(op)
        value, pos = read_string(text, pos)
        matchers.append((lm.group(), op, value))
        if text[pos] == ",":
            pos += 1
        elif text[pos] != "}":
            raise ParseError(f"expected , or }} at {pos}")
    if pos != len(text):
        raise ParseError("trailing text after selector")
    return metric, matchers


def find_strings(text: str) -> list[str]:
    """Every double-quoted literal of a query, decoded, in order."""
    found: list[str] = []
    i = 0
    while i < len(text):
        if text[i] == '"':
            value, i = read_string(text, i)
            found.append(value)
        else:
            i += 1
    return found
