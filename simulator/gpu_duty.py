"""How busy a simulated GPU is: its state, the per-interval buckets, what it reports.

A GPU (or sampler pod) is in a ``State`` at each moment; a ``Bucket`` accumulates the
states of one scrape interval and turns them into the exporter's duty, utilisation and
memory, and vLLM's stats.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

from openrl_inspect.adapters.prometheus import VllmStats
from openrl_inspect.core.domain import HOLDING_STATES
from openrl_inspect.simulator.cluster import Gpu
from openrl_inspect.simulator.sim import SimModel

SCRAPE_S = 15.0
HISTORY_S = 2 * 3600.0
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


def live_state(model: SimModel, role: str, stuck: bool) -> State:
    if model.state not in HOLDING_STATES or not model.heartbeats:
        return OFF  # released, or its worker died (lost)
    if any(wid in model.silent for wid, r, _, _ in model.workers if r == role):
        return OFF  # this role's worker died, or never started
    fb = FB_MIB.get(role, 0.0)
    if stuck and role == "trainer":
        return State(alive=True, pinned=True, fb_mib=fb)
    op = model.current
    if model.phase == "running" and op is not None and (op.kind == "sample") == (role == "sampler"):
        return State(alive=True, duty=duty_of(op.kind), fb_mib=fb)
    return State(alive=True, fb_mib=fb)
