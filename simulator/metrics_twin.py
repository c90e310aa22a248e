"""The simulated cluster's GPU and vLLM metrics, kept in the in-memory metrics twins.

``start(sim, store, now)`` builds the ``DemoMetrics``: an ``InMemoryGpuMetrics``
(``twin``) and an ``InMemoryMetricsSource`` for the raw-query field (``source``; the
demo enables the raw query, as it only reads the demo's own series), which the demo's
wiring (``openrl_inspect.cli.demo``) puts in the backends; ``tick(now)`` then appends,
every scrape interval, what a DCGM exporter and vLLM
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
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

from openrl_inspect.adapters import prometheus
from openrl_inspect.adapters.prometheus import (
    QueryResult,
    Sample,
    Series,
    VllmStats,
)
from openrl_inspect.adapters.prometheus.memory import (
    InMemoryGpuMetrics,
    InMemoryMetricsSource,
    QueryCall,
)
from openrl_inspect.adapters.redis import StateStore
from openrl_inspect.simulator.cluster import Gpu
from openrl_inspect.simulator.gpu_duty import (
    FB_MIB,
    HISTORY_S,
    IDLE_DUTY,
    JITTER,
    KIND_DUTY,
    OFF,
    OTHER_DUTY,
    PINNED_DUTY,
    SCRAPE_S,
    Bucket,
    Labels,
    State,
    duty_of,
    gpu_labels,
    live_state,
    noise,
    vllm_stats,
)
from openrl_inspect.simulator.metrics_history import history_buckets, read_history
from openrl_inspect.simulator.sim import Simulation

__all__ = [
    "FB_MIB",
    "HISTORY_S",
    "IDLE_DUTY",
    "JITTER",
    "KEPT",
    "KIND_DUTY",
    "OFF",
    "OTHER_DUTY",
    "PINNED_DUTY",
    "SCRAPE_S",
    "Bucket",
    "DemoMetrics",
    "Labels",
    "State",
    "duty_of",
    "gpu_labels",
    "history_buckets",
    "live_state",
    "noise",
    "read_history",
    "start",
    "vllm_stats",
]

KEPT = int(HISTORY_S // SCRAPE_S)
VLLM_KEPT = 40  # ten minutes of vLLM snapshots per pod
IDLE_W, MAX_W = 70.0, 700.0
LOOKBACK_S = prometheus.LOOKBACK_S


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
            self._append(prometheus.GR_ENGINE_ACTIVE, labels, t, round(duty, 4), twin)
            self._append(
                prometheus.GPU_UTIL, labels, t, float(round(100 * b.busy_fraction())), twin
            )
            self._append(prometheus.FB_USED, labels, t, b.fb_mib, twin)
            self._append(prometheus.POWER_USAGE, labels, t, power, twin)
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


# ---------------------------------------------------------------- the mirror


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
