"""Filtered model lists over the model indexes (docs/redis-schema.md, "Model indexes").

Three round trips whatever the filters: the sizes of the filters' indexes; every member
of the smallest (the candidates, with the score they are ordered by unless a state is
given); then each candidate's score in the other filters' indexes and in the state
indexes (``ZMSCORE``). A candidate in every filter's index and in a state index (the
state indexes are exact: a model whose record expired has left them) matches. Every
command names one key, so a Cluster runs them wherever each key lives.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from openrl_inspect.adapters.redis._client import Pipe, Run
from openrl_inspect.core.domain import ModelState
from openrl_inspect.core.errors import InvalidInput
from openrl_inspect.state import keys
from openrl_inspect.state.filters import MAX_CANDIDATES, LiveAsk, LiveModels, ModelQuery, after
from openrl_inspect.state.paging import Page, Position


def _dimensions(q: ModelQuery) -> list[list[str]]:
    """Each filter other than the state as the keys it unites (an owner set: several)."""
    dims: list[list[str]] = []
    if q.owners is not None:
        dims.append([keys.models_of_owner(o) for o in dict.fromkeys(q.owners)])
    if q.session is not None:
        dims.append([keys.session_models(q.session)])
    if q.base_model is not None:
        dims.append([keys.models_of_base(q.base_model)])
    return dims


async def filtered(run: Run, q: ModelQuery) -> Page:
    """One filtered page; the caller pages a state alone over its index."""
    dims = _dimensions(q)
    if any(not d for d in dims):
        return Page([], 0, False)
    smallest = dims[0]
    if len(dims) > 1:
        flat = [k for d in dims for k in d]

        def cards(pipe: Pipe) -> None:
            for k in flat:
                pipe.zcard(k)

        sizes = await run(cards)
        at = 0
        best = None
        for d in dims:
            n = sum(int(x) for x in sizes[at : at + len(d)])
            at += len(d)
            if best is None or n < best:
                best, smallest = n, d

    def members(pipe: Pipe) -> None:
        for k in smallest:
            pipe.zrange(k, 0, MAX_CANDIDATES, withscores=True)

    raw = await run(members)
    created: dict[str, float] = {}
    for part in raw:
        for member, score in part:
            created[str(member)] = float(score)
    if len(created) > MAX_CANDIDATES:
        raise InvalidInput(
            f"more than {MAX_CANDIDATES} models match one filter; add another filter"
        )
    others = [d for d in dims if d is not smallest]
    matches = await _check(run, q, list(created), created, others)
    matches.sort(key=lambda p: (p.score, p.member), reverse=True)
    rest = after(q.after, matches)
    return Page(rest[: q.first], len(matches), len(rest) > q.first)


async def _check(
    run: Run,
    q: ModelQuery,
    members: list[str],
    created: dict[str, float],
    others: Sequence[list[str]],
) -> list[Position]:
    if not members:
        return []
    states = [q.state] if q.state is not None else list(keys.MODEL_STATES)
    state_keys = [keys.models_in_state(s) for s in states]
    other_keys = [k for d in others for k in d]

    def build(pipe: Pipe) -> None:
        for k in other_keys + state_keys:
            pipe.execute_command("ZMSCORE", k, *members)

    raw = await run(build)
    n_other = len(other_keys)
    out: list[Position] = []
    for i, mid in enumerate(members):
        ok = True
        at = 0
        for d in others:
            if all(raw[at + j][i] is None for j in range(len(d))):
                ok = False
                break
            at += len(d)
        if not ok:
            continue
        scores = [raw[n_other + j][i] for j in range(len(state_keys))]
        found = next((float(s) for s in scores if s is not None), None)
        if found is None:
            continue  # in no state: its record expired, the index entry outlived it
        out.append(Position(found if q.state is not None else created[mid], mid))
    return out


def queue_live(pipe: Pipe, *, ask: LiveAsk) -> None:
    """The live index's size, its quiet end, the failed index's recent end, and the ends
    of the failing and pace indexes past the asked thresholds."""
    pipe.zcard(keys.MODELS_LIVE)
    pipe.zrangebyscore(
        keys.MODELS_LIVE, "-inf", f"({ask.quiet_before!r}", start=0, num=ask.cap, withscores=True
    )
    pipe.zrevrangebyscore(
        keys.models_in_state(ModelState.FAILED),
        "+inf",
        repr(ask.failed_since),
        start=0,
        num=ask.cap,
        withscores=True,
    )
    wanted = ((keys.MODELS_FAILING, ask.failing_since), (keys.MODELS_PACE, ask.slow_above))
    for key, above in wanted:
        if above == float("inf"):
            continue  # not asked: no command, and an empty list below
        # ``failing_since`` includes its bound (as ``failed_since``); a pace above only
        low = repr(above) if key == keys.MODELS_FAILING else f"({above!r}"
        pipe.zrevrangebyscore(key, "+inf", low, start=0, num=ask.cap, withscores=True)
    if ask.open_before != -float("inf"):
        # The newest of the ops open too long first: an op left open by a model long
        # gone sits at the oldest end, until the recorder's trim.
        high = f"({ask.open_before!r}"
        pipe.zrevrangebyscore(keys.OPS_OPEN, high, "-inf", start=0, num=ask.cap, withscores=True)


def decode_live(raw: list[Any], ask: LiveAsk) -> LiveModels:
    rest = iter(raw[3:])
    failing = next(rest) if ask.failing_since != float("inf") else []
    slow = next(rest) if ask.slow_above != float("inf") else []
    open_ops = next(rest) if ask.open_before != -float("inf") else []
    return LiveModels(
        live=int(raw[0]),
        quiet=[Position(float(s), str(m)) for m, s in raw[1]],
        failed=[Position(float(s), str(m)) for m, s in raw[2]],
        failing=[Position(float(s), str(m)) for m, s in failing],
        slow=[Position(float(s), str(m)) for m, s in slow],
        open_ops=[Position(float(s), str(m)) for m, s in open_ops],
    )
