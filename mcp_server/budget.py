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


def cut(value: Any, budget: int) -> tuple[Any, list[str]]:
    """``value`` with items dropped from the ends of its longest lists until it fits
    ``budget`` tokens (in place), and what was dropped, as ``path: kept of total``."""
    dropped: dict[str, list[int]] = {}
    while tokens(value) > budget:
        lists = _lists(value)
        if not lists:
            break
        path, longest = max(lists, key=lambda pl: tokens(pl[1]))
        seen = dropped.setdefault(path, [0, 0])
        seen[1] += 1
        longest.pop()
        if not longest and len(lists) == 1:
            break
    notes = [f"{path}: {n} item(s) left off" for path, (_, n) in dropped.items()]
    return value, notes
