"""Independent A/B of the recorder's cost to its callers, through the public API only.

Shapes (as issue 17 states them):

- trainer: a thread; per step 3 ops of 4 ms Python work + 5 ms GPU wait (``time.sleep``),
  each op recorded as accepted, enqueued, started and finished, plus the step's metrics;
- sampler: asyncio; per batch an 8 ms await + 2 ms Python work, recorded as op started,
  sampler batch, op finished (and a client log every 10 batches).

Each round alternates blocks with the recorder off (no record calls) and on, 6 blocks
each in ABBA order, pooled per side; each gate is the median over the rounds of the
per-round on/off ratio, with the min and max over the rounds. Besides the
gates it reports where the time goes: the flusher threads' CPU per record and wake-ups
per second (from ``/proc/self/task``), the caller's Python work stretched by waiting for
the GIL, and the sampler loop's lateness (how far awaits overshoot).

    .venv/bin/python bench/bench_recorder_ab.py [--rounds 7] [--sync-points] [--flusher thread]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import workload
from openrl_inspect.recorder import AsyncRecorder, Recorder, RecorderSettings, WorkerInfo
from support.redis_server import RedisServer
from workload import calibrate, cpu_work, gate, gpu_await, gpu_wait, remote

TICK = os.sysconf("SC_CLK_TCK")


FLUSHERS: list[int] = []  # pids of flusher processes (process mode)


def cpu_and_switches(base: str) -> tuple[float, int]:
    fields = Path(f"{base}/stat").read_text().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / TICK
    status = Path(f"{base}/status").read_text()
    switches = sum(int(line.split()[1]) for line in status.splitlines() if "ctxt_switches" in line)
    return cpu, switches


def recorder_threads() -> dict[int, tuple[float, int]]:
    """CPU seconds and context switches of the recorder's threads (in this process) or
    of its flusher processes (every thread of theirs)."""
    out: dict[int, tuple[float, int]] = {}
    for t in threading.enumerate():
        if not t.name.startswith("openrl-recorder") or t.native_id is None:
            continue
        try:
            out[t.native_id] = cpu_and_switches(f"/proc/self/task/{t.native_id}")
        except (OSError, IndexError, ValueError):
            continue
    for pid in FLUSHERS:
        try:
            for task in Path(f"/proc/{pid}/task").iterdir():
                out[int(task.name)] = cpu_and_switches(str(task))
        except (OSError, IndexError, ValueError):
            continue
    return out


def watch(rec: Recorder | AsyncRecorder) -> None:
    """Count the flusher process's CPU too (a private attribute: this is our benchmark)."""
    process = rec._process
    if process is not None and process._proc is not None:
        FLUSHERS.append(process._proc.pid)


def spread(xs: list[float], unit: str, digits: int = 2) -> str:
    return (
        f"{statistics.median(xs):+.{digits}f} {unit} "
        f"[{min(xs):+.{digits}f} .. {max(xs):+.{digits}f}] (n={len(xs)})"
    )


def abba(i: int) -> bool:
    return i % 4 in (1, 2)


def interleaved_trainer(rec: Recorder, steps: int, work: int, base: int, sync: bool) -> float:
    """Step time change with the recorder called on every other step (ABBA by step).

    The flusher runs throughout, so its share of the machine falls on both sides alike:
    what is left is the caller's own cost (the record calls and what they disturb),
    measured without the drift of a shared machine's speed over seconds that the blocks
    above suffer. Means, not medians: a step the recorder stalls counts in full.
    """
    side: dict[bool, list[float]] = {False: [], True: []}
    for i in range(steps):
        on = abba(i) and not NULL
        # --sync-points: at the blocks' cadence (16 steps of records), on an 'on' step
        st, _ = trainer_round(rec if on else None, 1, work, base + i, sync and i % 32 == 1)
        side[abba(i)].append(st[0])
    return (statistics.mean(side[True]) / statistics.mean(side[False]) - 1) * 100


async def interleaved_sampler(rec: AsyncRecorder, batches: int, work: int, sync: bool) -> float:
    """Throughput change with the recorder called on every other batch (ABBA by batch)."""
    side: dict[bool, float] = {False: 0.0, True: 0.0}
    for i in range(batches):
        on = abba(i) and not NULL
        # --sync-points: at the blocks' cadence (32 batches of records), on an 'on' batch
        dt, _ = await sampler_round(rec if on else None, 1, work, i, sync and i % 64 == 1)
        side[abba(i)] += dt
    return (side[False] / side[True] - 1) * 100


class Probe:
    """Flusher CPU and wake-ups over one 'on' round."""

    def __init__(self) -> None:
        self.before = recorder_threads()
        self.t = time.perf_counter()

    def done(self, records: int) -> tuple[float, float]:
        after = recorder_threads()
        dt = time.perf_counter() - self.t
        cpu = sum(c for c, _ in after.values()) - sum(c for c, _ in self.before.values())
        sw = sum(s for _, s in after.values()) - sum(s for _, s in self.before.values())
        return cpu / max(1, records) * 1e6, sw / dt


