"""Benchmark: the telemetry recorder's cost to its callers and its flush throughput.

Starts its own redis-server on a free loopback port. In one run:

1. hot path: the cost of one record call (several kinds) with the recorder's flusher
   running against that Redis: loop-amortised per call, and per-call percentiles;
2. flush throughput: records written per second when the buffer holds a realistic mix
   (trainer op lifecycles, step metrics, sampler batches, client logs);
3. a sampler loop (asyncio, ``AsyncRecorder``): batches per second;
4. a trainer step loop (a thread, ``Recorder``): step time;
5. the floor: the same trainer's steps interleaved one by one with no calls, with calls
   into methods that do nothing, and with the recorder, so what the recorder adds above
   what any Python API costs at those call sites is read in one run.

3 and 4 alternate the recorder off (no record calls at all) and on: each round is 6
blocks a side in ABBA order, pooled per side; the change is the median over the rounds
of the per-round ratio on/off, with its spread over the rounds as [min - max] (a gate
holds only when the whole spread is within it).
Other figures print as median [q1 - q3] (n rounds). At least 7 rounds.

    .venv/bin/python bench/bench_recorder.py [--rounds 9] [--quick] [--flusher thread]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import redis

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import workload
from openrl_inspect.recorder import (
    AsyncRecorder,
    Recorder,
    RecorderBase,
    RecorderSettings,
    Retention,
    WorkerInfo,
)
from support.redis_server import RedisServer
from workload import calibrate, cpu_work, gate, gpu_await, gpu_wait, remote

KEEP = Retention(max_steps_per_model=1_000_000, max_sampler_batches_per_model=20_000)


def quartiles(xs: list[float]) -> tuple[float, float, float]:
    if len(xs) < 4:
        return min(xs), statistics.median(xs), max(xs)
    q = statistics.quantiles(xs, n=4)
    return q[0], statistics.median(xs), q[2]


def fmt(xs: list[float], unit: str, digits: int = 2) -> str:
    q1, med, q3 = quartiles(xs)
    return f"{med:.{digits}f} {unit} [{q1:.{digits}f} - {q3:.{digits}f}] (n={len(xs)})"


FLUSHER = "thread"  # --flusher (the recorder's default)
SYNC = False  # --sync-points: the callers call flush_soon() before a GPU wait
# Each round of 3. and 4. alternates this many blocks off and on (ABBA...), pooled per
# side: load that comes and goes over seconds on a shared machine hits both alike.
BLOCKS = 6  # --blocks
NULL = False  # --null: an A/A, the recorder running and called on neither side
STUB = False  # --stub: the on side calls methods that do nothing (any Python API's floor)


class Stub:
    """The trainer's record methods, doing nothing: what the calls alone cost there."""

    def op_accepted(
        self, mid: str, oid: str, kind: str, step: int, session_id: str | None = None
    ) -> None:
        pass

    def op_enqueued(self, mid: str, oid: str) -> None:
        pass

    def op_started(self, mid: str, oid: str, worker_id: str) -> None:
        pass

    def op_finished(self, mid: str, oid: str, metrics: dict[str, Any] | None = None) -> None:
        pass

    def step_metrics(
        self, mid: str, step: int, metrics: dict[str, Any], finished: bool = False
    ) -> None:
        pass

    def set_status(self, **fields: Any) -> None:
        pass

    def flush_soon(self) -> None:
        pass


def settings(url: str, **kw: Any) -> RecorderSettings:
    return RecorderSettings(url=url, flush_at_exit=False, flusher=FLUSHER, **kw)


# -- 1. hot path -----------------------------------------------------------------------------


