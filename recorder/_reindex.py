"""``reindex``: the model indexes built for data written before them (the writing side).

The API never writes, so a store with data older than the model indexes
(docs/redis-schema.md, "Model indexes") gets them from this one-shot pass, run with the
recorder's credentials. It reads only by index (the sessions' and the state indexes,
then the records they name; never ``KEYS`` or ``SCAN``), writes with per-key ZADD / ZREM
in pipelines of bounded size (a Cluster runs each where its key lives), and is
idempotent: running it again, or beside live recorders, leaves the same indexes.

Live models enter the live index at the time they entered their state unless a recorder
already put them there later (``ZADD GT``); owner and base-model entries whose model is
in no state index any more (its keys expired) are pruned for every owner and base model
it meets. Each session in the live or closed index enters its owner's sessions index
(entries of sessions in neither are pruned for the owners met). The moving models'
indexes are built from each live model's rollup (its newest ``PACE_ENTRIES`` step
entries: the last failed op's finish, ``ZADD GT``; the pace ``_pace.score`` gives the
finishes of its consecutive steps); a model without a rollup (data written before
rollups) is left to the recorder's next records. Their entries of models no longer live
are pruned. Every live model's open ops enter ``oi:ops:open``; entries there of ops no
live model has open are pruned if accepted before the pass began (a recorder may have
added one since). The indexes are declared complete last, at ``keys.INDEXES_VERSION``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import orjson
from openrl_inspect.core.domain import TERMINAL_STATES
from openrl_inspect.recorder._config import RecorderSettings
from openrl_inspect.recorder._pace import KEPT
from openrl_inspect.recorder._pace import score as pace_score
from openrl_inspect.recorder._send import sync_client
from openrl_inspect.state import keys

T = TypeVar("T")
CHUNK = 1_000  # commands per pipeline
# The newest step entries of a live model's rollup read for its pace and last failure:
# the finishes the recorder remembers (``_pace.KEPT``).
PACE_ENTRIES = KEPT


@dataclass(frozen=True)
class ReindexReport:
    """What a pass found and wrote."""

    models: int  # models found in a state index
    owners: int  # owners indexed (of models)
    base_models: int
    live: int
    without_owner: int  # models whose session (hence owner) is gone
    pruned: int  # index entries of models no longer stored (or no longer live)
    failing: int = 0  # live models with a failed op in their rollup's newest steps
    paced: int = 0  # live models given a pace score
    open_ops: int = 0  # ops open in live models
    sessions: int = 0  # sessions indexed by owner


def _chunks(items: Sequence[T], size: int = CHUNK) -> Iterator[Sequence[T]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def _read(client: Any, items: Sequence[T], queue: Callable[[Any, T], None]) -> list[Any]:
    out: list[Any] = []
    for part in _chunks(items):
        pipe = client.pipeline(transaction=False)
        for item in part:
            queue(pipe, item)
        out.extend(pipe.execute())
    return out


def _write(client: Any, commands: Iterable[tuple[Any, ...]]) -> None:
    batch = list(commands)
    for part in _chunks(batch):
        pipe = client.pipeline(transaction=False)
        for cmd in part:
            pipe.execute_command(*cmd)
        pipe.execute()


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _whole(client: Any, key: str) -> list[tuple[str, float]]:
    """Every member of a sorted set, read a chunk at a time."""
    out: list[tuple[str, float]] = []
    start = 0
    while True:
        part = client.zrange(key, start, start + 10 * CHUNK - 1, withscores=True)
        out.extend((_text(m) or "", float(s)) for m, s in part)
        if len(part) < 10 * CHUNK:
            return out
        start += len(part)


def reindex_with(settings: RecorderSettings) -> ReindexReport:
    """``reindex`` over a client of its own, opened from the recorder's settings."""
    client = sync_client(settings)
    try:
        return reindex(client)
    finally:
        client.close()