def trainer_round(rec: Recorder | None, steps: int, work: int, base: int, sync: bool) -> Any:
    step_times: list[float] = []
    work_times: list[float] = []
    for s in range(steps):
        step = base + s
        t = time.perf_counter()
        for j in range(3):
            oid = f"op-{step}-{j}"
            if rec is not None:
                rec.op_accepted("model-1", oid, "forward_backward", step, session_id="sess-1")
                rec.op_enqueued("model-1", oid)
                rec.op_started("model-1", oid, "trainer-0")
            w = time.perf_counter()
            cpu_work(work)
            work_times.append(time.perf_counter() - w)
            if rec is not None and sync and j == 2 and (step % 16 == 15 or s == steps - 1):
                # A sync point every 16 steps and at the block's end: the flush is done
                # during the GPU wait that follows, and none of a block's flush is left
                # to land in the next block (but the last op_finished and step_metrics).
                rec.flush_soon()
            gpu_wait(0.005)
            if rec is not None:
                rec.op_finished("model-1", oid, metrics={"loss": 0.5, "tokens": 65536})
        if rec is not None:
            rec.step_metrics("model-1", step, {"reward_mean": 0.6, "kl": 0.004}, finished=True)
        step_times.append(time.perf_counter() - t)
    return step_times, work_times


