"""Summaries fit their token budget as the API gives them: every field, links included.

The diagnosis engine trims by its own rendering; the API's answer also carries Cloud
Logging filters, console links and the summary's numbers, so it is measured here, the
way a client asking for every field receives it, and trimmed by the engine's rules
(lower causes' facts first, then the lowest causes).
"""

from __future__ import annotations

import dataclasses
import enum
import json
import math
from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

from openrl_inspect.resolvers.diagnosis import Diagnosis
from openrl_inspect.resolvers.diagnosis.budget import CHARS_PER_TOKEN, fit

T = TypeVar("T")

MODEL_SUMMARY_TOKENS = 1500


def plain(value: Any) -> Any:
    """A schema object as the JSON a client selecting every field would get (field
    names in snake_case, a little longer than the API's camelCase)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: plain(getattr(value, f.name))
            for f in dataclasses.fields(value)
            if not f.name.startswith("_")
        }
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def tokens_of(value: Any) -> int:
    text = json.dumps(plain(value), separators=(",", ":"), ensure_ascii=False, default=str)
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def fitted(d: Diagnosis, render: Callable[[Diagnosis], T], budget: int) -> T:
    """``render(d)`` after trimming ``d`` until that rendering fits ``budget`` tokens."""
    return render(fit(d, budget, lambda trial: tokens_of(render(trial))))