def reindex(client: Any) -> ReindexReport:
    """Build the model indexes from what is stored, then declare them complete."""
    began = time.time()
    state_of = _stored_states(client)
    mids = sorted(state_of)
    fields = _read(
        client,
        mids,
        lambda pipe, mid: pipe.hmget(keys.model(mid), "session_id", "base_model", "created_at"),
    )
    stored_sessions = dict(_whole(client, keys.SESSIONS_LIVE))
    stored_sessions |= dict(_whole(client, keys.SESSIONS_CLOSED))
    sessions = sorted({s for f in fields if (s := _text(f[0]))} | set(stored_sessions))
    session_fields = _read(
        client, sessions, lambda pipe, sid: pipe.hmget(keys.session(sid), "owner", "created_at")
    )
    owner_of = {
        sid: o for sid, raw in zip(sessions, session_fields, strict=True) if (o := _text(raw[0]))
    }

    found = _indexes_of(mids, fields, state_of, owner_of)
    found.stored_sessions = set(stored_sessions)
    for sid, (owner_raw, created_raw) in zip(sessions, session_fields, strict=True):
        owner = _text(owner_raw)
        if owner is None or sid not in stored_sessions:
            continue  # a session gone: its models keep their owner, it has no entry
        try:
            created = float(_text(created_raw) or stored_sessions[sid])
        except ValueError:
            created = stored_sessions[sid]
        found.sessions_by_owner.setdefault(owner, {})[sid] = created
    live = [mid for mid, _ in found.live]
    entries = _read(
        client, live, lambda pipe, mid: pipe.zrevrange(keys.rollup_steps(mid), 0, PACE_ENTRIES - 1)
    )
    for mid, members in zip(live, entries, strict=True):
        _moving(found, mid, members)
    opened = _read(
        client, live, lambda pipe, mid: pipe.zrange(keys.open_ops(mid), 0, -1, withscores=True)
    )
    found.open_ops = [(_text(o) or "", float(at)) for part in opened for o, at in part]
    _write(client, found.commands())
    pruning = _pruning(client, found, state_of, began)
    _write(client, pruning)
    client.set(keys.INDEXES_KEY, str(keys.INDEXES_VERSION))
    return ReindexReport(
        models=len(mids),
        owners=len(found.by_owner),
        base_models=len(found.by_base),
        live=len(found.live),
        without_owner=found.without_owner,
        pruned=sum(len(c) - 2 for c in pruning),
        failing=len(found.failing),
        paced=len(found.pace),
        open_ops=len(found.open_ops),
        sessions=sum(len(m) for m in found.sessions_by_owner.values()),
    )


def _moving(found: _Indexes, mid: str, members: Sequence[Any]) -> None:
    """The model's last failed op and its pace, from its newest rollup step entries
    (docs/redis-schema.md, "Rollups"); an entry that cannot be read is skipped."""
    finishes: dict[int, float] = {}
    last_failure: float | None = None
    for member in members:
        try:
            entry = orjson.loads(member)
            n = int(entry["n"])
            ops = entry.get("o") or []  # Lua's cjson writes an empty table as {}
            if entry.get("f"):
                finishes[n] = float(entry["f"])
            for op in ops if isinstance(ops, list) else []:
                if op[3] == "failed" and op[7]:
                    at = float(op[7])
                    last_failure = at if last_failure is None else max(last_failure, at)
        except (orjson.JSONDecodeError, KeyError, IndexError, TypeError, ValueError):
            continue
    if last_failure is not None:
        found.failing.append((mid, last_failure))
    run: list[float] = []
    newest = max(finishes, default=0)
    for n in sorted(finishes, reverse=True):  # the newest run of consecutive steps
        if n != newest - len(run):
            break
        run.append(finishes[n])
    pace = pace_score(run[::-1])
    if pace is not None:
        found.pace.append((mid, pace))


def _stored_states(client: Any) -> dict[str, tuple[str, float]]:
    """Every model in a state index: its state and when it entered it."""
    state_of: dict[str, tuple[str, float]] = {}
    for name in keys.MODEL_STATES:
        for mid, at in _whole(client, keys.models_in_state(name)):
            state_of[mid] = (str(name), at)
    return state_of