def hot_path(url: str, rounds: int, calls: int) -> list[str]:
    rec = Recorder.from_settings(settings(url, capacity=1_000_000), KEEP)
    rec.op_enqueued("warm-up", "w")  # a flusher process is up before the clock starts
    rec.flush(30)
    payload = {"loss": 0.71, "tokens": 65536}
    kinds: dict[str, Callable[[int], None]] = {
        "op_started": lambda i: rec.op_started("model-1", "op-1", "trainer-0"),
        "op_finished (metrics)": lambda i: rec.op_finished("model-1", "op-1", metrics=payload),
        "sampler_batch": lambda i: rec.sampler_batch("model-1", 32, 4096, 12000, 1.7, 3),
        "step_metrics": lambda i: rec.step_metrics("model-1", i, payload, finished=True),
        "client_log": lambda i: rec.client_log("model-1", "INFO", "step done", payload),
    }
    rows = []
    ns = time.perf_counter_ns
    for name, call in kinds.items():
        amortised: list[float] = []
        single: list[int] = []
        for _ in range(rounds):
            # loop-amortised: the loop itself measured separately and subtracted
            t = ns()
            for i in range(calls):
                call(i)
            with_call = ns() - t
            t = ns()
            for _i in range(calls):
                pass
            empty = ns() - t
            amortised.append((with_call - empty) / calls / 1000)
            # one call at a time (includes a perf_counter_ns pair, ~0.05-0.1 us)
            for i in range(calls // 10):
                t0 = ns()
                call(i)
                single.append(ns() - t0)
            rec.flush(30)  # let the flusher drain before the next round
        single.sort()
        p50 = single[len(single) // 2] / 1000
        p99 = single[int(len(single) * 0.99)] / 1000
        rows.append(
            f"| hot path: `{name}` | {fmt(amortised, 'us')} | "
            f"per call p50 {p50:.2f} us, p99 {p99:.2f} us | median < 2 us |"
        )
    st = rec.close(30)
    assert st.dropped == 0 and st.pending == 0, st
    return rows


# -- 2. flush throughput ----------------------------------------------------------------------


def fill_mix(rec: RecorderBase, units: int, offset: int) -> int:
    """Per unit (one trainer step): 4 ops x 4 lifecycle records, step metrics,
    8 sampler batches, 1 client log = 26 records, spread over 16 models."""
    n = 0
    for u in range(units):
        k = offset + u
        mid = f"model-{k % 16}"
        step = k // 16
        for j in range(4):
            oid = f"op-{k}-{j}"
            rec.op_accepted(mid, oid, "forward_backward", step, session_id="sess-1")
            rec.op_enqueued(mid, oid)
            rec.op_started(mid, oid, f"trainer-{k % 16}")
            rec.op_finished(mid, oid, metrics={"loss": 0.5, "tokens": 65536})
        rec.step_metrics(mid, step, {"reward_mean": 0.61, "kl": 0.004}, finished=True)
        for _ in range(8):
            rec.sampler_batch(mid, 32, 4096, 12000, 1.7, 3, worker_id=f"sampler-{k % 16}")
        rec.client_log(mid, "INFO", "step done", {"step": step})
        n += 26
    return n


def throughput(url: str, rounds: int, units: int) -> list[str]:
    rates: dict[str, list[float]] = {"mix": [], "sampler": [], "ops": []}
    client = redis.Redis.from_url(url, decode_responses=True)
    for r in range(rounds):
        for kind in rates:
            rec = Recorder(
                client,
                KEEP,
                settings=settings(url, capacity=10_000_000, batch_size=1024),
                start=False,
            )
            rec.op_enqueued("warm-up", "w")  # a flusher process is up before the clock starts
            assert rec.flush(30) == 1
            if kind == "mix":
                n = fill_mix(rec, units, r * units)
            elif kind == "sampler":
                n = units * 26
                for i in range(n):
                    rec.sampler_batch(f"model-{i % 16}", 32, 4096, 12000, 1.7, 3, worker_id="s")
            else:
                n = units * 26
                for i in range(n // 4):
                    oid = f"o-{r}-{i}"
                    rec.op_accepted(f"model-{i % 16}", oid, "forward", i // 64)
                    rec.op_enqueued(f"model-{i % 16}", oid)
                    rec.op_started(f"model-{i % 16}", oid, "trainer-0")
                    rec.op_finished(f"model-{i % 16}", oid, metrics={"loss": 0.5})
                n = (n // 4) * 4
            t = time.perf_counter()
            written = rec.flush(120)
            dt = time.perf_counter() - t
            assert written == n, (written, n)
            rates[kind].append(n / dt / 1000)
            rec.close(5)
        client.flushall()
    client.close()
    labels = {
        "mix": "flush throughput, realistic mix (26 records per trainer step)",
        "sampler": "flush throughput, sampler batches only",
        "ops": "flush throughput, op lifecycle records only",
    }
    return [
        f"| {labels[k]} | {fmt(v, 'k records/s', 1)} | {units * 26:,} records per round, "
        f"batches of 1,024 | >= 200k records/s |"
        for k, v in rates.items()
    ]


# -- 3. sampler loop (asyncio) -------------------------------------------------------------------


async def sampler_round(rec: AsyncRecorder | None, batches: int, work: int, gpu_s: float) -> float:
    """Batches per second of a sampler loop: Python work, an await on the 'GPU', records."""
    t = time.perf_counter()
    for b in range(batches):
        t0 = time.perf_counter()
        cpu_work(work)
        if rec is not None and SYNC and (b % 32 == 31 or b == batches - 1):
            rec.flush_soon()  # --sync-points: flushed while the GPU works
        await gpu_await(gpu_s)
        if rec is not None:
            oid = f"sample-{b}"
            rec.op_started("model-1", oid, "sampler-0")
            rec.sampler_batch("model-1", 32, 4096, 12000, time.perf_counter() - t0, 3, op_id=oid)
            rec.op_finished("model-1", oid, metrics={"generated_tokens": 12000})
            if b % 10 == 0:
                rec.client_log("model-1", "INFO", "sampled", {"batch": b})
    return batches / (time.perf_counter() - t)


async def sampler(url: str, rounds: int, batches: int, work: int, gpu_s: float) -> list[str]:
    worker = WorkerInfo("sampler-0", "sampler", "pod-s", "node-1", "model-1", ("GPU-1",))
    rec = AsyncRecorder.from_settings(settings(url, heartbeat_every_s=1.0), KEEP, worker=worker)
    off: list[float] = []
    on: list[float] = []
    await sampler_round(rec, batches // 4, work, gpu_s)  # warm-up
    await rec.flush(30)
    n = max(1, batches // BLOCKS)
    paired: list[float] = []  # per round: the median over adjacent block pairs
    for _ in range(rounds):
        elapsed = {False: 0.0, True: 0.0}
        pairs: list[float] = []
        for b in range(BLOCKS):
            rate: dict[bool, float] = {}
            for side in (False, True) if b % 2 == 0 else (True, False):
                called = rec if side and not NULL else None
                rate[side] = await sampler_round(called, n, work, gpu_s)
                elapsed[side] += n / rate[side]
            pairs.append((rate[True] / rate[False] - 1) * 100)
        off.append(BLOCKS * n / elapsed[False])
        on.append(BLOCKS * n / elapsed[True])
        paired.append(statistics.median(pairs))
    st = await rec.close(30)
    assert st.dropped == 0 and st.pending == 0, st
    change = [(b / a - 1) * 100 for a, b in zip(off, on, strict=True)]
    return [
        f"| sampler loop throughput, recorder off | {fmt(off, 'batches/s', 1)} | "
        f"{batches} batches per round, ~{gpu_s * 1000:.0f} ms await + CPU work each | |",
        f"| sampler loop throughput, recorder on | {fmt(on, 'batches/s', 1)} | "
        f"{st.written:,} records written, 0 dropped | |",
        f"| sampler loop throughput change (on/off, paired) | "
        f"{gate(change, '%', lambda x: x > -1.0)} | negative = slower | regression < 1% |",
        f"| sampler loop throughput change, median over adjacent block pairs | "
        f"{gate(paired, '%', lambda x: x > -1.0)} | the same blocks; robust to a drift of "
        "the host's speed within a round | regression < 1% |",
    ]


# -- 4. trainer step loop (thread) ---------------------------------------------------------------


def trainer_round(
    rec: Recorder | Stub | None, steps: int, work: int, gpu_s: float, base: int
) -> list[float]:
    times = []
    for s in range(steps):
        step = base + s
        t = time.perf_counter()
        for j, kind in enumerate(("forward_backward", "forward_backward", "optim_step")):
            oid = f"op-{step}-{j}"
            if rec is not None:
                rec.op_accepted("model-1", oid, kind, step, session_id="sess-1")
                rec.op_enqueued("model-1", oid)
                rec.op_started("model-1", oid, "trainer-0")
            cpu_work(work)  # Python side of the op: data, kernel launches
            if rec is not None and SYNC and j == 2 and (step % 16 == 15 or s == steps - 1):
                # --sync-points: every 16 steps and at the block's end, flushed while the
                # GPU works; none of a block's flush lands in the next block.
                rec.flush_soon()
            gpu_wait(gpu_s)  # the GPU: the GIL is released
            if rec is not None:
                rec.op_finished("model-1", oid, metrics={"loss": 0.5, "tokens": 65536})
        if rec is not None:
            rec.step_metrics("model-1", step, {"reward_mean": 0.6, "kl": 0.004}, finished=True)
            rec.set_status(step=step)
        times.append(time.perf_counter() - t)
    return times


def trainer_recorder(url: str) -> Recorder:
    worker = WorkerInfo("trainer-0", "trainer", "pod-t", "node-1", "model-1", ("GPU-0",))
    return Recorder.from_settings(settings(url, heartbeat_every_s=1.0), KEEP, worker=worker)


def trainer(url: str, rounds: int, steps: int, work: int, gpu_s: float) -> list[str]:
    rec = trainer_recorder(url)
    off: list[float] = []
    on: list[float] = []
    paired: list[float] = []  # per round: the median over adjacent block pairs
    trainer_round(rec, steps // 4, work, gpu_s, 10_000_000)  # warm-up
    rec.flush(30)
    n = max(1, steps // BLOCKS)
    for r in range(rounds):
        times: dict[bool, list[float]] = {False: [], True: []}
        pairs: list[float] = []
        for b in range(BLOCKS):
            block: dict[bool, float] = {}
            for side in (False, True) if b % 2 == 0 else (True, False):
                base = (r * BLOCKS + b) * n
                called = (Stub() if STUB else rec) if side and not NULL else None
                step_times = trainer_round(called, n, work, gpu_s, base)
                times[side] += step_times
                block[side] = statistics.median(step_times)
            pairs.append((block[True] / block[False] - 1) * 100)
        off.append(statistics.median(times[False]) * 1000)
        on.append(statistics.median(times[True]) * 1000)
        paired.append(statistics.median(pairs))
    st = rec.close(30)
    assert st.dropped == 0 and st.pending == 0, st
    change = [(b / a - 1) * 100 for a, b in zip(off, on, strict=True)]
    return [
        f"| trainer step time, recorder off | {fmt(off, 'ms', 3)} | "
        f"{steps} steps per round: 3 ops x (CPU work + {gpu_s * 1000:.0f} ms GPU wait) | |",
        f"| trainer step time, recorder on | {fmt(on, 'ms', 3)} | "
        f"{st.written:,} records written, 0 dropped | |",
        f"| trainer step time change (on/off, paired) | "
        f"{gate(change, '%', lambda x: x < 0.5)} | positive = slower | regression < 0.5% |",
        f"| trainer step time change, median over adjacent block pairs | "
        f"{gate(paired, '%', lambda x: x < 0.5)} | the same blocks; robust to a drift of "
        "the host's speed within a round | regression < 0.5% |",
    ]


def trainer_floor(url: str, rounds: int, cycles: int, work: int, gpu_s: float) -> list[str]:
    """The trainer's steps interleaved one by one: no calls, the same calls into methods
    that do nothing (the floor any Python API pays at these call sites), and the recorder.

    Each cycle runs one step of each, in an order rotated every cycle; a round's figure is
    the median over its cycles of the step's change against the cycle's no-call step, and
    of the recorder's step against the empty methods' (what the recorder adds above the
    floor). The recorder runs throughout, so its background falls on every side alike:
    this measures the calls, the blocks of section 4 the whole.
    """
    rec = trainer_recorder(url)
    sides: list[Recorder | Stub | None] = [None, Stub(), rec]
    trainer_round(rec, 50, work, gpu_s, 20_000_000)  # warm-up
    rec.flush(30)
    stub_pct: list[float] = []
    rec_pct: list[float] = []
    above: list[float] = []
    for r in range(rounds):
        ds: list[list[float]] = [[], [], []]  # stub - none, recorder - none, recorder - stub
        base: list[float] = []
        for c in range(cycles):
            t = [0.0, 0.0, 0.0]
            order = (0, 1, 2) if c % 2 == 0 else (2, 1, 0)
            for i in order[c % 3 :] + order[: c % 3]:
                t[i] = trainer_round(sides[i], 1, work, gpu_s, 30_000_000 + r * cycles + c)[0]
            ds[0].append(t[1] - t[0])
            ds[1].append(t[2] - t[0])
            ds[2].append(t[2] - t[1])
            base.append(t[0])
        ref = statistics.median(base) / 100
        stub_pct.append(statistics.median(ds[0]) / ref)
        rec_pct.append(statistics.median(ds[1]) / ref)
        above.append(statistics.median(ds[2]) / ref)
    st = rec.close(30)
    assert st.dropped == 0 and st.pending == 0, st
    per = f"{cycles} cycles a round, one step of each side a cycle"
    return [
        f"| trainer, steps interleaved: empty methods vs no calls (the floor) | "
        f"{gate(stub_pct, '%', lambda x: x < 0.5)} | {per} | |",
        f"| trainer, steps interleaved: the recorder vs no calls | "
        f"{gate(rec_pct, '%', lambda x: x < 0.5)} | {st.written:,} records written | "
        "regression < 0.5% |",
        f"| trainer, steps interleaved: the recorder vs empty methods (above the floor) | "
        f"{gate(above, '%', lambda x: x < 0.5)} | | |",
    ]


def main(args: argparse.Namespace) -> None:
    global FLUSHER, SYNC, BLOCKS, NULL, STUB
    FLUSHER, SYNC, BLOCKS, NULL = args.flusher, args.sync_points, args.blocks, args.null
    STUB = args.stub
    workload.SPIN = args.gpu_wait == "spin"
    server = RedisServer().start()
    try:
        url = server.url
        rows = ["| measure | median [q1 - q3] (n) | setting | target |", "|---|---|---|---|"]
        q = args.quick
        want = set(args.sections.split(","))
        if "hot" in want:
            rows += hot_path(url, rounds=5 if q else args.rounds, calls=2_000 if q else 20_000)
        if "throughput" in want:
            rows += throughput(url, rounds=3 if q else 5, units=1_000 if q else 8_000)
        remote(server)  # for the gates only: the flush throughput includes Redis's work
        work_1ms = calibrate(0.001)
        if "sampler" in want:
            rows += asyncio.run(
                sampler(
                    url,
                    rounds=4 if q else args.rounds,
                    batches=100 if q else 1200,
                    work=2 * work_1ms,
                    gpu_s=0.008,
                )
            )
        if "trainer" in want:
            rows += trainer(
                url,
                rounds=4 if q else args.rounds,
                steps=20 if q else 600,
                work=work_1ms,
                gpu_s=0.005,
            )
        if "floor" in want:
            rows += trainer_floor(
                url,
                rounds=4 if q else args.rounds,
                cycles=20 if q else 300,
                work=work_1ms,
                gpu_s=0.005,
            )
    finally:
        server.cleanup()
    print(
        f"\nbench/bench_recorder.py (rounds={args.rounds}{', quick' if args.quick else ''}, "
        f"flusher={args.flusher}, gpu-wait={args.gpu_wait}"
        + (", sync points" * args.sync_points)
        + f", {args.blocks} blocks a side per round"
        + (", A/A: called on neither side" * args.null)
        + (", trainer: the on side calls methods that do nothing" * args.stub)
        + ")"
    )
    print(
        f"{platform.python_implementation()} {platform.python_version()}, "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at the end\n"
    )
    print("\n".join(rows))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--quick", action="store_true", help="small rounds, for a smoke run")
    parser.add_argument("--flusher", choices=("auto", "process", "thread"), default="thread")
    parser.add_argument("--gpu-wait", choices=("sleep", "spin"), default="sleep")
    parser.add_argument(
        "--sync-points", action="store_true", help="call flush_soon() before a GPU wait"
    )
    parser.add_argument(
        "--blocks", type=int, default=6, help="blocks a side per round, alternating (ABBA)"
    )
    parser.add_argument("--null", action="store_true", help="A/A: the recorder on neither side")
    parser.add_argument(
        "--stub", action="store_true", help="trainer: the on side calls methods that do nothing"
    )
    parser.add_argument(
        "--sections", default="hot,throughput,sampler,trainer,floor", help="which parts to run"
    )
    ns = parser.parse_args()
    if ns.rounds < 7 and not ns.quick:
        parser.error("--rounds: at least 7 alternating rounds for the gates")
    main(ns)
