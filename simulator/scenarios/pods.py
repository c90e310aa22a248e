"""Scenarios in the model's pods and GPUs, as the kubelet, node-problem-detector and
NVIDIA's DRA driver report them:

- ``oom_killed``: the sampler's container was OOM-killed ten minutes ago (exit 137,
  ``lastState.terminated`` OOMKilled) and restarted; the node's kernel-monitor reported
  ``OOMKilling``; the model trains on, and is killed again every 20 minutes live;
- ``crash_loop``: placed twenty minutes ago, the trainer exits 1 on start (a bad LoRA
  config) and the kubelet backs off restarting it (``CrashLoopBackOff``, BackOff
  events); the sampler is up;
- ``image_pull``: the sampler's image tag does not exist (``ImagePullBackOff``);
- ``container_config``: the trainer's container needs a Secret that is not there
  (``CreateContainerConfigError``);
- ``gpu_unhealthy``: the driver tainted the trainer's GPU ``gpu.nvidia.com/xid=79``
  (the GPU fell off the bus) in its node's ResourceSlice. ``NoSchedule``, as the driver
  taints for a fatal Xid: the pod keeps its claim, no new claim gets the GPU.

Models whose workers never came up are ``placed`` in OpenRL, their broken worker
silent (it never heartbeats).
"""

from __future__ import annotations

from functools import partial

from openrl_inspect.simulator.kube_staging import Staging
from openrl_inspect.simulator.kube_twin import NAMESPACE
from openrl_inspect.simulator.scenarios import events as scenario_events
from openrl_inspect.simulator.scenarios import objects as scenario_objects
from openrl_inspect.simulator.scenarios.base import (
    BEFORE_NOW_S,
    go_on,
    hold,
    node_of,
    run_until,
    stage_kube,
    staged,
)
from openrl_inspect.simulator.sim import SimModel, Simulation

XID_TAINT = "gpu.nvidia.com/xid"
OOM_NOTE = (
    "Memory cgroup out of memory: Killed process 48213 (python3) total-vm:1203456780kB, "
    "anon-rss:1068359124kB, file-rss:98304kB, shmem-rss:0kB, UID:0 pgtables:2097152kB "
    "oom_score_adj:999"
)
BAD_CONFIG = "ValueError: LoRA rank 512 exceeds the maximum 256 the trainer supports"
BAD_IMAGE = "us-docker.pkg.dev/openrl-prod/images/sampler:1.5.0-rc1"
MISSING_SECRET = 'secret "openrl-hf-token" not found'
# Sooner than a kill stops counting (``Thresholds.recent_s``, 30 min).
OOM_EVERY_S = 1200.0
RUN_S = 15.0  # how long the crash-looping trainer runs before it exits


def _pod_ref(model: SimModel, role: str) -> scenario_events.Json:
    name = scenario_objects.pod_name(model.id, role)
    return scenario_events.regarding(
        "Pod", name, f"uid-pod-{name}", fieldPath=f"spec.containers{{{role}}}"
    )


def _up(sim: Simulation, model: SimModel, role: str, since: float) -> scenario_objects.Json:
    """A worker pod running and ready since ``since``."""
    placed = model.placed_at or since
    return scenario_objects.worker_pod(
        model.id,
        role,
        created=placed,
        node=sim.node_of(model),
        phase="Running",
        conditions=scenario_objects.running_conditions(placed, since),
        statuses=[
            scenario_objects.container_status(role, scenario_objects.running(since), ready=True)
        ],
    )


