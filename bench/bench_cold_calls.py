"""What a record call costs where a trainer makes it: first thing after a GPU wait.

The hot-path rows of ``bench_recorder.py`` time calls in a tight loop, where the
recorder's code and data stay in the CPU's caches. A trainer calls ``op_finished`` right
after waiting on its GPU, when they are cold: the wait sleeps (or spins on system calls),
the vCPU is handed to others, and what the caller touches next misses the caches. This
times, interleaved, ``work -> wait -> one call`` for:

- ``empty``: a Python function with ``op_finished``'s signature that does nothing (the
  machine's floor for any call made there);
- ``thread`` / ``process``: ``op_finished`` of a recorder in that flusher mode (its
  flusher not started, so only the call is timed), first after the wait, and again right
  after (warm).

With ``--per-method thread|process`` it times instead each call a trainer makes every
step (as ``bench_recorder.py``'s trainer makes them), one at a time, first after the
wait, beside the empty function. With ``--paths`` it times, in one process, a process
mode recorder's ``op_enqueued`` and ``op_finished`` through each path a record can take
into the local queue: ``Outbox.put`` (the length check in Python) and the queue's own
``append`` (no check: tried for a steady caller and taken out, docs/benchmarks.md).

    .venv/bin/python bench/bench_cold_calls.py [--samples 400] [--wait sleep|spin]
    .venv/bin/python bench/bench_cold_calls.py --per-method process
    .venv/bin/python bench/bench_cold_calls.py --paths [--samples 300]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import workload
from openrl_inspect.recorder import Recorder, RecorderSettings
from support.redis_server import RedisServer
from workload import calibrate, cpu_work, gpu_wait


def empty(
    mid: str,
    oid: str,
    status: str = "succeeded",
    metrics: Any = None,
    error: str | None = None,
    at: float | None = None,
) -> None:
    return None


def per_method(args: argparse.Namespace, url: str) -> None:
    """Each of a trainer's per-step calls, first after the wait, interleaved."""
    rec = Recorder.from_settings(
        RecorderSettings(url=url, flush_at_exit=False, flusher=args.per_method, capacity=10**7),
        start=False,
    )
    metrics = {"loss": 0.5, "tokens": 65536}
    step_metrics = {"reward_mean": 0.6, "kl": 0.004}
    calls: dict[str, Callable[[int, str], None]] = {
        "empty": lambda i, oid: empty("model-1", oid, metrics=metrics),
        "op_accepted": lambda i, oid: rec.op_accepted(
            "model-1", oid, "forward_backward", i, session_id="sess-1"
        ),
        "op_enqueued": lambda i, oid: rec.op_enqueued("model-1", oid),
        "op_started": lambda i, oid: rec.op_started("model-1", oid, "trainer-0"),
        "op_finished": lambda i, oid: rec.op_finished("model-1", oid, metrics=metrics),
        "step_metrics": lambda i, oid: rec.step_metrics("model-1", i, step_metrics, finished=True),
        "set_status": lambda i, oid: rec.set_status(step=i),
    }
    try:
        cold = time_cold(calls, args.samples)
    finally:
        rec.close(0)
    table(f"--per-method {args.per_method} --samples {args.samples} --wait {args.wait}", cold)


def time_cold(calls: dict[str, Callable[[int, str], None]], samples: int) -> dict[str, list[float]]:
    """Each call first after the trainer's work and wait, the order reversed each sample."""
    work = calibrate(0.004)
    cold: dict[str, list[float]] = {k: [] for k in calls}
    pc = time.perf_counter
    for i in range(samples):
        order = list(calls.items())
        if i % 2:
            order.reverse()
        for name, call in order:
            oid = f"op-{i}"
            cpu_work(work)
            gpu_wait(0.005)
            t0 = pc()
            call(i, oid)
            cold[name].append(pc() - t0)
    return cold