def trainer(url: str, rounds: int, steps: int, sync: bool) -> list[str]:
    work = calibrate(0.004)
    worker = WorkerInfo("trainer-0", "trainer", "pod-t", "node-1", "model-1", ("GPU-0",))
    settings = RecorderSettings(url=url, flush_at_exit=False, flusher=FLUSHER)
    rec = Recorder.from_settings(settings, worker=worker)
    watch(rec)
    trainer_round(rec, 10, work, 10_000_000, sync)  # warm-up
    rec.flush(30)  # a flusher process is up before the first round
    change: list[float] = []
    paired: list[float] = []
    fine: list[float] = []
    stretch: list[float] = []
    cpu_per_rec: list[float] = []
    wakeups: list[float] = []
    n = max(1, steps // BLOCKS)
    for r in range(rounds):
        probe = Probe()
        pooled: dict[bool, tuple[list[float], list[float]]] = {False: ([], []), True: ([], [])}
        pairs: list[float] = []
        for b in range(BLOCKS):
            pair: dict[bool, float] = {}
            for on in (False, True) if b % 2 == 0 else (True, False):
                caller = rec if on and not NULL else None
                st_, wt_ = trainer_round(caller, n, work, (r * BLOCKS + b) * n, sync)
                pooled[on][0].extend(st_)
                pooled[on][1].extend(wt_)
                pair[on] = statistics.median(st_)
            pairs.append(pair[True] / pair[False])
        paired.append((statistics.median(pairs) - 1) * 100)
        cpu, wake = probe.done(BLOCKS * n * 13)
        (off_s, off_w), (on_s, on_w) = pooled[False], pooled[True]
        med = statistics.median
        change.append((med(on_s) / med(off_s) - 1) * 100)
        fine.append(interleaved_trainer(rec, BLOCKS * n, work, (r + 1) * 10_000_000, sync))
        stretch.append((med(on_w) - med(off_w)) * 1e6)
        cpu_per_rec.append(cpu)
        wakeups.append(wake)
    st = rec.close(30)
    assert st.dropped == 0 and st.pending == 0, st
    return [
        f"trainer step time change, blocks: {gate(change, '%', lambda x: x < 0.5)}  (gate: < 0.5 %)",
        f"  median over adjacent block pairs: {gate(paired, '%', lambda x: x < 0.5)}",
        f"  steps interleaved (the caller's own cost): {gate(fine, '%', lambda x: x < 0.5)}",
        f"  4 ms Python work stretched by: {spread(stretch, 'us', 0)}",
        f"  flusher CPU per record: {spread(cpu_per_rec, 'us', 1)}; "
        f"flusher wake-ups: {spread(wakeups, '/s', 0)}",
    ]


async def sampler_round(
    rec: AsyncRecorder | None, batches: int, work: int, first: int = 0, sync: bool = False
) -> Any:
    lateness: list[float] = []
    t = time.perf_counter()
    for b in range(first, first + batches):
        t0 = time.perf_counter()
        if rec is not None and sync and (b % 32 == 31 or b == first + batches - 1):
            rec.flush_soon()  # a sync point: flushed while the GPU works
        await gpu_await(0.008)
        lateness.append(time.perf_counter() - t0 - 0.008)
        cpu_work(work)
        if rec is not None:
            oid = f"sample-{b}"
            rec.op_started("model-1", oid, "sampler-0")
            rec.sampler_batch("model-1", 32, 4096, 12000, time.perf_counter() - t0, 3, op_id=oid)
            rec.op_finished("model-1", oid, metrics={"generated_tokens": 12000})
            if b % 10 == 0:
                rec.client_log("model-1", "INFO", "sampled", {"batch": b})
    return time.perf_counter() - t, lateness


async def sampler(url: str, rounds: int, batches: int, sync: bool) -> list[str]:
    work = calibrate(0.002)
    worker = WorkerInfo("sampler-0", "sampler", "pod-s", "node-1", "model-1", ("GPU-1",))
    rec = AsyncRecorder.from_settings(
        RecorderSettings(url=url, flush_at_exit=False, flusher=FLUSHER), worker=worker
    )
    watch(rec)
    await sampler_round(rec, 20, work)  # warm-up
    await rec.flush(30)
    change: list[float] = []
    paired: list[float] = []
    fine: list[float] = []
    late: list[float] = []
    cpu_per_rec: list[float] = []
    wakeups: list[float] = []
    n = max(1, batches // BLOCKS)
    for _ in range(rounds):
        probe = Probe()
        elapsed = {False: 0.0, True: 0.0}
        lateness: dict[bool, list[float]] = {False: [], True: []}
        pairs: list[float] = []
        for b in range(BLOCKS):
            pair: dict[bool, float] = {}
            for on in (False, True) if b % 2 == 0 else (True, False):
                caller = rec if on and not NULL else None
                dt, lt = await sampler_round(caller, n, work, 0, sync)
                elapsed[on] += dt
                lateness[on].extend(lt)
                pair[on] = dt
            pairs.append(pair[False] / pair[True])
        paired.append((statistics.median(pairs) - 1) * 100)
        cpu, wake = probe.done(BLOCKS * n * 31 // 10)
        change.append((elapsed[False] / elapsed[True] - 1) * 100)
        fine.append(await interleaved_sampler(rec, BLOCKS * n, work, sync))
        late.append((statistics.mean(lateness[True]) - statistics.mean(lateness[False])) * 1e6)
        cpu_per_rec.append(cpu)
        wakeups.append(wake)
    st = await rec.close(30)
    assert st.dropped == 0 and st.pending == 0, st
    return [
        f"sampler throughput change, blocks: {gate(change, '%', lambda x: x > -1)}  (gate: > -1 %)",
        f"  median over adjacent block pairs: {gate(paired, '%', lambda x: x > -1)}",
        f"  batches interleaved (the caller's own cost): {gate(fine, '%', lambda x: x > -1)}",
        f"  loop lateness added per await: {spread(late, 'us', 0)}",
        f"  flusher CPU per record: {spread(cpu_per_rec, 'us', 1)}; "
        f"wake-ups: {spread(wakeups, '/s', 0)}",
    ]


FLUSHER = "thread"  # --flusher (the recorder's default)
# Each round alternates this many blocks off and on (ABBA...), pooled per side: load
# that comes and goes over seconds on a shared machine hits both sides alike.
BLOCKS = 6
# --null: both sides leave the recorder uncalled (it still runs): the spread this
# measurement has with nothing to find, the floor any gate is read against.
NULL = False


def main(args: argparse.Namespace) -> None:
    global FLUSHER, NULL, BLOCKS
    FLUSHER, NULL, BLOCKS = args.flusher, args.null, args.blocks
    workload.SPIN = args.gpu_wait == "spin"
    server = RedisServer().start()
    remote(server)
    try:
        lines = trainer(server.url, args.rounds, args.steps, args.sync_points)
        lines += asyncio.run(sampler(server.url, args.rounds, args.batches, args.sync_points))
    finally:
        server.cleanup()
    print(
        f"bench/bench_recorder_ab.py --rounds {args.rounds} --flusher {args.flusher}"
        + (" --sync-points" * args.sync_points)
        + f" --steps {args.steps} --batches {args.batches} --gpu-wait {args.gpu_wait}"
        + f" --blocks {args.blocks}"
        + (" --null (both sides off: the noise floor)" * args.null)
    )
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at the end")
    print("\n".join(lines))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--batches", type=int, default=200)
    parser.add_argument(
        "--sync-points",
        action="store_true",
        help="trainer and sampler call flush_soon() before a GPU wait",
    )
    parser.add_argument("--flusher", choices=("auto", "process", "thread"), default="thread")
    parser.add_argument("--null", action="store_true", help="A/A: the recorder on neither side")
    parser.add_argument("--blocks", type=int, default=6, help="blocks a side per round")
    parser.add_argument("--gpu-wait", choices=("sleep", "spin"), default="sleep")
    main(parser.parse_args())
