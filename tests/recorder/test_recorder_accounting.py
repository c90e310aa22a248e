"""Exact accounting as a property: over random sequences of record calls, flushes and
Redis faults, ``recorded == written + dropped + pending`` at every moment (checked after
each step and, meanwhile, by a thread watching while the flusher runs), and once Redis
answers again every record is written or counted dropped for a reason of its own, with
what Redis holds equal to what was counted written."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import fakeredis
import redis.exceptions as rexc
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openrl_inspect.recorder import Recorder, RecorderSettings, RecorderStats, Retention
from openrl_inspect.state import keys

MODELS = ("m-a", "m-b")
FAULTS = ("refuse", "lose", "loading", "ok")


class Faulty:
    """A client whose next pipelines fail as planned: refused before Redis applies them,
    applied with the answer lost, or answered LOADING (nothing applied) for every command."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.plan: list[str] = []
        self.lock = threading.Lock()

    def pipeline(self, transaction: bool = False) -> Any:
        return _Pipe(self, self.client.pipeline(transaction=transaction))

    def close(self) -> None:
        self.client.close()


class _Pipe:
    def __init__(self, owner: Faulty, pipe: Any) -> None:
        self.owner, self.pipe, self.n = owner, pipe, 0

    def execute_command(self, *args: Any) -> None:
        self.pipe.execute_command(*args)
        self.n += 1

    def execute(self, raise_on_error: bool = True) -> list[Any]:
        with self.owner.lock:
            step = self.owner.plan.pop(0) if self.owner.plan else "ok"
        if step == "refuse":
            raise rexc.ConnectionError("Connection refused")
        if step == "loading":
            return [rexc.ResponseError("LOADING Redis is loading the dataset")] * self.n
        results = list(self.pipe.execute(raise_on_error=raise_on_error))
        if step == "lose":
            raise rexc.TimeoutError("Timeout reading from socket")
        return results


@dataclass
class Tally:
    """What the test recorded: the records that leave one key or member each, and how
    many records could be rejected or invalid."""

    ops: list[tuple[str, str]] = field(default_factory=list)
    batches: dict[str, int] = field(default_factory=dict)
    logs: int = 0
    steps: dict[str, int] = field(default_factory=dict)  # step finishes per model
    invalid: int = 0  # records whose status, state or level the domain does not know


RECORD = st.one_of(
    st.tuples(st.just("op"), st.sampled_from(MODELS)),
    st.tuples(st.just("batch"), st.sampled_from(MODELS)),
    st.tuples(st.just("finish"), st.sampled_from(["succeeded", "failed", "FAILED", "done"])),
    st.tuples(st.just("state"), st.sampled_from(["active", "ended", "paused"])),
    st.tuples(st.just("log"), st.sampled_from(["INFO", "warn", "loud"])),
    st.tuples(st.just("malformed"), st.just("")),
    st.tuples(st.just("step"), st.sampled_from(MODELS)),
)
STEP = st.one_of(
    st.tuples(st.just("record"), st.lists(RECORD, min_size=1, max_size=30)),
    st.tuples(st.just("fault"), st.lists(st.sampled_from(FAULTS), min_size=1, max_size=4)),
    st.tuples(st.just("flush"), st.sampled_from([0.0, 0.05, 5.0])),
    st.tuples(st.just("wrongtype"), st.sampled_from(MODELS)),  # Redis rejects its logs
)


def balanced(s: RecorderStats) -> bool:
    return s.recorded == s.written + s.dropped + s.pending


