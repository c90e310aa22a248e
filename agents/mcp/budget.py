"""Every tool answer fits a stated token budget, and says when it was cut.

Tokens are counted as the diagnosis counts them (characters of compact JSON over
``CHARS_PER_TOKEN``). A paged tool asks for a smaller page until its answer fits, so its
cursor goes on from the last item shown; anything else has its longest lists cut from the
end (the least urgent items, as every list here is ranked or newest first) and says
which lists lost how many items.
"""

from __future__ import annotations

import json
import math
from typing import Any

from openrl_inspect.resolvers.diagnosis.budget import CHARS_PER_TOKEN

#: The budget of every tool's answer unless its description says otherwise.
TOKENS = 2000


def tokens(value: Any) -> int:
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def _lists(value: Any, path: str = "") -> list[tuple[str, list[Any]]]:
    found: list[tuple[str, list[Any]]] = []
    if isinstance(value, dict):
        for k, v in value.items():
            found += _lists(v, f"{path}.{k}" if path else k)
    elif isinstance(value, list):
        if value:
            found.append((path, value))
        for item in value:
            found += _lists(item, f"{path}[]")
    return found


def _strings(value: Any, path: str = "") -> list[tuple[str, Any, Any, str]]:
    """Every string with where it sits: (path, container, key, text)."""
    found: list[tuple[str, Any, Any, str]] = []
    items = value.items() if isinstance(value, dict) else enumerate(value)
    for k, v in items:
        here = f"{path}.{k}" if isinstance(value, dict) else f"{path}[]"
        if isinstance(v, str):
            found.append((here.lstrip("."), value, k, v))
        elif isinstance(v, dict | list):
            found += _strings(v, here)
    return found


def cut(value: Any, budget: int) -> tuple[Any, list[str]]:
    """``value`` with items dropped from the ends of its longest lists until it fits
    ``budget`` tokens (in place), and what was dropped, as ``path: N item(s) left off``.
    A single text too long for the budget alone is cut short last (``path: text cut``)."""
    dropped: dict[str, int] = {}
    clipped: set[str] = set()
    while tokens(value) > budget:
        lists = [(p, items) for p, items in _lists(value) if len(items) > 1]
        if lists:
            path, longest = max(lists, key=lambda pl: tokens(pl[1]))
            # Drop as many trailing items as the excess needs in one go: one count of
            # the whole answer per round, not per item.
            excess = tokens(value) - budget
            while len(longest) > 1 and excess > 0:
                excess -= tokens(longest.pop()) + 1
                dropped[path] = dropped.get(path, 0) + 1
            continue
        texts = (
            [t for t in _strings(value) if len(t[3]) > 80] if isinstance(value, dict | list) else []
        )
        if not texts:
            break
        path, container, key, text = max(texts, key=lambda t: len(t[3]))
        container[key] = text[: len(text) // 2] + " [cut]"
        clipped.add(path)
    notes = [f"{path}: {n} item(s) left off" for path, n in dropped.items()]
    return value, notes + [f"{path}: text cut" for path in sorted(clipped)]
