"""Attention over the models that keep moving (issue 29): a model slowed down to several
times its own step time, one whose ops keep failing while it steps, and one with an op
hung for an hour while its other ops go on, are never quiet, yet are found among many
healthy moving models through the indexes the recorder keeps (``oi:models:pace``,
``oi:models:failing``, ``oi:ops:open``), judged by the model's summary; the healthy
ones, a one-off slow step and an old failure included, are not listed."""

from __future__ import annotations

import asyncio
import time

import fakeredis
import pytest
from openrl_inspect.adapters.redis import RedisStateStore
from openrl_inspect.core.domain import CauseKind, Verdict
from openrl_inspect.core.errors import IndexesNotBuilt
from openrl_inspect.core.settings import Thresholds
from openrl_inspect.recorder import Recorder, RecorderSettings, reindex
from openrl_inspect.resolvers.context import Backends, Context
from openrl_inspect.resolvers.summary import rollup
from openrl_inspect.state import keys

QUIET = RecorderSettings(publish_counters=False, recorder_id="moving", flush_at_exit=False)
HEALTHY = 60
LIVE = HEALTHY + 5
STEP_S = 4.0


def moving(
    rec: Recorder, mid: str, durations: list[float], now: float, failing: range = range(0)
) -> None:
    """An active model whose steps took ``durations`` (its last finishing 2 s ago): each
    step a forward_backward and an optim_step covering it; in the steps ``failing`` the
    forward_backward fails while the optim_step succeeds."""
    rec.model_created(mid, "s1", "llama", at=now - 5_000)
    rec.model_state(mid, "active", at=now - 4_999)
    wid = f"w-{mid}"
    start = now - 2 - sum(durations)
    for n, d in enumerate(durations):
        fb, opt = f"{mid}-{n}-fb", f"{mid}-{n}-opt"
        rec.op_accepted(mid, fb, "forward_backward", n, at=start)
        rec.op_started(mid, fb, wid, at=start + 0.05)
        failed = n in failing
        rec.op_finished(
            mid,
            fb,
            "failed" if failed else "succeeded",
            error="CUDA error: an illegal memory access" if failed else None,
            at=start + 0.6 * d,
        )
        rec.op_accepted(mid, opt, "optim_step", n, at=start + 0.6 * d)
        rec.op_started(mid, opt, wid, at=start + 0.6 * d + 0.05)
        rec.op_finished(mid, opt, "succeeded", at=start + d - 0.05)
        rec.step_metrics(mid, n, {"loss": 1.0 / (n + 1)}, finished=True, at=start + d)
        start += d
    rec.heartbeat(wid, "trainer", f"pod-{mid}", "node-1", mid, [], {}, at=now - 1)


def world(now: float) -> tuple[fakeredis.FakeServer, Recorder]:
    server = fakeredis.FakeServer()
    client = fakeredis.FakeRedis(server=server, decode_responses=True)
    rec = Recorder(client, settings=QUIET, start=False)
    rec.session_opened("s1", "alice", at=now - 10_000)
    for i in range(HEALTHY):
        moving(rec, f"h{i:03d}", [STEP_S + 0.1 * (i % 3)] * 17, now)
    moving(rec, "slow", [STEP_S] * 12 + [5 * STEP_S] * 5, now)  # five steps 5x slower
    moving(rec, "failing", [STEP_S] * 17, now, range(11, 17))  # its last six fail
    moving(rec, "one-slow-step", [STEP_S] * 16 + [3 * STEP_S], now)  # one only: healthy
    moving(rec, "hung", [STEP_S] * 17, now)
    rec.op_accepted("hung", "hung-save", "save_weights", 16, at=now - 3_600)  # never ends
    rec.op_started("hung", "hung-save", "w-hung", at=now - 3_599)
    # A failure over an hour ago (in its first step), the model stepping fine since.
    moving(rec, "old-failure", [10_000.0] + [STEP_S] * 15, now, range(1))
    rec.flush()
    assert rec.stats().written == rec.stats().recorded
    return server, rec


async def _attention(server: fakeredis.FakeServer, now: float, **t: float) -> rollup.Attention:
    ctx = Context.build(Backends(state=RedisStateStore.in_memory(server)))
    ctx.now = now
    if t:
        ctx.thresholds = Thresholds(**t)
    return await rollup.attention(ctx, rollup.MAX_WORST)


