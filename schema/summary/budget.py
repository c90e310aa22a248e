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
from collections import OrderedDict
from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

from openrl_inspect.resolvers.diagnosis import Diagnosis
from openrl_inspect.resolvers.diagnosis.budget import CHARS_PER_TOKEN, fit

T = TypeVar("T")

MODEL_SUMMARY_TOKENS = 1500


# Field names per dataclass, without the private ones: ``dataclasses.fields`` builds its
# tuple on every call, and a poll of 100 summaries measures about 10,000 objects.
_FIELDS: dict[type, tuple[str, ...]] = {}
_LEAVES = (str, int, float, bool, type(None))


def _names(cls: type) -> tuple[str, ...] | None:
    names = _FIELDS.get(cls)
    if names is None:
        if not dataclasses.is_dataclass(cls):
            return None
        names = tuple(f.name for f in dataclasses.fields(cls) if not f.name.startswith("_"))
        _FIELDS[cls] = names
    return names


def plain(value: Any) -> Any:
    """A schema object as the JSON a client selecting every field would get (field
    names in snake_case, a little longer than the API's camelCase)."""
    cls = type(value)
    if cls in _LEAVES:
        return value
    names = _names(cls)
    if names is not None:
        return {name: plain(getattr(value, name)) for name in names}
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


# Between two renderings of one kept judgement only its ages change (seconds since the
# last step, the oldest open op's age, "waiting for ..." in its reasons): a few dozen
# characters at most, well inside this many tokens.
AGES_SLACK_TOKENS = 64
# Judgements whose untrimmed rendering was measured, by identity (a dashboard's pages and
# an attention list, with room: as many as resolvers.summary.memo keeps).
MAX_MEASURED = 4096
_measured: OrderedDict[int, tuple[Diagnosis, int]] = OrderedDict()


def fitted(d: Diagnosis, render: Callable[[Diagnosis], T], budget: int) -> T:
    """``render(d)`` after trimming ``d`` until that rendering fits ``budget`` tokens.

    Measuring is most of a summary's cost on a warm poll (a JSON rendering of every
    field). A kept judgement (the same ``d``, ``resolvers.summary.memo``) that fitted
    with room for its ages to change is not measured again.
    """
    known = _measured.get(id(d))
    if known is not None and known[0] is d and known[1] <= budget - AGES_SLACK_TOKENS:
        _measured.move_to_end(id(d))
        return render(d)
    whole = render(d)
    tokens = tokens_of(whole)
    if tokens <= budget:
        _measured[id(d)] = (d, tokens)
        if len(_measured) > MAX_MEASURED:
            _measured.popitem(last=False)
        return whole
    return render(fit(d, budget, lambda trial: tokens_of(render(trial))))
