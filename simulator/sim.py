"""The simulation: sessions, models, steps of ops, workers and placements over time.

``populate(now)`` writes a history that ends at ``now`` (tests, benchmarks, and the
demo's first screen); ``advance(now)`` moves the live part forward (the demo). Both
are deterministic for a seed: the same config and the same ``now`` give the same
records. Scenarios that later diagnostics must recognise are staged by
``simulator.scenarios``.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from openrl_inspect.core.domain import HOLDING_STATES, ModelState, OpStatus
from openrl_inspect.recorder import RecorderBase
from openrl_inspect.simulator.cluster import Cluster, Gpu
from openrl_inspect.simulator.parts import (
    DURATIONS,
    FREE_RESERVE_GPUS,
    HEARTBEAT_EVERY_S,
    Periodic,
    SimConfig,
    SimModel,
    SimOp,
    StepShape,
)
from openrl_inspect.simulator.sampler import GEN_RATE, SamplerBatches

__all__ = [
    "DURATIONS",
    "FREE_RESERVE_GPUS",
    "HEARTBEAT_EVERY_S",
    "SimConfig",
    "SimModel",
    "Simulation",
    "StepShape",
]

if TYPE_CHECKING:
    from openrl_inspect.simulator.kube_staging import ClusterStage, KubeStage


class Simulation:
    def __init__(self, config: SimConfig, recorder: RecorderBase) -> None:
        self.config = config
        self.rec = recorder
        self.rng = random.Random(config.seed)
        self.batches = SamplerBatches(recorder, config.seed)
        self.cluster = Cluster(self.rng, dict(config.nodes_per_pool))
        self.models: dict[str, SimModel] = {}
        self.scenario_ids: dict[str, str] = {}  # scenario name -> model id
        # model id -> what Kubernetes shows of it beyond the usual (``kube_staging``)
        self.kube_stages: dict[str, KubeStage] = {}
        # What Kubernetes shows that belongs to no model (``kube_staging``).
        self.cluster_stages: list[ClusterStage] = []
        # Entries GKE's event exporter wrote to Cloud Logging's events log for Events the
        # API server has since dropped (past its TTL): the logs twin appends each once.
        self.events_log: list[dict[str, Any]] = []
        self.now = 0.0  # how far the simulation has been written
        self.sessions: list[str] = []
        self._seq = 0
        self._next_model_at = 0.0
        self._last_heartbeat = 0.0
        self._periodic: list[Periodic] = []

    # -- ids and timings ----------------------------------------------------------------

    def _id(self, prefix: str) -> str:
        self._seq += 1
        return f"{prefix}-{self.config.seed:x}-{self._seq:05d}"

    def duration(self, kind: str) -> float:
        mean, spread = DURATIONS[kind]
        return max(0.01, self.rng.gauss(mean, spread))

    def kinds(self, step: int) -> list[str]:
        n = max(2, self.config.ops_per_step)
        return ["sample", *["forward_backward"] * (n - 2), "optim_step"]

    # -- lifecycle pieces ---------------------------------------------------------------

    def open_session(self, at: float, owner: str | None = None) -> str:
        sid = self._id("sess")
        owner = owner or self.rng.choice(["alice", "bob", "rl-team", "eval-bot"])
        client = {"sdk": "tinker-python", "sdk_version": "0.9.2", "host": f"ws-{owner}"}
        self.rec.session_opened(sid, owner, client, at=at)
        self.sessions.append(sid)
        return sid

    def create_model(self, sid: str, at: float, live: bool = True) -> SimModel:
        mid = self._id("model")
        base = self.rng.choice(["Qwen/Qwen3-8B", "meta-llama/Llama-3.1-8B", "Qwen/Qwen3-30B-A3B"])
        lora = {"rank": self.rng.choice([8, 16, 32]), "alpha": 32, "targets": ["q_proj", "v_proj"]}
        settings = {"learning_rate": 1e-4, "batch_size": self.rng.choice([32, 64, 128])}
        self.rec.model_created(mid, sid, base, lora, settings, at=at)
        model = SimModel(mid, sid, live=live, created_at=at)
        model.end_after_steps = self.rng.randint(40, 160)
        self.models[mid] = model
        return model

    def place(self, model: SimModel, at: float) -> bool:
        got = self.cluster.allocate(model.id, self.config.gpus_per_model)
        if got is None:
            return False
        node, gpus = got
        model.placement_id = self._id("plc")
        trainer = (f"trainer-{model.id}", "trainer", f"openrl-trainer-{model.id}-0")
        sampler = (f"sampler-{model.id}", "sampler", f"openrl-sampler-{model.id}-0")
        half = max(1, len(gpus) // 2)
        model.workers = [
            (trainer[0], trainer[1], trainer[2], [g.uuid for g in gpus[:half]]),
            (sampler[0], sampler[1], sampler[2], [g.uuid for g in gpus[half:]] or []),
        ]
        self.rec.model_state(model.id, ModelState.PLACED, at=at)
        self.rec.placement_admitted(
            model.id,
            model.placement_id,
            workload=f"openrl-{model.id}",
            namespace="openrl",
            pods=[w[2] for w in model.workers],
            node=node.name,
            gpu_ids=[g.uuid for g in gpus],
            at=at,
        )
        self.heartbeat(model, at, node.name)
        model.state = ModelState.PLACED
        model.placed_at = at
        return True

    def node_of(self, model: SimModel) -> str:
        for node in self.cluster.nodes:
            if model.id in node.held.values():
                return node.name
        return ""

    def gpus_of(self, model: SimModel) -> list[Gpu]:
        return [g for n in self.cluster.nodes for g in n.gpus if n.held.get(g.uuid) == model.id]

    def heartbeat(self, model: SimModel, at: float, node: str | None = None) -> None:
        node = node or self.node_of(model)
        for wid, role, pod, gpu_ids in model.workers:
            if wid in model.silent:
                continue
            current = model.current.id if model.current and model.phase == "running" else None
            self.rec.heartbeat(
                wid,
                role,
                pod,
                node,
                model.id,
                gpu_ids,
                {"current_op": current, "step": model.step},
                at=at,
            )

    def activate(self, model: SimModel, at: float) -> None:
        self.rec.model_state(model.id, ModelState.ACTIVE, at=at)
        model.state = ModelState.ACTIVE
        model.active_at = at
        model.next_at = at

    def finish(self, model: SimModel, state: str, at: float, reason: str | None = None) -> None:
        self.rec.model_state(model.id, state, reason=reason, at=at)
        if model.placement_id:
            self.rec.placement_released(model.id, model.placement_id, at=at)
        self.cluster.release(model.id)
        model.state = state

    # -- running ops ----------------------------------------------------------------------

    def run_step(self, model: SimModel, t: float, shape: StepShape | None = None) -> float:
        """Run one whole step of ops from ``t``; returns when it finished."""
        trainer = model.workers[0][0]
        sampler = model.workers[1][0]
        shape = shape or StepShape()
        kinds = self.kinds(model.step)
        if shape.save_every and model.step % shape.save_every == shape.save_every - 1:
            kinds.append("save_weights")
        for kind in kinds:
            oid = self._id("op")
            self.rec.op_accepted(model.id, oid, kind, model.step, session_id=model.session_id, at=t)
            t += self.rng.uniform(0.001, 0.01)
            self.rec.op_enqueued(model.id, oid, at=t)
            t += self.rng.uniform(0.005, 0.25) + shape.queue_s
            self.rec.op_started(model.id, oid, sampler if kind == "sample" else trainer, at=t)
            took = self.duration(kind) * shape.scale.get(kind, 1.0)
            metrics = self.op_metrics(kind, took * shape.sampler_rate)
            if kind == "sample":
                rate = GEN_RATE * shape.sampler_rate
                self.batches.record(model.id, sampler, oid, t, t + took, rate)
            t += took
            self.rec.op_finished(model.id, oid, metrics=metrics, at=t)
            t += shape.pause_after.get(kind, 0.0)
        self.rec.step_metrics(
            model.id, model.step, self.step_metrics(model.step), finished=True, at=t
        )
        model.step += 1
        return t + shape.pause_between_s

    def op_metrics(self, kind: str, took: float) -> dict[str, float]:
        if kind == "sample":
            return {"prompt_tokens": 4096, "generated_tokens": int(12000 * took)}
        if kind == "forward_backward":
            return {"loss": round(self.rng.uniform(0.2, 2.0), 4), "tokens": 65536}
        return {}

    def step_metrics(self, step: int) -> dict[str, float]:
        reward = 0.2 + 0.6 * (1 - 1 / (1 + step / 30)) + self.rng.uniform(-0.05, 0.05)
        return {"reward_mean": round(reward, 4), "kl": round(self.rng.uniform(0.001, 0.02), 5)}

    # -- history ----------------------------------------------------------------------------

    def write_history(self, now: float) -> None:
        """Write a finished-looking history ending at ``now`` (``world.populate`` then
        stages the scenarios and goes live)."""
        cfg = self.config
        step_s = sum(DURATIONS[k][0] + 0.13 for k in self.kinds(0))
        span = step_s * cfg.steps_per_model + 60.0
        for _ in range(cfg.sessions):
            start = now - span - self.rng.uniform(0, 30)
            sid = self.open_session(start)
            for _ in range(cfg.models_per_session):
                t = start + self.rng.uniform(0.5, 20)
                model = self.create_model(sid, t)
                if not self.place(model, t + self.rng.uniform(2, 15)):
                    model.next_at = now  # cluster full: it waits, and retries live
                    continue
                t += 20
                self.activate(model, t)
                for _ in range(cfg.steps_per_model):
                    t = self.run_step(model, t)
                model.next_at = max(t, now)
                self.heartbeat(model, now)

    def go_live(self, now: float) -> None:
        """From ``now`` on, ``advance`` moves the simulation."""
        cfg = self.config
        self.now = now
        self._next_model_at = now + cfg.new_model_every_s
        self._last_heartbeat = now
        for hook in self._periodic:
            hook.due = now + hook.period_s

    def every(self, period_s: float, run: Callable[[float], None]) -> None:
        """Call ``run(now)`` every ``period_s`` once live (a scenario that would fade
        as time passes stages itself again)."""
        self._periodic.append(Periodic(period_s, run, self.now + period_s))

    def free_gpus(self) -> int:
        """Whole GPUs no model holds (a partitioned node's are never handed out whole)."""
        return sum(len(n.free()) for n in self.cluster.nodes if not n.partitioned)

    # -- live ---------------------------------------------------------------------------------

    def advance(self, now: float) -> None:
        """Move live models forward to ``now``: ops, heartbeats, arrivals and ends."""
        cfg = self.config
        self.now = now
        if now >= self._next_model_at:
            if self.free_gpus() >= FREE_RESERVE_GPUS + cfg.gpus_per_model:
                sid = self.sessions[-1] if self.sessions and self.rng.random() < 0.6 else None
                sid = sid or self.open_session(now)
                model = self.create_model(sid, now)
                model.next_at = now + self.rng.uniform(2, 8)
            self._next_model_at = now + self.rng.expovariate(1 / cfg.new_model_every_s)
        for hook in self._periodic:
            if now >= hook.due:
                hook.run(now)
                hook.due = now + hook.period_s
        for model in list(self.models.values()):
            if model.live:
                self._advance_model(model, now)
        if now - self._last_heartbeat >= HEARTBEAT_EVERY_S:
            for model in self.models.values():
                if model.heartbeats and model.state in HOLDING_STATES:
                    self.heartbeat(model, now)
            self._last_heartbeat = now

    def _advance_model(self, model: SimModel, now: float) -> None:
        while model.next_at <= now:
            t = model.next_at
            if model.state == ModelState.WAITING:
                if not self.place(model, t):
                    model.next_at = t + 5.0
                    continue
                model.next_at = t + self.rng.uniform(3, 10)
            elif model.state == ModelState.PLACED:
                self.activate(model, t)
            elif model.state == ModelState.ACTIVE:
                self._op_event(model, t)
            else:
                return

    def _op_event(self, model: SimModel, t: float) -> None:
        trainer, sampler = model.workers[0][0], model.workers[1][0]
        if model.phase == "idle":
            if model.step >= model.end_after_steps:
                failed = self.rng.random() < 0.1
                reason = "trainer exited: CUDA error: an illegal memory access" if failed else None
                self.finish(model, ModelState.FAILED if failed else ModelState.ENDED, t, reason)
                return
            kinds = self.kinds(model.step)
            if model.cycle < len(kinds):
                kind = kinds[model.cycle]
            elif model.step % 10 == 9 and not model.saved:
                kind = "save_weights"  # a checkpoint every ten steps
            else:
                self.rec.step_metrics(
                    model.id, model.step, self.step_metrics(model.step), finished=True, at=t
                )
                model.step += 1
                model.cycle = 0
                model.saved = False
                model.next_at = t + 0.05
                return
            model.current = SimOp(self._id("op"), kind, model.step)
            self.rec.op_accepted(
                model.id, model.current.id, kind, model.step, model.session_id, at=t
            )
            self.rec.op_enqueued(model.id, model.current.id, at=t + 0.002)
            model.phase = "queued"
            model.next_at = t + self.rng.uniform(0.01, 0.3)
        elif model.phase == "queued" and model.current:
            worker = sampler if model.current.kind == "sample" else trainer
            self.rec.op_started(model.id, model.current.id, worker, at=t)
            model.phase = "running"
            model.running_since = t
            model.next_at = t + self.duration(model.current.kind)
        elif model.phase == "running" and model.current:
            kind = model.current.kind
            if kind == "sample":
                self.batches.record(model.id, sampler, model.current.id, model.running_since, t)
            if model.fail_every and model.step % model.fail_every == 0 and model.cycle == 1:
                self.rec.op_finished(
                    model.id, model.current.id, status=OpStatus.FAILED, error=model.fail_error, at=t
                )
            else:
                self.rec.op_finished(
                    model.id, model.current.id, metrics=self.op_metrics(kind, 1.0), at=t
                )
            if kind == "save_weights":
                model.saved = True
            else:
                model.cycle += 1
            model.phase = "idle"
            model.current = None
            model.next_at = t + 0.02