@dataclass
class _Indexes:
    """The index entries the stored models call for."""

    by_owner: dict[str, dict[str, float]] = field(default_factory=dict)
    by_base: dict[str, dict[str, float]] = field(default_factory=dict)
    live: list[tuple[str, float]] = field(default_factory=list)
    failing: list[tuple[str, float]] = field(default_factory=list)
    pace: list[tuple[str, float]] = field(default_factory=list)
    open_ops: list[tuple[str, float]] = field(default_factory=list)  # op id -> accepted
    sessions_by_owner: dict[str, dict[str, float]] = field(default_factory=dict)
    stored_sessions: set[str] = field(default_factory=set)  # in the live or closed index
    without_owner: int = 0

    def commands(self) -> list[tuple[Any, ...]]:
        """The ZADDs that write these entries (live ones only moving forward: ``GT``)."""
        commands: list[tuple[Any, ...]] = []
        for owner, members in self.by_owner.items():
            commands += _zadds(keys.models_of_owner(owner), list(members.items()))
        for base, members in self.by_base.items():
            commands += _zadds(keys.models_of_base(base), list(members.items()))
        for owner, members in self.sessions_by_owner.items():
            commands += _zadds(keys.sessions_of_owner(owner), list(members.items()))
        for part in _chunks(self.live):
            commands.append(("ZADD", keys.MODELS_LIVE, "GT", *_flat(part)))
        for part in _chunks(self.failing):
            commands.append(("ZADD", keys.MODELS_FAILING, "GT", *_flat(part)))
        commands += _zadds(keys.MODELS_PACE, self.pace)
        commands += _zadds(keys.OPS_OPEN, self.open_ops)
        return commands


def _indexes_of(
    mids: Sequence[str],
    fields: Sequence[Any],
    state_of: dict[str, tuple[str, float]],
    owner_of: dict[str, str],
) -> _Indexes:
    """Each model's owner, base-model and live entries, from its record's fields (session,
    base model, creation time; the time it entered its state when that is unreadable)."""
    found = _Indexes()
    for mid, (sid_raw, base_raw, created_raw) in zip(mids, fields, strict=True):
        state, at = state_of[mid]
        try:
            created = float(_text(created_raw) or at)
        except ValueError:
            created = at
        owner = owner_of.get(_text(sid_raw) or "")
        if owner is None:
            found.without_owner += 1
        else:
            found.by_owner.setdefault(owner, {})[mid] = created
        base = _text(base_raw)
        if base:
            found.by_base.setdefault(base, {})[mid] = created
        if state not in TERMINAL_STATES:
            found.live.append((mid, at))
    return found


def _pruning(
    client: Any, found: _Indexes, state_of: dict[str, tuple[str, float]], began: float
) -> list[tuple[Any, ...]]:
    """The ZREMs of entries of models stored no more (and live entries of models no
    longer live), in the indexes this pass met."""
    index_keys = [keys.models_of_owner(o) for o in found.by_owner] + [
        keys.models_of_base(b) for b in found.by_base
    ]
    live_now = {mid for mid, _ in found.live}
    live_keys = (keys.MODELS_LIVE, keys.MODELS_FAILING, keys.MODELS_PACE)
    pruning: list[tuple[Any, ...]] = []
    for key in [*index_keys, *live_keys]:
        keep = live_now if key in live_keys else state_of
        gone = [m for m, _ in _whole(client, key) if m not in keep]
        pruning += [("ZREM", key, *part) for part in _chunks(gone)]
    for key in [keys.sessions_of_owner(o) for o in found.sessions_by_owner]:
        gone = [s for s, _ in _whole(client, key) if s not in found.stored_sessions]
        pruning += [("ZREM", key, *part) for part in _chunks(gone)]
    still_open = {oid for oid, _ in found.open_ops}
    closed = [o for o, at in _whole(client, keys.OPS_OPEN) if o not in still_open and at < began]
    pruning += [("ZREM", keys.OPS_OPEN, *part) for part in _chunks(closed)]
    return pruning


def _flat(pairs: Iterable[tuple[str, float]]) -> list[Any]:
    out: list[Any] = []
    for member, score in pairs:
        out.append(score)
        out.append(member)
    return out


def _zadds(key: str, pairs: Sequence[tuple[str, float]]) -> list[tuple[Any, ...]]:
    return [("ZADD", key, *_flat(part)) for part in _chunks(pairs)]
