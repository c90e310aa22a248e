"""The simulated cluster's GPU and vLLM metrics, kept in the in-memory metrics twins.

``mirror_metrics(sim, backends, now)`` creates an ``InMemoryGpuMetrics`` (``backends.
metrics``) and an ``InMemoryMetricsSource`` for the raw-query field (``backends.
prometheus``, with the raw query enabled: it only reads the demo's own series) on its
first call, and then appends, every scrape interval, what a DCGM exporter and vLLM
would have reported for what the simulation did:

- every simulated GPU exports ``DCGM_FI_PROF_GR_ENGINE_ACTIVE``, ``DCGM_FI_DEV_GPU_UTIL``,
  ``DCGM_FI_DEV_FB_USED`` and ``DCGM_FI_DEV_POWER_USAGE`` every 15 s, labelled as the
  exporter labels them (``UUID``, ``Hostname``, ``gpu``, ``modelName``, ``device``);
- a GPU is busy while its worker runs an op (trainers: ``forward_backward`` 0.92,
  ``optim_step`` 0.65...; samplers: ``sample`` 0.8), near 0 while its holder is idle
  (the ``idle_placement`` scenario), pinned at 1.0 under an op that hangs on a live
  worker (the ``stuck`` scenario), 0 once its worker stopped heartbeating (``lost``)
  and 0 when nobody holds it; each sample is the mean over its 15 s;
- every sampler pod of a model holding GPUs reports vLLM stats that follow how much of
  the interval it spent sampling.

The history before the first call is derived from what the simulation wrote to Redis
(placements, workers and ops, read once through ``backends.state``); after that, each
call observes the simulation's state (who holds which GPU, which op each model is
running) and charges it to the time since the previous call. Per call the work is a
dictionary update per GPU; samples are appended once per scrape interval, and the
twin is rebuilt from bounded buffers (two hours) every two hours.
"""

from __future__ import annotations

import math
import re
import weakref
import zlib
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from openrl_inspect.adapters import gpu_metrics as gm
from openrl_inspect.adapters.gpu_metrics import VllmStats
from openrl_inspect.adapters.gpu_metrics_memory import InMemoryGpuMetrics
from openrl_inspect.adapters.prometheus import (
    InMemoryMetricsSource,
    QueryCall,
    QueryResult,
    Sample,
    Series,
)
from openrl_inspect.adapters.prometheus_raw import RawQuerySettings
from openrl_inspect.adapters.redis_state import StateStore
from openrl_inspect.context import Backends
from openrl_inspect.simulator.cluster import Gpu
from openrl_inspect.simulator.sim import HEARTBEAT_EVERY_S, SimModel, Simulation
from openrl_inspect.state.paging import ListRef, PageRequest
from openrl_inspect.state.records import OpRecord, PlacementRecord, WorkerRecord

