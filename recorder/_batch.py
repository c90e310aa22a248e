"""Write combining: a batch of records' effects, merged per key, emitted as commands.

Combining is exact for what the records do:

- HSET fields of one key merge in record order (a later record's field wins), as
  successive HSETs would;
- ZADD and ZREM on one key keep, per member, the last operation (its score, or its
  removal), then send one ZADD and one ZREM;
- HSETNX keeps the first value per field (later ones would have been no-ops);
- ZADD GT (``raise_score``: add a member, or move its score forward) keeps the highest
  score per member; after the member's ZADD in the batch it raises that ZADD's score,
  after its ZREM it becomes a ZADD, and the others go before the key's ZADD and ZREM;
- ZADD XX GT (``touch``: move a member's score forward if it is there) keeps the
  highest score per member; a touch after the member's ZADD in the batch raises that
  ZADD's score, one after its ZREM is dropped, and the others go before the key's ZADD
  and ZREM (which then decide), as one-by-one writes would leave it;
- SET keeps the last value; trims keep the widest cutoff; EXPIRE keeps the last TTL;
- EXPIREs, trims and the per-model Lua scripts run after the batch's other writes,
  so a key created in the batch gets its TTL, and a trim sees every step of the batch;
- rollups (``_rollup``): one script per model refreshes the entries of the steps the
  batch touched, after the writes and before the retention scripts;
- scripts go by ``EVALSHA`` (``_scripts.sha``; ``_send`` falls back to ``EVAL``).
"""

from __future__ import annotations

from typing import Any

from openrl_inspect.recorder._config import Retention
from openrl_inspect.recorder._pace import Paces
from openrl_inspect.recorder._rollup import command as rollup_command
from openrl_inspect.recorder._scripts import sha

Command = tuple[Any, ...]


