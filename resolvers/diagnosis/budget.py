"""The size budget: one model's diagnosis, every field rendered as JSON, fits in about
1,200 tokens (characters / 4), so an agent can read a hundred of them.

Each text is already clipped where it is made; here, when a diagnosis is still too
big (many causes with long facts), the lower-ranked causes lose their last facts
first, then the lowest-ranked causes go, counted in ``left_off``. The top cause
always stays.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from openrl_inspect.resolvers.diagnosis.causes import Cause, Diagnosis, LogSearch, Lookup

TOKEN_BUDGET = 1200
CHARS_PER_TOKEN = 4
MIN_FACTS = 3


def _logs(s: LogSearch | None) -> dict[str, Any] | None:
    if s is None:
        return None
    return {
        "pods": [f"{k.namespace}/{k.name}" for k in s.pods],
        "containers": list(s.containers),
        "severity": s.severity,
        "text": s.text,
        "start": s.start,
        "end": s.end,
        "includeEvents": s.include_events,
    }


def _lookup(n: Lookup) -> dict[str, Any]:
    return {
        "logs": _logs(n.logs),
        "pods": [f"{k.namespace}/{k.name}" for k in n.pods],
        "nodes": list(n.nodes),
        "graphql": n.graphql,
    }


def _cause(c: Cause) -> dict[str, Any]:
    return {
        "kind": str(c.kind),
        "rank": c.rank,
        "statement": c.statement,
        "since": c.since,
        "facts": [{"name": f.name, "value": f.value, "unit": f.unit} for f in c.facts],
        "refs": list(c.refs),
        "next": _lookup(c.next),
        "explainedBy": [{"kind": str(x.kind), "object": x.object} for x in c.explained_by],
        "explains": [{"kind": str(x.kind), "object": x.object} for x in c.explains],
    }


def render(d: Diagnosis) -> dict[str, Any]:
    """Every field, as a client asking for all of them would receive it."""
    return {
        "verdict": str(d.verdict),
        "causes": [_cause(c) for c in d.causes],
        "leftOff": d.left_off,
        "unknown": [
            {"backend": u.backend, "code": u.code, "message": u.message} for u in d.unknown
        ],
    }


def tokens(d: Diagnosis) -> int:
    text = json.dumps(render(d), separators=(",", ":"), ensure_ascii=False)
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def fit(
    d: Diagnosis, budget: int = TOKEN_BUDGET, size: Callable[[Diagnosis], int] = tokens
) -> Diagnosis:
    """``d`` cut to ``budget`` tokens: first the facts of the lower-ranked causes (down
    to ``MIN_FACTS``, the last cause first), then whole causes from the last, then the
    top cause's facts. A statement is never cut here: it is the cause. ``size`` measures
    a diagnosis in tokens (by default this module's rendering; the API measures the
    whole answer it gives, links included)."""
    for i in range(len(d.causes) - 1, 0, -1):
        if size(d) <= budget:
            return d
        d = _trim_facts(d, i, MIN_FACTS)
    while size(d) > budget and len(d.causes) > 1:
        d = replace(d, causes=d.causes[:-1], left_off=d.left_off + 1)
    while size(d) > budget and d.causes and len(d.causes[0].facts) > 1:
        d = _trim_facts(d, 0, len(d.causes[0].facts) - 1)
    return d


def _trim_facts(d: Diagnosis, i: int, keep: int) -> Diagnosis:
    cause = d.causes[i]
    trimmed = replace(cause, facts=cause.facts[:keep])
    return replace(d, causes=(*d.causes[:i], trimmed, *d.causes[i + 1 :]))