SCRAPE_S = 15.0
HISTORY_S = 2 * 3600.0
KEPT = int(HISTORY_S // SCRAPE_S)
VLLM_KEPT = 40  # ten minutes of vLLM snapshots per pod
# GR_ENGINE_ACTIVE while an op of this kind runs on the GPU's worker.
KIND_DUTY = {
    "forward_backward": 0.92,
    "forward": 0.85,
    "sample": 0.8,
    "optim_step": 0.65,
    "save_weights": 0.15,
}
OTHER_DUTY = 0.75
IDLE_DUTY = 0.01  # a live worker between ops: CUDA context up, no kernels
PINNED_DUTY = 1.0  # an op hung on a live worker (a collective spinning)
JITTER = 0.04  # relative, on busy time only
FB_MIB = {"trainer": 52_000.0, "sampler": 73_000.0}
IDLE_W, MAX_W = 70.0, 700.0
STALE_S = 30.0  # a worker silent this long is dead (as ``Limits.heartbeat_stale_s``)
LOOKBACK_S = gm.LOOKBACK_S

Labels = tuple[tuple[str, str], ...]


def duty_of(kind: str) -> float:
    return KIND_DUTY.get(kind, OTHER_DUTY)


def noise(key: str, t: float) -> float:
    """Deterministic noise in [-1, 1] for ``key`` at ``t``."""
    return zlib.crc32(f"{key}:{t:.0f}".encode()) / 0xFFFFFFFF * 2 - 1


def gpu_labels(gpu: Gpu) -> Labels:
    return tuple(
        sorted(
            {
                "UUID": gpu.uuid,
                "Hostname": gpu.node,
                "gpu": str(gpu.index),
                "modelName": gpu.product,
                "device": f"nvidia{gpu.index}",
            }.items()
        )
    )


@dataclass
class Bucket:
    """What happened on one GPU (or sampler pod) during one scrape interval."""

    observed_s: float = 0.0  # time accounted for
    alive_s: float = 0.0  # held by a live worker
    busy_s: float = 0.0  # running an op (not hung)
    busy_w: float = 0.0  # busy seconds weighted by the op kind's duty
    pinned_s: float = 0.0  # under a hung op
    fb_mib: float = 0.0  # the most memory a holder used

    def add(self, seconds: float, state: State) -> None:
        if seconds <= 0:
            return
        self.observed_s += seconds
        if state.alive:
            self.alive_s += seconds
            self.fb_mib = max(self.fb_mib, state.fb_mib)
        if state.pinned:
            self.pinned_s += seconds
        elif state.duty is not None:
            self.busy_s += seconds
            self.busy_w += seconds * state.duty

    def duty(self, key: str, t: float) -> float:
        if self.observed_s <= 0:
            return 0.0
        idle = max(0.0, self.alive_s - self.busy_s - self.pinned_s)
        busy = self.busy_w * (1 + JITTER * noise(key, t))
        value = (busy + self.pinned_s * PINNED_DUTY + idle * IDLE_DUTY) / self.observed_s
        return min(1.0, max(0.0, value))

    def busy_fraction(self) -> float:
        if self.observed_s <= 0:
            return 0.0
        return min(1.0, (self.busy_s + self.pinned_s) / self.observed_s)


@dataclass(frozen=True)
class State:
    """A GPU's (or pod's) state at one moment."""

    alive: bool = False  # a live worker holds it
    duty: float | None = None  # running an op of this duty
    pinned: bool = False
    fb_mib: float = 0.0


OFF = State()


def vllm_stats(bucket: Bucket) -> VllmStats | None:
    """What vLLM reports over an interval in which it sampled ``busy_fraction``."""
    if bucket.alive_s <= 0:
        return None
    f = bucket.busy_fraction()
    return VllmStats(
        requests_running=float(round(24 * f)),
        requests_waiting=float(round(8 * f * f)),
        kv_cache_usage=round(0.05 + 0.7 * f, 4),
        generation_tokens_per_s=round(12_000.0 * f, 1),
        ttft_p50_s=round(0.06 + 0.12 * f, 4),
        ttft_p95_s=round(0.2 + 0.45 * f, 4),
    )


# ---------------------------------------------------------------- the demo's metrics


@dataclass
class DemoMetrics:
    """The demo's metric series, and the twins that answer from them."""

    sim: Simulation
    gpus: dict[str, Gpu]
    twin: InMemoryGpuMetrics
    source: InMemoryMetricsSource
    twin_since: float
    last: float  # time accounted for so far
    bucket_end: float  # end of the interval being accumulated
    series: dict[tuple[str, Labels], deque[tuple[float, float]]] = field(default_factory=dict)
    vllm: dict[str, deque[tuple[float, VllmStats]]] = field(default_factory=dict)
    live: dict[str, Bucket] = field(default_factory=dict)
    emitted: int = 0  # scrape intervals emitted (for tests)

    # ------------------------------------------------------------ emitting

    def _append(self, metric: str, labels: Labels, t: float, v: float, twin: bool) -> None:
        buf = self.series.get((metric, labels))
        if buf is None:
            buf = self.series[(metric, labels)] = deque(maxlen=KEPT)
        buf.append((t, v))
        if twin:
            self.twin.add_series(metric, dict(labels), [(t, v)])

    def emit(self, t: float, buckets: dict[str, Bucket], twin: bool = True) -> None:
        """Samples at ``t`` for the interval ending there: every GPU, and every
        sampler pod that had a live holder (into the twin too, unless ``twin`` is
        false: ``rebuild`` then loads them all at once)."""
        for uuid, gpu in self.gpus.items():
            b = buckets.get("gpu:" + uuid) or Bucket(observed_s=SCRAPE_S)
            duty = b.duty(uuid, t)
            labels = gpu_labels(gpu)
            power = round(IDLE_W + (MAX_W - IDLE_W) * duty, 1)
            self._append(gm.GR_ENGINE_ACTIVE, labels, t, round(duty, 4), twin)
            self._append(gm.GPU_UTIL, labels, t, float(round(100 * b.busy_fraction())), twin)
            self._append(gm.FB_USED, labels, t, b.fb_mib, twin)
            self._append(gm.POWER_USAGE, labels, t, power, twin)
        for key, b in buckets.items():
            if key.startswith("pod:"):
                stats = vllm_stats(b)
                if stats is not None:
                    pod = key[4:]
                    buf = self.vllm.setdefault(pod, deque(maxlen=VLLM_KEPT))
                    buf.append((t, stats))
                    if twin:
                        self.twin.set_vllm(pod, t, stats)
        self.emitted += 1

    def rebuild(self, now: float) -> None:
        """A fresh twin from the bounded buffers (drops what fell out of them)."""
        twin = InMemoryGpuMetrics()
        for (metric, labels), buf in self.series.items():
            twin.add_series(metric, dict(labels), list(buf))
        for pod, snaps in self.vllm.items():
            for t, stats in snaps:
                twin.set_vllm(pod, t, stats)
        self.twin = twin
        self.twin_since = now

    # ------------------------------------------------------------ live

    def states(self) -> dict[str, State]:
        """Each GPU's and sampler pod's state now, from the simulation."""
        sim = self.sim
        stuck = sim.scenario_ids.get("stuck")
        out: dict[str, State] = {}
        for node in sim.cluster.nodes:
            for uuid, mid in node.held.items():
                model = sim.models.get(mid)
                if model is None:
                    continue
                for _wid, role, pod, gpu_ids in model.workers:
                    if uuid not in gpu_ids:
                        continue
                    state = live_state(model, role, mid == stuck)
                    out["gpu:" + uuid] = state
                    if role == "sampler" and pod:
                        out["pod:" + pod] = state
        return out

    def tick(self, now: float) -> None:
        if now <= self.last:
            return
        if now - self.last > HISTORY_S:  # paused for hours: start afresh
            self.last = now - SCRAPE_S
            self.bucket_end = math.ceil(self.last / SCRAPE_S) * SCRAPE_S
            self.live.clear()
        states = self.states()
        keys = {"gpu:" + u for u in self.gpus} | set(states)
        t = self.last
        while t < now:
            seg_end = min(now, self.bucket_end)
            for key in keys:
                self.live.setdefault(key, Bucket()).add(seg_end - t, states.get(key, OFF))
            if seg_end >= self.bucket_end:
                self.emit(self.bucket_end, self.live)
                self.live = {}
                self.bucket_end += SCRAPE_S
            t = seg_end
        self.last = now
        if now - self.twin_since >= HISTORY_S:
            self.rebuild(now)

    # ------------------------------------------------------------ raw queries

    def respond(self, call: QueryCall) -> QueryResult:
        """The raw-query field over the demo's series: plain selectors only
        (``metric{label="v", label=~"re"}``), as Prometheus evaluates them."""
        parsed = parse_selector(call.query)
        if parsed is None:
            note = 'the demo answers plain selectors only (metric{label="value"})'
            return QueryResult("matrix" if call.kind == "range" else "vector", (), warnings=(note,))
        metric, matchers = parsed
        chosen = [
            (labels, buf)
            for (m, labels), buf in self.series.items()
            if m == metric and all(match(dict(labels), *mt) for mt in matchers)
        ]
        named: list[tuple[Labels, deque[tuple[float, float]]]] = [
            (tuple(sorted((*labels, ("__name__", metric)))), buf) for labels, buf in chosen
        ]
        if call.kind == "instant":
            at = call.start if call.start is not None else self.last
            vec = [
                Series(labels, (Sample(at, v),))
                for labels, buf in named
                if (v := latest(buf, at)) is not None
            ]
            return QueryResult("vector", tuple(vec))
        assert call.start is not None and call.end is not None and call.step is not None
        times = steps_between(call.start, call.end, call.step)
        mat = []
        for labels, buf in named:
            points = tuple(Sample(t, v) for t in times if (v := latest(buf, t)) is not None)
            if points:
                mat.append(Series(labels, points))
        return QueryResult("matrix", tuple(mat))


def live_state(model: SimModel, role: str, stuck: bool) -> State:
    if model.state not in ("placed", "active") or not model.heartbeats:
        return OFF  # released, or its worker died (lost)
    fb = FB_MIB.get(role, 0.0)
    if stuck and role == "trainer":
        return State(alive=True, pinned=True, fb_mib=fb)
    op = model.current
    if model.phase == "running" and op is not None and (op.kind == "sample") == (role == "sampler"):
        return State(alive=True, duty=duty_of(op.kind), fb_mib=fb)
    return State(alive=True, fb_mib=fb)


def latest(buf: Sequence[tuple[float, float]], at: float) -> float | None:
    """The latest sample at or before ``at`` within the lookback (as Prometheus)."""
    for t, v in reversed(buf):
        if t <= at:
            return v if at - t <= LOOKBACK_S else None
    return None


def steps_between(start: float, end: float, step: float) -> list[float]:
    n = math.floor((end - start) / step + 1e-9)
    return [start + k * step for k in range(n + 1)]


_SELECTOR_RE = re.compile(r"\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(?:\{(.*)\})?\s*")
_MATCHER_RE = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"\s*')


def parse_selector(query: str) -> tuple[str, list[tuple[str, str, str]]] | None:
    m = _SELECTOR_RE.fullmatch(query)
    if m is None:
        return None
    metric, body = m.group(1), m.group(2)
    matchers: list[tuple[str, str, str]] = []
    for part in (body or "").split(","):
        if not part.strip():
            continue
        mm = _MATCHER_RE.fullmatch(part)
        if mm is None:
            return None
        value = re.sub(r"\\(.)", r"\1", mm.group(3))
        matchers.append((mm.group(1), mm.group(2), value))
    return metric, matchers


def match(labels: dict[str, str], name: str, op: str, value: str) -> bool:
    have = labels.get(name, "")
    if op == "=":
        return have == value
    if op == "!=":
        return have != value
    try:
        hit = re.fullmatch(value, have) is not None
    except re.error:
        return False
    return hit if op == "=~" else not hit


# ---------------------------------------------------------------- history


async def read_history(
    store: StateStore, sim: Simulation
) -> tuple[list[PlacementRecord], list[OpRecord], dict[str, WorkerRecord]]:
    """The simulation's placements, ops and workers as written to Redis."""
    mids = list(sim.models)
    pages = await store.pages([PageRequest(ListRef("placements", (m,)), 100) for m in mids])
    pkeys = [(m, p.member) for m, page in zip(mids, pages, strict=True) for p in page.items]
    placements = [p for p in await store.placements(pkeys) if p is not None]
    steps = await store.pages([PageRequest(ListRef("steps", (m,)), 200) for m in mids])
    skeys = [(m, int(p.score)) for m, page in zip(mids, steps, strict=True) for p in page.items]
    op_pages = await store.pages(
        [PageRequest(ListRef("step_ops", (m, str(n))), 100, None, False) for m, n in skeys]
    )
    okeys = [
        (m, p.member) for (m, _), page in zip(skeys, op_pages, strict=True) for p in page.items
    ]
    ops = [o for o in await store.ops(okeys) if o is not None]
    wids = sorted({w[0] for model in sim.models.values() for w in model.workers})
    workers = {w.id: w for w in await store.workers(wids) if w is not None}
    return placements, ops, workers


Buckets = dict[int, dict[str, Bucket]]


def _spread(
    buckets: Buckets,
    key: str,
    lo: float,
    start: float,
    end: float,
    charge: Callable[[Bucket, float], None],
) -> None:
    """Charge each interval ``(lo + k S, lo + (k + 1) S]`` its overlap with
    ``[start, end]`` (clipped at ``lo``)."""
    start = max(start, lo)
    if end <= start:
        return
    k = int((start - lo) // SCRAPE_S)
    while lo + k * SCRAPE_S < end:
        b0 = lo + k * SCRAPE_S
        part = min(end, b0 + SCRAPE_S) - max(start, b0)
        if part > 0:
            charge(buckets.setdefault(k, {}).setdefault(key, Bucket()), part)
        k += 1


def _observe(b: Bucket, part: float) -> None:
    b.observed_s += part


def _alive(fb: float, observed: bool) -> Callable[[Bucket, float], None]:
    def charge(b: Bucket, part: float) -> None:
        if observed:
            b.observed_s += part
        b.alive_s += part
        b.fb_mib = max(b.fb_mib, fb)

    return charge


def _busy(state: State) -> Callable[[Bucket, float], None]:
    def charge(b: Bucket, part: float) -> None:
        if state.pinned:
            b.pinned_s += part
        elif state.duty is not None:
            b.busy_s += part
            b.busy_w += part * state.duty

    return charge


def history_buckets(
    sim: Simulation,
    placements: Iterable[PlacementRecord],
    ops: Iterable[OpRecord],
    workers: dict[str, WorkerRecord],
    now: float,
) -> tuple[float, Buckets]:
    """Per scrape interval (index k: ``(lo + k S, lo + (k + 1) S]``), per GPU
    (``gpu:UUID``) and sampler pod (``pod:NAME``): what the recorded history says
    happened, up to ``now``. Returns ``lo`` and the buckets."""
    lo = math.floor(now / SCRAPE_S) * SCRAPE_S - HISTORY_S
    buckets: Buckets = {}

    def died(wid: str) -> float:
        rec = workers.get(wid)
        if rec is None or rec.last_heartbeat_at is None:
            return math.inf
        if now - rec.last_heartbeat_at <= STALE_S:
            return math.inf
        return rec.last_heartbeat_at + HEARTBEAT_EVERY_S

    # Every GPU is observed all the time (and reports 0 while nobody holds it).
    for node in sim.cluster.nodes:
        for gpu in node.gpus:
            _spread(buckets, "gpu:" + gpu.uuid, lo, lo, now, _observe)
    # Who held which GPU (role, pod), from the placements, until its worker died.
    by_worker: dict[str, tuple[str, str, list[str], str]] = {}
    for model in sim.models.values():
        for wid, role, pod, gpu_ids in model.workers:
            by_worker[wid] = (role, pod, gpu_ids, model.id)
    for p in placements:
        if p.admitted_at is None:
            continue
        released = now if p.released_at is None else p.released_at
        for wid, (role, pod, gpu_ids, mid) in by_worker.items():
            if mid != p.model_id:
                continue
            until = min(released, died(wid), now)
            fb = FB_MIB.get(role, 0.0)
            for uuid in gpu_ids:
                if uuid in p.gpu_ids:
                    _spread(buckets, "gpu:" + uuid, lo, p.admitted_at, until, _alive(fb, False))
            if role == "sampler" and pod:
                _spread(buckets, "pod:" + pod, lo, p.admitted_at, until, _alive(fb, True))
    # Ops: busy on their worker's GPUs while they ran; an op that never finished on a
    # live worker is hung (pinned); on a dead one it ran until the worker died.
    for op in ops:
        if op.started_at is None or op.worker_id not in by_worker or op.worker_id is None:
            continue
        role, pod, gpu_ids, _mid = by_worker[op.worker_id]
        dies = died(op.worker_id)
        if op.finished_at is not None:
            end, state = op.finished_at, State(duty=duty_of(op.kind))
        elif math.isinf(dies):
            end, state = now, State(pinned=True)
        else:
            end, state = dies, State(duty=duty_of(op.kind))
        end = min(end, dies, now)
        keys = ["gpu:" + u for u in gpu_ids]
        if role == "sampler" and pod:
            keys.append("pod:" + pod)
        for key in keys:
            _spread(buckets, key, lo, op.started_at, end, _busy(state))
    return lo, buckets


# ---------------------------------------------------------------- the mirror

_MIRRORS: weakref.WeakKeyDictionary[Simulation, DemoMetrics] = weakref.WeakKeyDictionary()


async def start(sim: Simulation, store: StateStore, now: float) -> DemoMetrics:
    placements, ops, workers = await read_history(store, sim)
    lo, buckets = history_buckets(sim, placements, ops, workers, now)
    gpus = {g.uuid: g for n in sim.cluster.nodes for g in n.gpus}
    demo = DemoMetrics(
        sim=sim,
        gpus=gpus,
        twin=InMemoryGpuMetrics(),
        source=InMemoryMetricsSource(),
        twin_since=now,
        last=now,
        bucket_end=lo,
    )
    demo.source.responder = demo.respond
    last_k = int((now - lo) // SCRAPE_S)
    for k in range(last_k + 1):
        t = lo + (k + 1) * SCRAPE_S
        if t <= now:
            demo.emit(t, buckets.get(k, {}), twin=False)
        else:  # the interval now is in: the live part goes on from here
            demo.live = buckets.get(k, {})
            demo.bucket_end = t
    if demo.bucket_end <= now:
        demo.bucket_end = lo + (last_k + 1) * SCRAPE_S
    demo.rebuild(now)
    return demo


async def mirror_metrics(sim: Simulation, backends: Backends, now: float) -> None:
    """Create the metrics twins on the first call, then keep them in step."""
    demo = _MIRRORS.get(sim)
    if demo is None:
        if backends.metrics is not None and not isinstance(backends.metrics, InMemoryGpuMetrics):
            return  # a real Prometheus is configured: leave it alone
        demo = _MIRRORS[sim] = await start(sim, backends.state, now)
        backends.prometheus = demo.source
        backends.raw_query = RawQuerySettings(raw_query=True)
    else:
        demo.tick(now)
    backends.metrics = demo.twin
