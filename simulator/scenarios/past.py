"""Scenarios whose evidence outlives the pods, as the controllers leave it:

- ``device_taint_evicted``: 90 minutes ago NVIDIA's DRA driver saw Xid 79 on the
  trainer's GPU and a DeviceTaintRule tainted it ``gpu.nvidia.com/xid=79:NoExecute``
  (beside it, a NoSchedule rule draining another node's GPU for maintenance); the device
  taint eviction controller deleted the trainer's pod ("Marking for deletion"), its
  forward_backward failed and the model failed. Today the pods, the Workload and the
  Events are gone from the API server (its Event TTL is an hour): the recorded placement
  names the GPU, the rule still taints it, and Cloud Logging's events log keeps the
  eviction. Top cause EVICTED_BY_DEVICE_TAINT, explaining the failed op and the model.
- ``preempted_readmitted``: 25 minutes ago a higher-priority Workload preempted the
  model's on its node; Kueue re-admitted it five minutes later on another node (the
  preemptor holds the first node's GPUs meanwhile, a node of the family has free GPUs),
  and no step has finished since. The Workload's Evicted and Preempted conditions read
  "Previously: Preempted to accommodate ..." as Kueue resets them on re-admission, and
  its Preempted Event is still in the watch cache. Top cause PREEMPTED (by which
  Workload, when, re-admitted where), explaining STALLED.
- ``oom_chain``: the sampler's container was OOM-killed over and over (7 restarts, exit
  137, limit 64Gi); the trainer's forward_backward at the last kill failed on the lost
  sampler and the model failed. Top cause OOM_KILLED, its statement the chain.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime
from functools import partial
from typing import Any

from openrl_inspect.adapters.kubernetes import NVIDIA_GPU_DRIVER
from openrl_inspect.adapters.logs.memory import event_wire_entry
from openrl_inspect.core.domain import ModelState, OpStatus
from openrl_inspect.simulator.kube_staging import Staging
from openrl_inspect.simulator.kube_twin import NAMESPACE, workload_name
from openrl_inspect.simulator.logs_twin import PROJECT
from openrl_inspect.simulator.scenarios import events as scenario_events
from openrl_inspect.simulator.scenarios import kueue as scenario_kueue
from openrl_inspect.simulator.scenarios import objects as scenario_objects
from openrl_inspect.simulator.scenarios.base import node_of, run_until, stage_kube, staged
from openrl_inspect.simulator.scenarios.pods import OOM_NOTE, XID_TAINT
from openrl_inspect.simulator.sim import SimModel, Simulation

Json = dict[str, Any]
TAINT_CONTROLLER = "device-taint-eviction-controller"
XID_RULE = "gpu-xid-79"
DRAIN_RULE = "drain-maintenance"
PREEMPTOR = "openrl-eval-qwen-72b-9d2m1"
MEMORY_LIMIT = "64Gi"
OOM_RESTARTS = 7
LOST_SAMPLER = "RuntimeError: sampler worker unreachable: connection reset by peer (NCCL rank 1)"
READY = "All pods reached readiness"
# The family's nodes: room for the preempted model's re-admission whatever else ran.
PAST_NODES = ("h100", 2)


def _rule(name: str, node: str, device: str, key: str, value: str, effect: str, at: float) -> Json:
    """A DeviceTaintRule (resource.k8s.io/v1beta2) tainting one device of a pool."""
    return {
        "apiVersion": "resource.k8s.io/v1beta2",
        "kind": "DeviceTaintRule",
        "metadata": {
            "name": name,
            "uid": f"uid-dtr-{name}",
            "creationTimestamp": scenario_objects.iso(at),
            "generation": 1,
        },
        "spec": {
            "deviceSelector": {"driver": NVIDIA_GPU_DRIVER, "pool": node, "device": device},
            "taint": {
                "key": key,
                "value": value,
                "effect": effect,
                "timeAdded": scenario_objects.iso(at),
            },
        },
    }


def _logged(
    at: float,
    kind: str,
    name: str,
    namespace: str | None,
    reason: str,
    note: str,
    *,
    component: str,
    warning: bool = False,
    host: str | None = None,
) -> Json:
    """An entry of Cloud Logging's events log, as GKE's event exporter writes it."""
    return event_wire_entry(
        timestamp=datetime.fromtimestamp(at, tz=UTC), kind=kind, name=name,
        namespace=namespace, reason=reason, message=note,
        event_type="Warning" if warning else "Normal", component=component, host=host,
        insert_id=f"past-{name}-{reason}-{int(at)}".lower(), project=PROJECT,
    )  # fmt: skip


# --- evicted by a device taint, its pods long gone ---------------------------------------


def _device_taint_rules(sim: Simulation, model: SimModel, node: str, index: int, at: float,
                        other: tuple[str, int]) -> Staging:  # fmt: skip
    drain = _rule(
        DRAIN_RULE, other[0], f"gpu-{other[1]}", "example.com/maintenance", "drain",
        "NoSchedule", at - 600,
    )  # fmt: skip
    return Staging((_rule(XID_RULE, node, f"gpu-{index}", XID_TAINT, "79", "NoExecute", at), drain))


def _stage_device_taint(sim: Simulation, sid: str, now: float) -> None:
    model = staged(sim, sid, "device_taint_evicted", now - 9000)
    evicted = now - 5400
    t = run_until(sim, model, evicted - 40, 30)
    node = node_of(sim, model)
    trainer_gpu = model.workers[0][3][0]
    index = next(g.index for g in node.gpus if g.uuid == trainer_gpu)
    # The drain rule: the last GPU of the family's last node, which no staged model takes.
    other = next(n for n in reversed(sim.cluster.nodes) if not n.partitioned)
    trainer_pod, sampler_pod = (w[2] for w in model.workers)
    # The forward_backward running when the pod went: failed with the pod's end.
    oid = sim._id("op")
    sim.rec.op_accepted(model.id, oid, "forward_backward", model.step, sid, at=evicted - 20)
    sim.rec.op_started(model.id, oid, model.workers[0][0], at=evicted - 19)
    sim.rec.op_finished(
        model.id, oid, status=OpStatus.FAILED,
        error="RuntimeError: trainer worker terminated (SIGTERM) during forward_backward",
        at=evicted + 31,
    )  # fmt: skip
    sim.heartbeat(model, evicted)
    sim.finish(model, ModelState.FAILED, evicted + 60, reason="trainer worker terminated")
    model.heartbeats = False
    wl = workload_name(model.id)
    sim.events_log.extend(
        [
            _logged(evicted, "Pod", trainer_pod, NAMESPACE, "DeviceTaintManagerEviction",
                    "Marking for deletion", component=TAINT_CONTROLLER),
            _logged(evicted + 1, "Pod", trainer_pod, NAMESPACE, "Killing",
                    "Stopping container trainer", component="kubelet", host=node.name),
            _logged(evicted + 45, "Workload", wl, NAMESPACE, "Finished",
                    "Job failed: trainer worker terminated", component="kueue-workload-controller"),
            _logged(evicted + 46, "Pod", sampler_pod, NAMESPACE, "Killing",
                    "Stopping container sampler", component="kubelet", host=node.name),
        ]
    )  # fmt: skip
    stage_kube(
        sim, model,
        partial(_device_taint_rules, node=node.name, index=index, at=evicted - 30,
                other=(other.name, other.gpus[-1].index)),
    )  # fmt: skip
    del t


# --- preempted, re-admitted on another node ----------------------------------------------


def _readmitted(sim: Simulation, model: SimModel, at: float, again: float) -> Staging:
    message = scenario_kueue.preemption_message(PREEMPTOR)
    previously = f"Previously: {message}"
    reserved = "Quota reserved in ClusterQueue openrl-cq"
    conditions = [
        scenario_kueue.cond("QuotaReserved", "True", again, "QuotaReserved", reserved),
        scenario_kueue.cond("Admitted", "True", again, "Admitted", "The workload is admitted"),
        scenario_kueue.cond("Evicted", "False", again, "QuotaReserved", previously),
        scenario_kueue.cond("Preempted", "False", again, "QuotaReserved", previously),
        scenario_kueue.cond("Requeued", "True", at + 2, "Preempted", message),
        scenario_kueue.cond("PodsReady", "True", again + 40, "PodsReady", READY),
    ]  # fmt: skip
    status = {"admission": scenario_kueue.admission("h100", 1)}
    status |= scenario_kueue.requeue_state(1, at + 2)
    ref = scenario_events.regarding("Workload", workload_name(model.id), f"uid-wl-{model.id}")
    return Staging(
        (
            scenario_kueue.workload(model.id, model.created_at, conditions, status=status),
            scenario_events.core_event(ref, "Preempted", message, component="kueue-admission",
                                       first=at, warning=False),
            scenario_events.core_event(ref, "EvictedDueToPreempted", message,
                                       component="kueue-workload-controller", first=at + 1,
                                       warning=False),
            scenario_events.core_event(ref, "Admitted", "Admitted by ClusterQueue openrl-cq, "
                                       "wait time since reservation was 0s",
                                       component="kueue-admission", first=again, warning=False),
        )
    )  # fmt: skip


def _stage_preempted(sim: Simulation, sid: str, now: float) -> None:
    model = staged(sim, sid, "preempted_readmitted", now - 5000)
    at, again = now - 1500, now - 1200
    run_until(sim, model, at - 5, 40)
    first = node_of(sim, model)
    # Kueue took the GPUs: OpenRL records the placement released, the model waiting.
    sim.rec.model_state(model.id, ModelState.WAITING, at=at)
    if model.placement_id:
        sim.rec.placement_released(model.id, model.placement_id, at=at)
    sim.cluster.release(model.id)
    # The preemptor holds the first node's GPUs while Kueue re-admits the model: it goes
    # to another node (the family's nodes have room).
    free = first.free()
    for gpu in free:
        first.held[gpu.uuid] = PREEMPTOR
    placed = sim.place(model, again)
    for gpu in free:
        del first.held[gpu.uuid]
    if not placed:
        raise RuntimeError("no room to re-admit the preempted scenario model")
    sim.activate(model, again + 45)
    sim.heartbeat(model, now)
    stage_kube(sim, model, partial(_readmitted, at=at, again=again))


# --- an OOM chain -------------------------------------------------------------------------


def _oom_chain(sim: Simulation, model: SimModel, node: str, last_kill: float) -> Staging:
    placed = model.placed_at or last_kill
    last = scenario_objects.terminated("OOMKilled", 137, last_kill - 40, last_kill)
    sampler = scenario_objects.worker_pod(
        model.id, "sampler", created=placed, node=node, phase="Running",
        conditions=scenario_objects.running_conditions(placed, None, "sampler"),
        statuses=[scenario_objects.container_status(
            "sampler",
            {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 5m0s restarting "
                         "failed container=sampler"}},
            restarts=OOM_RESTARTS, last=last,
        )],
    )  # fmt: skip
    sampler["spec"]["containers"][0]["resources"]["limits"] = {"memory": MEMORY_LIMIT}
    trainer = scenario_objects.worker_pod(
        model.id, "trainer", created=placed, node=node, phase="Running",
        conditions=scenario_objects.running_conditions(placed, placed + 30),
        statuses=[scenario_objects.container_status(
            "trainer", scenario_objects.running(placed + 30), ready=True)],
    )  # fmt: skip
    ref = scenario_events.regarding("Node", node, f"uid-{node}", namespace="")
    oom = scenario_events.core_event(
        ref, "OOMKilling", OOM_NOTE, component="kernel-monitor", host=node, first=last_kill,
        count=OOM_RESTARTS, last=last_kill,
    )  # fmt: skip
    return Staging((sampler, trainer, oom))


def _stage_oom_chain(sim: Simulation, sid: str, now: float) -> None:
    model = staged(sim, sid, "oom_chain", now - 3000)
    t = run_until(sim, model, now - 900, 20)
    node = node_of(sim, model).name
    last_kill = t + 30
    oid = sim._id("op")
    sim.rec.op_accepted(model.id, oid, "forward_backward", model.step, sid, at=t + 1)
    sim.rec.op_started(model.id, oid, model.workers[0][0], at=t + 2)
    sim.rec.op_finished(model.id, oid, status=OpStatus.FAILED, error=LOST_SAMPLER,
                        at=last_kill + 3)  # fmt: skip
    sim.heartbeat(model, last_kill + 3)
    sim.finish(model, ModelState.FAILED, last_kill + 10, reason=f"trainer exited: {LOST_SAMPLER}")
    model.heartbeats = False
    stage_kube(sim, model, partial(_oom_chain, node=node, last_kill=last_kill))


def stage(sim: Simulation, sid: str, now: float) -> None:
    pool, count = PAST_NODES
    sim.cluster.add_nodes(pool, count, random.Random(f"past-nodes-{sim.config.seed}"))
    _stage_device_taint(sim, sid, now)
    _stage_preempted(sim, sid, now)
    _stage_oom_chain(sim, sid, now)