def _oom(sim: Simulation, model: SimModel, first: float) -> Staging:
    """Killed at ``first``, and again every ``OOM_EVERY_S`` as the demo runs on (one
    kill long ago, with the model fine since, is no longer a cause)."""
    kills = 1 + max(0, int((sim.now - first) // OOM_EVERY_S))
    killed = first + (kills - 1) * OOM_EVERY_S
    node = sim.node_of(model)
    started = model.active_at or killed
    last = scenario_objects.terminated("OOMKilled", 137, started, killed)
    sampler = scenario_objects.worker_pod(
        model.id,
        "sampler",
        created=model.placed_at or started,
        node=node,
        phase="Running",
        conditions=scenario_objects.running_conditions(model.placed_at or started, killed + 12),
        statuses=[
            scenario_objects.container_status(
                "sampler",
                scenario_objects.running(killed + 2),
                ready=True,
                restarts=kills,
                last=last,
            )
        ],
    )
    ref = scenario_events.regarding("Node", node, f"uid-{node}", namespace="")
    oom = scenario_events.core_event(
        ref,
        "OOMKilling",
        OOM_NOTE,
        component="kernel-monitor",
        host=node,
        first=first,
        last=killed,
        count=kills,
    )  # one event, its count and last time bumped as the kills repeat
    return Staging((sampler, oom))


def crash_restarts(first_exit: float, now: float) -> tuple[int, float]:
    """Restarts by ``now`` of a container that exits ``RUN_S`` after each start, and its
    last exit, under the kubelet's back-off (10 s doubling to 5 min)."""
    restarts, last_exit, delay = 0, first_exit, 10.0
    while last_exit + delay + RUN_S <= now:
        last_exit += delay + RUN_S
        restarts += 1
        delay = min(2 * delay, 300.0)
    return restarts, last_exit


def _crash_loop(sim: Simulation, model: SimModel) -> Staging:
    placed = model.placed_at or sim.now
    first_exit = placed + 20 + RUN_S
    restarts, last_exit = crash_restarts(first_exit, sim.now)
    name = scenario_objects.pod_name(model.id, "trainer")
    pod = f"{name}_{NAMESPACE}(uid-pod-{name})"
    back_off = f"back-off 5m0s restarting failed container=trainer pod={pod}"
    last = scenario_objects.terminated("Error", 1, last_exit - RUN_S, last_exit, BAD_CONFIG)
    trainer = scenario_objects.worker_pod(
        model.id,
        "trainer",
        created=placed,
        node=sim.node_of(model),
        phase="Running",
        conditions=scenario_objects.running_conditions(placed, None, "trainer"),
        statuses=[
            scenario_objects.container_status(
                "trainer",
                {"waiting": {"reason": "CrashLoopBackOff", "message": back_off}},
                restarts=restarts,
                last=last,
            )
        ],
    )
    note = f"Back-off restarting failed container trainer in pod {pod}"
    event = scenario_events.core_event(
        _pod_ref(model, "trainer"),
        "BackOff",
        note,
        component="kubelet",
        host=sim.node_of(model),
        first=first_exit + 1,
        last=last_exit + 1,
        count=max(1, restarts),
    )
    return Staging((trainer, _up(sim, model, "sampler", placed + 40), event))


def _not_starting(
    sim: Simulation, model: SimModel, role: str, waiting: dict[str, str], failed: str
) -> Staging:
    """``role``'s container cannot start (``waiting``: reason, message); the kubelet
    says why (a ``Failed`` event, again every two minutes) and the other worker is up."""
    placed = model.placed_at or sim.now
    other = "sampler" if role == "trainer" else "trainer"
    image = BAD_IMAGE if waiting["reason"] == "ImagePullBackOff" else None
    pod = scenario_objects.worker_pod(
        model.id,
        role,
        created=placed,
        node=sim.node_of(model),
        phase="Pending",
        conditions=scenario_objects.running_conditions(placed, None, role),
        statuses=[scenario_objects.container_status(role, {"waiting": waiting}, image=image)],
        image=image,
    )
    count, last = scenario_events.repeats(placed + 5, 120.0, sim.now)
    event = scenario_events.core_event(
        _pod_ref(model, role),
        "Failed",
        failed,
        component="kubelet",
        host=sim.node_of(model),
        first=placed + 5,
        last=last,
        count=count,
    )
    return Staging((pod, _up(sim, model, other, placed + 40), event))


def _image_pull(sim: Simulation, model: SimModel) -> Staging:
    pulled = (
        f'failed to pull and unpack image "{BAD_IMAGE}": failed to resolve reference '
        f'"{BAD_IMAGE}": {BAD_IMAGE}: not found'
    )
    waiting = {
        "reason": "ImagePullBackOff",
        "message": f'Back-off pulling image "{BAD_IMAGE}": ErrImagePull: rpc error: '
        f"code = NotFound desc = {pulled}",
    }
    failed = f'Failed to pull image "{BAD_IMAGE}": rpc error: code = NotFound desc = {pulled}'
    return _not_starting(sim, model, "sampler", waiting, failed)


def _container_config(sim: Simulation, model: SimModel) -> Staging:
    waiting = {"reason": "CreateContainerConfigError", "message": MISSING_SECRET}
    return _not_starting(sim, model, "trainer", waiting, f"Error: {MISSING_SECRET}")


def _gpu_unhealthy(sim: Simulation, model: SimModel, tainted: float) -> Staging:
    node = node_of(sim, model)
    trainer_gpu = model.workers[0][3][0]
    index = next(g.index for g in node.gpus if g.uuid == trainer_gpu)
    taint = {
        "key": XID_TAINT,
        "value": "79",
        "effect": "NoSchedule",
        "timeAdded": scenario_objects.iso(tainted),
    }
    # The driver republishes the pool with the taint: a new generation.
    created = model.created_at - 86_400
    return Staging(
        (scenario_objects.resource_slice(node, created, generation=2, taints={index: [taint]}),)
    )


def stage(sim: Simulation, sid: str, now: float) -> None:
    oom = staged(sim, sid, "oom_killed", now - 1500)
    t = run_until(sim, oom, now - BEFORE_NOW_S, 20)
    sim.heartbeat(oom, now)
    stage_kube(sim, oom, partial(_oom, first=now - 600))
    go_on(oom, t)

    for name, broken, stage_fn in (
        ("crash_loop", "trainer", _crash_loop),
        ("image_pull", "sampler", _image_pull),
        ("container_config", "trainer", _container_config),
    ):
        model = staged(sim, sid, name, now - 1300)
        hold(sim, model, now - 1200, silent=(broken,))
        sim.heartbeat(model, now)
        stage_kube(sim, model, stage_fn)

    gpu = staged(sim, sid, "gpu_unhealthy", now - 1500)
    t = run_until(sim, gpu, now - BEFORE_NOW_S, 20)
    sim.heartbeat(gpu, now)
    stage_kube(sim, gpu, partial(_gpu_unhealthy, tainted=now - 20))
    go_on(gpu, t)