def test_a_slowed_model_and_a_failing_one_are_found_among_healthy_moving_ones() -> None:
    now = time.time()
    server, _ = world(now)
    found = asyncio.run(_attention(server, now))
    assert found.scanned == LIVE
    by_id = {s.model.id: s for s in found.models}
    assert sorted(by_id) == ["failing", "hung", "slow"]
    assert by_id["hung"].verdict == Verdict.STUCK
    assert by_id["slow"].verdict == Verdict.SLOW
    assert CauseKind.PACE_REGRESSION in {c.kind for c in by_id["slow"].diagnosis.causes}
    failing = by_id["failing"]
    assert failing.diagnosis.causes[0].kind == CauseKind.OP_FAILED
    assert failing.last_error is not None and "CUDA" in failing.last_error.error
    assert (found.needing, found.truncated, found.has_next) == (3, False, False)


def test_the_indexes_hold_the_troubled_models_and_judging_reads_only_those() -> None:
    now = time.time()
    server, _ = world(now)
    client = fakeredis.FakeRedis(server=server, decode_responses=True)
    pairs = client.zrange(keys.MODELS_PACE, 0, -1, withscores=True)
    paces = {str(pair[0]): float(pair[1]) for pair in pairs}
    assert paces["slow"] == 5.0
    assert 0.9 < paces["one-slow-step"] < 1.1  # the median of the newest 3: one step moves none
    assert all(0.9 < v < 1.1 for k, v in paces.items() if k.startswith("h"))
    failing = client.zrange(keys.MODELS_FAILING, 0, -1)
    assert failing == ["old-failure", "failing"]  # the old one is past the inspector's hour
    # With the thresholds past what the models show, nobody is a candidate: the healthy
    # moving models are never judged, the troubled ones only through their indexes.
    assert client.zrange(keys.OPS_OPEN, 0, -1) == ["hung-save"]
    high = {"slow_pace_ratio": 6.0, "failing_within_s": 1.0, "stuck_after_s": 7_200.0}
    quiet = asyncio.run(_attention(server, now, **high))
    assert (quiet.scanned, quiet.models) == (LIVE, [])


def test_a_model_that_ends_leaves_the_moving_indexes() -> None:
    now = time.time()
    server, rec = world(now)
    rec.model_state("slow", "ended", at=now)
    rec.model_state("failing", "failed", reason="gave up", at=now)
    rec.flush()
    client = fakeredis.FakeRedis(server=server, decode_responses=True)
    assert "slow" not in client.zrange(keys.MODELS_PACE, 0, -1)
    assert "failing" not in client.zrange(keys.MODELS_FAILING, 0, -1)
    found = asyncio.run(_attention(server, now + 1))
    # The failed model is listed as failed (the recently failed index), the ended not.
    listed = [(s.model.id, s.verdict) for s in found.models]
    assert listed == [("failing", Verdict.FAILED), ("hung", Verdict.STUCK)]


def test_reindex_builds_the_moving_indexes_for_data_written_before_them() -> None:
    now = time.time()
    server, _ = world(now)
    client = fakeredis.FakeRedis(server=server, decode_responses=True)
    written = {
        key: client.zrange(key, 0, -1, withscores=True)
        for key in (keys.MODELS_PACE, keys.MODELS_FAILING, keys.OPS_OPEN)
    }
    client.delete(keys.MODELS_PACE, keys.MODELS_FAILING, keys.OPS_OPEN)  # an older writer's
    client.zadd(keys.MODELS_PACE, {"gone": 9.0})  # an entry that outlived its model
    client.zadd(keys.OPS_OPEN, {"of-a-model-gone": 1.0})
    client.set(keys.INDEXES_KEY, "1")  # declared complete before these indexes existed
    with pytest.raises(IndexesNotBuilt):  # said so, rather than answering short
        asyncio.run(_attention(server, now))
    found = reindex(client)
    assert (found.paced, found.failing, found.open_ops, found.pruned) == (LIVE, 2, 1, 2)
    for key, pairs in written.items():
        assert client.zrange(key, 0, -1, withscores=True) == pairs
    assert reindex(client).pruned == 0  # idempotent: a second pass changes nothing
    found_models = asyncio.run(_attention(server, now)).models
    assert sorted(s.model.id for s in found_models) == ["failing", "hung", "slow"]
