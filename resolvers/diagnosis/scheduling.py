"""The scheduler's "0/12 nodes are available: ..." message, condensed into counts.

kube-scheduler writes one message per failed attempt, on the pod's ``PodScheduled``
condition and in a ``FailedScheduling`` Event::

    0/12 nodes are available: 4 Insufficient nvidia.com/gpu, 8 node(s) had untolerated
    taint {nvidia.com/gpu: present}. preemption: 0/12 nodes are available: 12
    Preemption is not helpful for scheduling.

The part before ``preemption:`` counts the nodes rejected per reason (sorted by the
scheduler); the preemption part is advice, not a reason, and is dropped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_HEAD = re.compile(r"^\s*(?P<fit>\d+)/(?P<total>\d+) nodes are available:?\s*(?P<rest>.*)$", re.S)
_ITEM = re.compile(r"^(?P<count>\d+) (?P<reason>.+)$")
_NODES = re.compile(r"^node\(s\) ")
MAX_REASONS = 4


@dataclass(frozen=True, slots=True)
class NodeFit:
    """``fit`` of ``total`` nodes would take the pod; ``reasons`` count the rest,
    most nodes first (a reason is ``Insufficient nvidia.com/gpu``, ``had untolerated
    taint {...}``, ``didn't match Pod's node affinity/selector``...)."""

    fit: int
    total: int
    reasons: tuple[tuple[str, int], ...]


def _split(rest: str) -> list[str]:
    """Reasons are ", "-separated, but a taint's ``{k: v}`` may hold ", " too."""
    items: list[str] = []
    depth, start = 0, 0
    for i, ch in enumerate(rest):
        depth += (ch == "{") - (ch == "}")
        if depth == 0 and rest.startswith(", ", i):
            items.append(rest[start:i])
            start = i + 2
    items.append(rest[start:])
    return [item.strip() for item in items if item.strip()]


def condense(message: str | None) -> NodeFit | None:
    """The counts of a scheduler message; None when it is not one (a plugin error)."""
    if not message:
        return None
    head = _HEAD.match(message)
    if head is None:
        return None
    rest = re.split(r"\.?\s*(?:preemption|still not schedulable)\b", head.group("rest"))[0]
    counts: dict[str, int] = {}
    for item in _split(rest.rstrip(". ")):
        match = _ITEM.match(item)
        if match is None:
            continue
        reason = _NODES.sub("", match.group("reason")).rstrip(".").strip()
        counts[reason] = counts.get(reason, 0) + int(match.group("count"))
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return NodeFit(int(head.group("fit")), int(head.group("total")), tuple(ranked[:MAX_REASONS]))
