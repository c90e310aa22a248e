"""Root causes, not symptoms: which cause explains which, and the chain said in one line.

A failed op whose worker pod was OOM-killed, evicted or lost with its node while the op
ran is explained by that; a stalled model whose Workload was preempted after its last
step, by the preemption; a silent worker, by the eviction or the node that took its pod.
A root is ranked just before the first cause it explains, and its statement says the
chain: "forward_backward at step 89 failed: its sampler pod was OOMKilled (7 restarts,
exit 137, limit 64Gi)". Links are by kind and object (``CauseLink``), both ways.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from openrl_inspect.core.domain import CauseKind
from openrl_inspect.resolvers.diagnosis.causes import CauseLink, Finding
from openrl_inspect.resolvers.diagnosis.text import statement

# How far outside an effect's span a root may fall and still explain it: a kill is
# reported a moment after the op saw its peer go, an op fails a moment after the kill.
SLACK_S = 120.0

_POD_ROOTS = frozenset(
    {
        CauseKind.OOM_KILLED,
        CauseKind.EVICTED_BY_DEVICE_TAINT,
        CauseKind.EVICTED,
        CauseKind.NODE_LOST,
        CauseKind.CRASH_LOOP,
        CauseKind.POD_FAILED,
        CauseKind.GPU_UNHEALTHY,
    }
)
_TAKEN_AWAY = frozenset(
    {
        CauseKind.PREEMPTED,
        CauseKind.EVICTED,
        CauseKind.EVICTED_BY_DEVICE_TAINT,
        CauseKind.NODE_LOST,
        CauseKind.OOM_KILLED,
    }
)
# effect -> the kinds that can explain it
ROOTS: dict[CauseKind, frozenset[CauseKind]] = {
    CauseKind.OP_FAILED: _POD_ROOTS,
    CauseKind.MODEL_FAILED: _POD_ROOTS | {CauseKind.PREEMPTED},
    CauseKind.STALLED: _TAKEN_AWAY,
    CauseKind.WORKER_LOST: _TAKEN_AWAY,
    CauseKind.OPS_LOST: _TAKEN_AWAY,
}


def explains(root: Finding, effect: Finding) -> bool:
    """Whether ``root`` explains ``effect``: a kind that can, at a time that fits (within
    the effect's span, or after its start for an effect without an end)."""
    if root is effect or root.kind not in ROOTS.get(effect.kind, frozenset()):
        return False
    if root.since is None:
        return False
    if effect.window is not None:
        start, end = effect.window
        return start - SLACK_S <= root.since <= end + SLACK_S
    return effect.since is not None and root.since >= effect.since - SLACK_S


def link(findings: Sequence[Finding]) -> dict[int, list[int]]:
    """For each effect (by index), the indexes of the findings that explain it."""
    out: dict[int, list[int]] = {}
    for i, effect in enumerate(findings):
        roots = [j for j, root in enumerate(findings) if explains(root, effect)]
        if roots:
            out[i] = roots
    return out


def order(findings: Sequence[Finding]) -> tuple[list[Finding], dict[int, list[int]]]:
    """``findings`` (already sorted) with each root moved just before the first cause it
    explains, its statement the chain; and the links, by index in the new order."""
    links = link(findings)
    placed: list[int] = []
    for i in range(len(findings)):
        for j in links.get(i, []):
            if j not in placed:
                placed.append(j)
        if i not in placed:
            placed.append(i)
    new_index = {old: new for new, old in enumerate(placed)}
    ordered = [_chained(findings, j, links) for j in placed]
    remapped = {new_index[e]: sorted(new_index[r] for r in rs) for e, rs in links.items()}
    return ordered, remapped


def _chained(findings: Sequence[Finding], j: int, links: dict[int, list[int]]) -> Finding:
    """The root's statement as the chain, from the first effect it explains."""
    root = findings[j]
    if root.clause is None:
        return root
    for e in sorted(links):
        effect = findings[e]
        if j in links[e] and effect.headline:
            return _with_statement(root, statement(f"{effect.headline}: {root.clause}"))
    return root


def _with_statement(f: Finding, text: str) -> Finding:
    return replace(f, statement=text)


def link_of(f: Finding) -> CauseLink:
    return CauseLink(f.kind, f.about or (f.refs[0] if f.refs else None))