class Batch:
    """Records' effects, combined per key, then emitted as a list of commands."""

    __slots__ = (
        "_ex",
        "_gt",
        "_gtadd",
        "_h",
        "_nx",
        "_ru",
        "_s",
        "_sc",
        "_tr",
        "_ts",
        "_z",
        "id_prefix",
        "owners",
        "paces",
        "r",
        "seq",
        "worker_id",
    )

    def __init__(
        self,
        r: Retention,
        id_prefix: str = "",
        worker_id: str | None = None,
        owners: dict[str, str] | None = None,
        paces: Paces | None = None,
    ) -> None:
        self.r = r
        # session id -> owner, of the sessions this recorder saw opened (``_flow`` keeps
        # it across batches): what a model's creation is indexed under when not given.
        self.owners: dict[str, str] = {} if owners is None else owners
        # the step finishes this recorder saw, per model (``_flow`` keeps it across
        # batches): what ``oi:models:pace`` is scored from
        self.paces = Paces() if paces is None else paces
        self.id_prefix = id_prefix
        self.worker_id = worker_id
        self.seq = 0  # the current record's sequence number, set by whoever compiles
        self._h: dict[str, dict[str, str]] = {}
        self._nx: dict[tuple[str, str], str] = {}
        self._z: dict[str, dict[str, float | None]] = {}
        self._gt: dict[str, dict[str, float]] = {}
        self._gtadd: dict[str, dict[str, float]] = {}
        self._s: dict[str, tuple[str, int]] = {}
        self._ts: dict[str, float] = {}
        self._tr: dict[str, int] = {}
        self._ex: dict[str, int] = {}
        self._sc: dict[tuple[str, str], tuple[Any, ...]] = {}
        # model id -> (steps, op ids) whose rollup entries the batch must refresh, and
        # the ops accepted in the batch -> whether their step is one of those steps
        self._ru: dict[str, tuple[dict[str, None], dict[str, None], dict[str, bool]]] = {}

    def record_id(self) -> str:
        """A stable id for the current record: the same on every replay of its batch."""
        return f"{self.id_prefix}{self.seq}"

    # -- the operations a record can ask for ----------------------------------------------

    def hset(self, key: str, mapping: dict[str, str]) -> None:
        """Set fields; ``mapping`` is owned by the batch afterwards."""
        h = self._h.get(key)
        if h is None:
            self._h[key] = mapping
        else:
            h.update(mapping)

    def hset1(self, key: str, name: str, value: str) -> None:
        h = self._h.get(key)
        if h is None:
            self._h[key] = {name: value}
        else:
            h[name] = value

    def hsetnx(self, key: str, name: str, value: str) -> None:
        self._nx.setdefault((key, name), value)

    def zadd(self, key: str, member: str, score: float) -> None:
        z = self._z.get(key)
        if z is None:
            self._z[key] = {member: score}
        else:
            z[member] = score

    def zrem(self, key: str, member: str) -> None:
        z = self._z.get(key)
        if z is None:
            self._z[key] = {member: None}
        else:
            z[member] = None

    def touch(self, key: str, member: str, score: float) -> None:
        """Raise ``member``'s score to ``score`` if it is in the set (ZADD XX GT)."""
        z = self._z.get(key)
        if z is not None and member in z:
            old = z[member]
            if old is not None and score > old:
                z[member] = score
            return  # after a ZREM in the batch: the member is gone, nothing to raise
        gt = self._gt.get(key)
        if gt is None:
            self._gt[key] = {member: score}
        elif score > gt.get(member, -float("inf")):
            gt[member] = score

    def raise_score(self, key: str, member: str, score: float) -> None:
        """Add ``member`` at ``score``, or raise its score to ``score`` (ZADD GT)."""
        z = self._z.get(key)
        if z is not None and member in z:
            old = z[member]
            # after the member's ZADD in the batch: the higher; after its ZREM: added
            z[member] = score if old is None or score > old else old
            return
        gt = self._gtadd.get(key)
        if gt is None:
            self._gtadd[key] = {member: score}
        elif score > gt.get(member, -float("inf")):
            gt[member] = score

    def set(self, key: str, value: str, ex: int) -> None:
        self._s[key] = (value, ex)

    def trim_score(self, key: str, below: float) -> None:
        """Remove members scored at or below ``below`` (the widest cutoff wins)."""
        old = self._ts.get(key)
        if old is None or below > old:
            self._ts[key] = below

    def trim_rank(self, key: str, keep: int) -> None:
        """Keep only the ``keep`` highest-scored members."""
        self._tr[key] = keep

    def expire(self, key: str, ttl: int) -> None:
        self._ex[key] = ttl

    def script(self, script: str, key: str, *args: Any) -> None:
        """Run a per-model script once per batch, after the batch's other writes."""
        self._sc[(script, key)] = args

    def rollup_step(self, mid: str, step: int, oid: str | None = None) -> None:
        """Refresh the rollup entry of step ``step`` after the batch's writes; ``oid``:
        the op accepted under it (its hash's ``step`` is ``repr(step)``)."""
        ru = self._rollup(mid)
        name = str(step)
        ru[0][name] = None
        if oid is not None:
            ru[2][oid] = name == repr(step)  # the last acceptance in the batch counts

    def rollup_op(self, mid: str, oid: str) -> None:
        """Refresh the rollup entry of the step op ``oid`` belongs to."""
        self._rollup(mid)[1][oid] = None

    def _rollup(self, mid: str) -> tuple[dict[str, None], dict[str, None], dict[str, bool]]:
        ru = self._ru.get(mid)
        if ru is None:
            ru = self._ru[mid] = ({}, {}, {})
        return ru

    # -- emission -------------------------------------------------------------------------

    def __len__(self) -> int:
        return (
            len(self._h)
            + len(self._nx)
            + len(self._z)
            + len(self._gt)
            + len(self._gtadd)
            + len(self._s)
            + len(self._ts)
            + len(self._tr)
            + len(self._ex)
            + len(self._sc)
            + len(self._ru)
        )

    def commands(self) -> list[Command]:
        out: list[Command] = []
        for key, fields in self._h.items():
            flat: list[str] = []
            for name, v in fields.items():
                flat.append(name)
                flat.append(v)
            out.append(("HSET", key, *flat))
        for (key, name), v in self._nx.items():
            out.append(("HSETNX", key, name, v))
        self._zset_commands(out)
        for key, (value, ex) in self._s.items():
            out.append(("SET", key, value, "EX", ex))
        for key, below in self._ts.items():
            out.append(("ZREMRANGEBYSCORE", key, "-inf", below))
        for key, keep in self._tr.items():
            out.append(("ZREMRANGEBYRANK", key, 0, -keep - 1))
        for key, ttl in self._ex.items():
            out.append(("EXPIRE", key, ttl))
        # Rollups read what the writes above left, before a trim deletes old steps.
        for mid, (steps, ops, accepted) in self._ru.items():
            # An op accepted in the batch has, after its writes, the step of its last
            # acceptance, which is among ``steps``: the script need not look it up.
            looked_up = [o for o in ops if not accepted.get(o)] if accepted else list(ops)
            out.append(rollup_command(mid, list(steps), looked_up))
        for (script, key), args in self._sc.items():
            out.append(("EVALSHA", sha(script), 1, key, *args))
        return out

    def _zset_commands(self, out: list[Command]) -> None:
        # Touches first: they met the key as it was before the batch's ZADD and ZREM.
        for key, raised in self._gt.items():
            pairs: list[Any] = []
            for member, top in raised.items():
                pairs.append(top)
                pairs.append(member)
            out.append(("ZADD", key, "XX", "GT", *pairs))
        for key, raised in self._gtadd.items():
            pairs = []
            for member, top in raised.items():
                pairs.append(top)
                pairs.append(member)
            out.append(("ZADD", key, "GT", *pairs))
        for key, members in self._z.items():
            add: list[Any] = []
            rem: list[str] = []
            for member, score in members.items():
                if score is None:
                    rem.append(member)
                else:
                    add.append(score)
                    add.append(member)
            if add:
                out.append(("ZADD", key, *add))
            if rem:
                out.append(("ZREM", key, *rem))
