"""Short text for statements and facts: durations, clipped messages, object refs.

Every text the engine hands out goes through ``clip``: one line, bounded, with an
ellipsis when cut, so one cluster's long message cannot blow a diagnosis's budget.
"""

from __future__ import annotations

from openrl_inspect.resolvers.diagnosis.causes import Fact, FactValue

STATEMENT_CHARS = 160
TEXT_CHARS = 120  # a quoted message (an error, a condition's message)
FACT_TEXT_CHARS = 64
REF_CHARS = 80
ELLIPSIS = "…"


def clip(text: str, limit: int = TEXT_CHARS) -> str:
    """One line of at most ``limit`` characters (whitespace folded, ``…`` when cut)."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    return flat[: max(0, limit - 1)].rstrip() + ELLIPSIS


def dur(seconds: float | None) -> str:
    """``45s``, ``12m``, ``1h05m``, ``3d04h``: precise enough to compare, short to read."""
    if seconds is None:
        return "?"
    s = max(0, round(seconds))
    if s < 120:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s" if s < 600 else f"{s // 60}m"
    if s < 86400:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 86400}d{s % 86400 // 3600:02d}h"


def secs(value: float) -> str:
    """A measured duration with the precision it deserves: ``0.31s``, ``4.2s``, ``95s``."""
    if value < 1:
        return f"{value:.2f}s"
    if value < 100:
        return f"{value:.1f}s"
    return dur(value)


def fact(name: str, value: FactValue, unit: str | None = None) -> Fact:
    """A fact with its text clipped and its float rounded (no 17-digit noise)."""
    if isinstance(value, str):
        value = clip(value, FACT_TEXT_CHARS)
    elif isinstance(value, float):
        value = round(value, 3)
    return Fact(name, value, unit)


def facts(*items: Fact | None) -> tuple[Fact, ...]:
    """The facts that are known (a ``None`` item or value is left out)."""
    return tuple(f for f in items if f is not None and f.value is not None)


def ref(kind: str, namespace: str, name: str) -> str:
    """``Pod ns/name``; ``Node name`` for cluster-scoped objects."""
    return clip(f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}", REF_CHARS)


def statement(text: str) -> str:
    return clip(text, STATEMENT_CHARS)