def table(flags: str, cold: dict[str, list[float]]) -> None:
    print(f"bench/bench_cold_calls.py {flags}: load average {os.getloadavg()[0]:.2f}")
    print("| call (a lambda around it) | first after the wait, median [q1 - q3] |")
    print("|---|---|")
    for name, xs in cold.items():
        q = statistics.quantiles(xs, n=4)
        print(
            f"| {name} | {statistics.median(xs) * 1e6:.1f} us [{q[0] * 1e6:.1f} - {q[2] * 1e6:.1f}] |"
        )


def per_op(
    rec: Recorder, m: dict[str, Any]
) -> tuple[Callable[[int, str], None], Callable[[int, str], None]]:
    return (
        lambda i, oid: rec.op_enqueued("model-1", oid),
        lambda i, oid: rec.op_finished("model-1", oid, metrics=m),
    )


def paths(args: argparse.Namespace, url: str) -> None:
    """The same calls through ``Outbox.put`` and through the queue's ``append``."""
    settings = RecorderSettings(url=url, flush_at_exit=False, flusher="process", capacity=10**7)
    recs = {p: Recorder.from_settings(settings, start=False) for p in ("put", "append")}
    for path, rec in recs.items():
        process = rec._process
        assert process is not None, "the process mode is needed"
        box = process.outbox  # "append": what a put with no check would cost
        cast(Any, rec)._put = box.put if path == "put" else box.local.append
    m = {"loss": 0.5, "tokens": 65536}
    calls: dict[str, Callable[[int, str], None]] = {
        "empty": lambda i, oid: empty("model-1", oid, metrics=m),
    }
    for path, rec in recs.items():
        calls[f"op_enqueued via {path}"], calls[f"op_finished via {path}"] = per_op(rec, m)
    try:
        cold = time_cold(calls, args.samples)
    finally:
        for rec in recs.values():
            rec.close(1)
    table(f"--paths --samples {args.samples} --wait {args.wait}", cold)


def main(args: argparse.Namespace) -> None:
    workload.SPIN = args.wait == "spin"
    server = RedisServer().start()
    if args.paths:
        try:
            paths(args, server.url)
        finally:
            server.cleanup()
        return
    if args.per_method:
        try:
            per_method(args, server.url)
        finally:
            server.cleanup()
        return
    recorders = {
        mode: Recorder.from_settings(
            RecorderSettings(url=server.url, flush_at_exit=False, flusher=mode, capacity=10**6),
            start=False,
        )
        for mode in ("thread", "process")
    }
    calls: dict[str, Callable[..., None]] = {
        "empty": empty,
        "thread": recorders["thread"].op_finished,
        "process": recorders["process"].op_finished,
    }
    work = calibrate(0.004)
    metrics = {"loss": 0.5, "tokens": 65536}
    cold: dict[str, list[float]] = {k: [] for k in calls}
    warm: dict[str, list[float]] = {k: [] for k in calls}
    pc = time.perf_counter
    try:
        for i in range(args.samples):
            order = list(calls.items())
            if i % 2:
                order.reverse()
            for name, call in order:
                cpu_work(work)
                gpu_wait(0.005)
                t0 = pc()
                call("model-1", f"op-{i}", metrics=metrics)
                t1 = pc()
                call("model-1", f"op-{i}b", metrics=metrics)
                t2 = pc()
                cold[name].append(t1 - t0)
                warm[name].append(t2 - t1)
    finally:
        for rec in recorders.values():
            rec.close(5)
        server.cleanup()
    med = statistics.median
    print(
        f"bench/bench_cold_calls.py --samples {args.samples} --wait {args.wait}: "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    print("| call | first after the wait, median [q1 - q3] | right after, median |")
    print("|---|---|---|")
    for name in calls:
        q = statistics.quantiles(cold[name], n=4)
        print(
            f"| {name} | {med(cold[name]) * 1e6:.1f} us [{q[0] * 1e6:.1f} - {q[2] * 1e6:.1f}] "
            f"| {med(warm[name]) * 1e6:.1f} us |"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=400)
    parser.add_argument("--wait", choices=("sleep", "spin"), default="spin")
    parser.add_argument(
        "--per-method", choices=("thread", "process"), help="each of a trainer's calls"
    )
    parser.add_argument("--paths", action="store_true", help="through put, and the append")
    main(parser.parse_args())
