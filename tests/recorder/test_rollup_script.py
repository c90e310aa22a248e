"""The rollup script on a real redis-server, over one random history written twice in two
databases, some batches replayed on both: as the recorder sends it (an op accepted in
the batch is not looked up), some batches after the server lost its script cache; and
with every op's step looked up by the script. Every key's ``DUMP`` agrees."""

from __future__ import annotations

import random
from typing import Any

import redis
from openrl_inspect.recorder._batch import Batch, Command
from openrl_inspect.recorder._config import Retention
from openrl_inspect.recorder._send import SyncPipe
from openrl_inspect.recorder._writes import WRITES
from openrl_inspect.state import keys
from support.redis_server import RedisServer

# Small enough that trims, moved ops, full entries and terminal models all happen.
RETENTION = Retention(max_steps_per_model=12, trim_every_steps=2, ended_model_ttl_s=600)
Record = tuple[str, tuple[Any, ...]]


def _history(rnd: random.Random) -> list[list[Record]]:
    """Batches of records over 3 models: ops that finish, fail, move, arrive late or for
    no accepted op; steps with metrics only; one step of more than 128 ops."""
    batches: list[list[Record]] = []
    live: dict[str, list[tuple[str, int]]] = {}
    t = 100.0
    for mid in ("m-0", "m-1", "m-2"):
        batches.append([("model_created", (mid, "s-1", "base", {}, {}, t))])
        live[mid] = []
    kinds = ["forward_backward", "optim_step", "k" * 300]
    n = 0
    for _ in range(40):
        batch: list[Record] = []
        for _ in range(rnd.randint(1, 30)):
            t += rnd.choice([0.001, 0.02, 0.5, 7.0, 2000.0]) * rnd.random()
            mid = rnd.choice(["m-0", "m-1", "m-2"])
            ops = live[mid]
            step = rnd.randint(max(0, n // 8 - 3), n // 8 + 1)
            roll = rnd.random()
            if roll < 0.3 or not ops:
                n += 1
                oid = f"op-{n}"
                ops.append((oid, step))
                batch.append(("op_accepted", (mid, oid, rnd.choice(kinds), step, t)))
            elif roll < 0.45:
                oid, _ = rnd.choice(ops)
                batch.append(("op_enqueued", (mid, oid, t)))
            elif roll < 0.6:
                oid, _ = rnd.choice(ops)
                batch.append(("op_started", (mid, oid, "w-1", t)))
            elif roll < 0.8:
                oid, _ = rnd.choice(ops)
                status = rnd.choice(["succeeded", "succeeded", "failed"])
                batch.append(("op_finished", (mid, oid, status, t, None, "boom")))
            elif roll < 0.85:  # moved: accepted again under another step
                oid, _ = rnd.choice(ops)
                batch.append(("op_accepted", (mid, oid, "forward_backward", step + 1, t)))
            elif roll < 0.9:  # an op nobody accepted
                batch.append(("op_finished", (mid, f"ghost-{n}", "succeeded", t)))
            else:
                finished = rnd.random() < 0.5
                batch.append(("step_metrics", (mid, step, {"loss": 1.0}, t, finished)))
        batches.append(batch)
    # A step of more than 128 ops: its entry carries 128, its count says all.
    batches.append(
        [("op_accepted", ("m-1", f"big-{i}", "optim_step", 99, t + i)) for i in range(131)]
    )
    batches.append([("op_finished", ("m-1", f"big-{i}", "succeeded", t + 200)) for i in range(131)])
    batches.append([("model_state", ("m-2", "failed", t + 300, "gone"))])
    return batches


class _LookedUp(Batch):
    """Every op's step looked up by the script, none taken from the batch's acceptances."""

    __slots__ = ()

    def rollup_step(self, mid: str, step: int, oid: str | None = None) -> None:
        super().rollup_step(mid, step)


def _commands(records: list[Record], cls: type[Batch] = Batch) -> list[Command]:
    b = cls(RETENTION)
    for kind, args in records:
        WRITES[kind](b, *args)
    return b.commands()


def _send(r: redis.Redis, commands: list[Command]) -> None:
    results = SyncPipe(r, owned=False).execute(commands, 10.0)
    assert not [x for x in results if isinstance(x, Exception)], results


def _dump(r: redis.Redis) -> dict[Any, tuple[Any, bool]]:
    return {k: (r.dump(k), r.ttl(k) > 0) for k in sorted(r.keys("*"))}


def test_rollups_as_sent_equal_those_with_every_op_looked_up_and_no_cache_lost(
    redis_server: RedisServer,
) -> None:
    # Databases of their own: the server is the session's.
    new = redis.Redis(port=redis_server.port, db=14)
    ref = redis.Redis(port=redis_server.port, db=15)
    rnd = random.Random(17)
    try:
        new.flushdb()
        ref.flushdb()
        for i, records in enumerate(_history(rnd)):
            # Some batches are replayed (an answer lost), on both sides alike: a batch
            # sent again after its own trim ran recreates what the trim removed.
            for _ in range(1 + (rnd.random() < 0.3)):
                _send(new, _commands(records))
                _send(ref, _commands(records, _LookedUp))
            if i % 7 == 3:  # as after a failover: the next EVALSHAs find nothing
                new.script_flush()
        # A step hash gone (expired) while its ops are written: the entry's `e` is 0.
        last = [("op_started", ("m-1", "big-0", "w-2", 1e6))]
        for r in (new, ref):
            r.delete(keys.step("m-1", 99))
            _send(r, _commands(last))
        assert b'"e":0' in (new.zrange(keys.rollup_steps("m-1"), -1, -1)[0])
        a, b_ = _dump(new), _dump(ref)
        assert any(b":rollup:steps" in k for k in a)
        assert a == b_
    finally:
        new.flushdb()
        ref.flushdb()
        new.close()
        ref.close()