def record(rec: Recorder, calls: list[tuple[str, str]], tally: Tally) -> None:
    for what, arg in calls:
        n = len(tally.ops)
        if what == "op":
            rec.op_accepted(arg, f"op-{n}", "forward_backward", n // 10)
            tally.ops.append((arg, f"op-{n}"))
        elif what == "batch":
            rec.sampler_batch(arg, 8, 100, 200, 0.1, 1, worker_id="sampler-0")
            tally.batches[arg] = tally.batches.get(arg, 0) + 1
        elif what == "finish":
            rec.op_finished("m-c", f"op-{n}", status=arg)
            tally.invalid += arg not in ("succeeded", "failed")
        elif what == "state":
            rec.model_state("m-c", arg)
            tally.invalid += arg == "paused"
        elif what == "step":  # consecutive steps, each a second: the pace index moves
            n = tally.steps.get(arg, 0)
            rec.step_metrics(arg, n, {"loss": 0.5}, finished=True, at=1_000.0 + n)
            tally.steps[arg] = n + 1
        elif what == "log":
            rec.client_log(MODELS[n % 2], arg, "a line")
            tally.logs += 1
            tally.invalid += arg == "loud"
        else:
            rec.heartbeat("w-1", "trainer", "pod", "node", payload=[1])  # type: ignore[arg-type]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(STEP, min_size=1, max_size=12), capacity=st.sampled_from([16, 64, 4096]))
def test_every_record_is_accounted_at_every_moment_through_faults(
    steps: list[tuple[str, Any]], capacity: int
) -> None:
    client = fakeredis.FakeRedis(server=fakeredis.FakeServer(), decode_responses=True)
    faulty = Faulty(client)
    rec = Recorder(
        faulty,  # type: ignore[arg-type]
        Retention(max_steps_per_model=10**6, max_sampler_batches_per_model=10**6),
        settings=RecorderSettings(
            recorder_id="acct",
            flush_interval_s=0.002,
            backoff_base_s=0.001,
            backoff_cap_s=0.004,
            flush_at_exit=False,
        ),
        batch_size=8,
        capacity=capacity,
    )
    unbalanced: list[RecorderStats] = []
    done = threading.Event()

    def watch() -> None:  # the flusher thread settles batches meanwhile
        while not done.is_set():
            snapshot = rec.stats()
            if not balanced(snapshot):
                unbalanced.append(snapshot)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    tally = Tally()
    try:
        for what, arg in steps:
            if what == "record":
                record(rec, arg, tally)
            elif what == "fault":
                with faulty.lock:
                    faulty.plan.extend(arg)
            elif what == "flush":
                rec.flush(arg)
            else:
                client.set(keys.logs(arg), "not a sorted set")
            assert balanced(rec.stats())
        with faulty.lock:
            faulty.plan.clear()  # Redis answers again: nothing may be lost from here
        st_ = rec.close(30)
    finally:
        done.set()
        watcher.join()
    assert not unbalanced, unbalanced[0]
    assert balanced(st_) and st_.pending == 0
    assert set(st_.dropped_by_reason) <= {"full", "shed", "malformed", "invalid", "rejected"}
    # Only the logs of a model whose log key has the wrong type are rejected; only the
    # values outside the domain's vocabularies are invalid.
    assert st_.dropped_by_reason.get("rejected", 0) <= tally.logs
    assert st_.dropped_by_reason.get("invalid", 0) <= tally.invalid
    # What Redis holds of the kinds with one key or member per record is what was
    # counted written of them (a record dropped at the door never reached it).
    dropped = st_.dropped_by_kind
    assert sum(client.exists(keys.op(m, o)) for m, o in tally.ops) == len(tally.ops) - dropped.get(
        "op_accepted", 0
    )
    stored = sum(client.zcard(keys.sampler_batches(m)) for m in MODELS)
    assert stored == sum(tally.batches.values()) - dropped.get("sampler_batch", 0)
    # The moving models' indexes hold only what was recorded: the steps' even pace
    # (replays and retries leave the score a first write gives), m-c's failures.
    paces = client.zrange(keys.MODELS_PACE, 0, -1, withscores=True)
    assert all(float(pair[1]) == 1.0 for pair in paces)
    assert set(client.zrange(keys.MODELS_PACE, 0, -1)) <= {
        m for m, n in tally.steps.items() if n >= 8
    }
    assert set(client.zrange(keys.MODELS_FAILING, 0, -1)) <= {"m-c"}
