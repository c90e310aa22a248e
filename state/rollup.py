"""A model's rollup: what the recorder keeps beside the records so that a summary is one
read per model, and how a reader decodes it (docs/redis-schema.md, "Rollups").

The writer (``recorder/_rollup.py``) and the reader (``adapters/redis``) share the caps
below: a reader trusts a rollup only for what those caps keep whole, and scans otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import orjson
from openrl_inspect.core.errors import DecodeError
from openrl_inspect.state.memo import Memo
from openrl_inspect.state.records import OpRecord, StepRecord

#: The rollup format written in the rollup hash's ``v`` field.
VERSION: Final = "1"
#: The newest steps the rollup keeps.
STEPS: Final = 128
#: The first ops of a step (by acceptance) each step's entry carries.
OPS_PER_STEP: Final = 128
#: Longer op kinds are left out of an entry (the op is then read from its hash).
KIND_CHARS: Final = 256

#: Upper edges (seconds) of the op duration histogram's buckets; the last bucket is open.
BUCKET_EDGES_S: Final = (0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0, 300.0, 1000.0)
#: The counter name a kind too long to carry is counted under.
LONG_KIND: Final = "~long"

# The op hash fields an entry carries, in its order (after the op id, before the flag).
OP_FIELDS: Final = (
    "kind",
    "step",
    "status",
    "accepted_at",
    "enqueued_at",
    "started_at",
    "finished_at",
    "worker_id",
)


@dataclass(frozen=True, slots=True)
class RollupOp:
    """An op as its step's entry carries it. ``detail``: the entry lacks something a
    summary may quote (a failed op's error, a kind too long to carry), so a reader that
    needs it reads the op's hash."""

    id: str
    record: OpRecord | None  # None: the op's hash was gone or could not be decoded
    detail: bool


@dataclass(frozen=True, slots=True)
class RollupStep:
    step: StepRecord | None  # None: neither a step hash nor ops (the scan skips it too)
    number: int
    op_count: int
    ops: tuple[RollupOp, ...]  # the first OPS_PER_STEP by acceptance


@dataclass(frozen=True, slots=True)
class ModelRollup:
    """A model's rollup: its newest steps (newest first) with their ops.

    ``complete``: the rollup was started when the model was created, so it has seen every
    write; one begun later (data recorded before rollups existed) is not used.
    """

    model_id: str
    complete: bool
    steps: tuple[RollupStep, ...]
    counters: Mapping[str, str]
    # The step entries as stored: the steps are decoded from them alone, so equal
    # entries are equal steps (a cheap version of them: ``resolvers.summary.memo``).
    entries: tuple[str | bytes, ...] = field(default=(), compare=False, repr=False)

    def window(self, latest_step: int | None, kept_steps: int, n: int, page: int) -> bool:
        """Whether the rollup holds exactly what a scan of the newest ``n`` steps, ``page``
        ops per step, would read: else the reader scans."""
        if not self.complete or n > STEPS or page > OPS_PER_STEP:
            return False
        if len(self.steps) != min(n, kept_steps):
            return False
        if self.steps and self.steps[0].number != latest_step:
            return False
        return all(len(s.ops) >= min(s.op_count, page) for s in self.steps)


@dataclass(frozen=True, slots=True)
class KindTotals:
    """A kind's finished ops over the model's life (the first ``OPS_PER_STEP`` of each
    step): how many, how many failed, their summed duration and duration histogram."""

    kind: str
    count: int
    failed: int
    duration_sum_s: float
    buckets: tuple[int, ...]  # len(BUCKET_EDGES_S) + 1 counts

    def quantile_s(self, q: float) -> float | None:
        """The upper edge of the bucket holding the ``q`` quantile (an upper bound;
        ``None`` past the last edge or with no timed ops)."""
        total = sum(self.buckets)
        if not total:
            return None
        rank = q * total
        seen = 0
        for i, n in enumerate(self.buckets):
            seen += n
            if seen >= rank and n:
                return BUCKET_EDGES_S[i] if i < len(BUCKET_EDGES_S) else None
        return None


def kind_totals(counters: Mapping[str, str]) -> list[KindTotals]:
    """The rollup hash's lifetime counters, per kind (sorted); bad values read as 0."""
    kinds = sorted(k[2:] for k in counters if k.startswith("n:"))
    out = []
    for kind in kinds:
        buckets = tuple(_int(counters.get(f"h:{kind}:{i}")) for i in range(len(BUCKET_EDGES_S) + 1))
        try:
            dur = float(counters.get(f"dur:{kind}", "0"))
        except ValueError:
            dur = 0.0
        out.append(
            KindTotals(
                kind, _int(counters.get(f"n:{kind}")), _int(counters.get(f"failed:{kind}")),
                dur, buckets,
            )
        )  # fmt: skip
    return out


def _int(raw: str | None) -> int:
    try:
        return int(raw or 0)
    except ValueError:
        return 0


def decode(mid: str, h: Mapping[str, str], members: Sequence[str | bytes]) -> ModelRollup | None:
    """The rollup from its hash and its newest step entries; ``None`` if there is none.

    Raises ``DecodeError`` for an entry that is not what the writer writes."""
    if not h:
        return None
    steps = tuple(_step(mid, m) for m in members)
    return ModelRollup(mid, h.get("v") == VERSION, steps, h, tuple(members))


# A poll asks for the same models' last steps every few seconds, and a step's entry is
# rewritten only while the step runs: the same stored text decodes to the same
# (immutable) step, so decoded steps are kept, keyed by the text itself. Bounded in
# entries and, by leaving out steps of more than 8 ops, in memory: full, 15 MiB of steps
# of 4 ops, 26 MiB of 8 (measured with tracemalloc); 4,096 steps are the last 20 of
# 200 models, twice a dashboard page of 100.
_STEPS: Memo[tuple[str, str | bytes], RollupStep] = Memo(4_096)
_KEPT_OPS = 8


def _step(mid: str, member: str | bytes) -> RollupStep:
    key = (mid, member)
    found = _STEPS.get(key)
    if found is None:
        found = _decode_step(mid, member)
        if len(found.ops) <= _KEPT_OPS:
            _STEPS.put(key, found)
    return found


def _decode_step(mid: str, member: str | bytes) -> RollupStep:
    try:
        e = orjson.loads(member)
        n = int(e["n"])
        count = int(e["c"])
        raw_ops = e["o"] or []  # Lua's cjson writes an empty table as {}
        if not isinstance(raw_ops, list):
            raise TypeError("ops")
        ops = tuple(_op(mid, o) for o in raw_ops[:OPS_PER_STEP])
        h = _fields({"started_at": e.get("s"), "finished_at": e.get("f")})
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise DecodeError(f"a rollup step entry is malformed ({type(exc).__name__})") from None
    step: StepRecord | None = None
    if e.get("e") or count:
        try:
            step = StepRecord.from_hash(mid, n, h, count)
        except DecodeError:
            step = None  # the scan skips a bad step record too
    return RollupStep(step, n, count, ops)


def _op(mid: str, raw: Any) -> RollupOp:
    if not isinstance(raw, list) or len(raw) != len(OP_FIELDS) + 2:
        raise TypeError("op")
    oid = str(raw[0])
    if raw[1] is False and all(v is False for v in raw[2:-1]):
        return RollupOp(oid, None, False)  # the op's hash is gone: the scan skips it
    h = {"id": oid, "model_id": mid}
    for name, v in zip(OP_FIELDS, raw[1:-1], strict=True):
        if v is not False and v is not None:
            h[name] = v if isinstance(v, str) else str(v)
    try:
        record: OpRecord | None = OpRecord.from_hash(h)
    except DecodeError:
        record = None
    return RollupOp(oid, record, bool(raw[-1]))


def _fields(values: Mapping[str, Any]) -> dict[str, str]:
    # Lua writes a missing hash field as false: absent, as in the hash itself.
    return {k: str(v) for k, v in values.items() if v is not False and v is not None}
