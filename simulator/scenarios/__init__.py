"""Staged situations the inspector must diagnose, each on a model of its own.

``stage_all(sim, now)`` writes them through the recorder (OpenRL's state, sampler
batches) and registers, per model, what the Kubernetes twin shows beyond the usual
(``Simulation.kube_stages``, see ``kube_staging``); the metrics twin derives DCGM duty
from the ops as for any model. ``sim.scenario_ids`` maps each name to its model id.
The diagnosis's top cause for each (``resolvers.diagnosis``):

================================  =============================  ======================
scenario                          what is staged                 top cause
================================  =============================  ======================
stuck                             an op running 30 min, live     OP_STUCK
lost                              ops on workers silent 10 min   WORKER_LOST (+OPS_LOST)
waiting                           waiting 40 min, no quota       QUOTA
failed                            last op failed: CUDA OOM       OP_FAILED (+MODEL_FAILED)
idle_placement                    GPUs held, no op for 1 h       STALLED (+IDLE_RESERVATION)
worker_lost                       sampler silent 5 min           WORKER_LOST
ops_lost                          op on a worker record gone     OPS_LOST
op_failed                         a bad batch refused, trains on OP_FAILED
model_failed                      trainer died (NCCL), no op     MODEL_FAILED
stalled                           no step for 15 min             STALLED
idle_reservation                  active 40 min, never an op     IDLE_RESERVATION
oom_killed                        sampler OOM-killed, exit 137   OOM_KILLED
crash_loop                        trainer exits 1 on start       CRASH_LOOP
image_pull                        sampler tag not found          IMAGE_PULL
container_config                  trainer's Secret missing       CONTAINER_CONFIG
gpu_unhealthy                     trainer GPU tainted Xid 79     GPU_UNHEALTHY
quota                             6 more GPUs needed             QUOTA
not_queued                        JobSet, no Workload            NOT_QUEUED
preempted                         preempted by higher priority   PREEMPTED
evicted                           PodsReady timeout, requeued    EVICTED
workload_inactive                 deactivated after requeues     WORKLOAD_INACTIVE
inadmissible                      LocalQueue misspelt            INADMISSIBLE
admission_check                   provisioning check pending     ADMISSION_CHECK
unschedulable                     claims of 16 GPUs, nodes of 8  UNSCHEDULABLE
claim_unallocated                 claim template missing         CLAIM_UNALLOCATED
trainer_slow                      forward_backward 2.5x slower   TRAINER_SLOW
sampler_slow                      sampler at 40 % of its tok/s   SAMPLER_SLOW
client_bound                      client thinks 14 s a step      CLIENT_BOUND
pace_regression                   ops queue 3 s longer           PACE_REGRESSION
pod_group_quota                   pod group gated, 16 CPUs short QUOTA
device_taint_evicted              Xid 79 NoExecute rule, pod gone EVICTED_BY_DEVICE_TAINT
preempted_readmitted              preempted, re-admitted elsewhere PREEMPTED (+STALLED)
oom_chain                         sampler OOM x7, trainer op fails OOM_KILLED (+OP_FAILED)
healthy_trainer                   plain steps                    (none)
healthy_sampler_heavy             long samples, usual tok/s      (none)
healthy_checkpointing             save_weights every 5th step    (none)
================================  =============================  ======================

The first five come first, in session ``scenarios``, as they always did (their
records and draws unchanged); then the scenario pool of nodes is added
(``base.SCENARIO_NODES``), so that the others find GPUs whatever the ordinary models
took, and each family (``state``, ``pods``, ``waiting``, ``slow``, ``cluster_shapes``)
stages its own in a session of its own (``scenarios-pods``...); ``cluster_shapes`` also
adds a node of GPUs partitioned into MIG slices, ``past`` two nodes of its own (room
to re-admit a preempted model elsewhere) and entries of Cloud Logging's events log for
Events past the API server's TTL (``Simulation.events_log``). The objects they show are written in
``objects``, ``kueue`` (Workloads in ``kueue.x-k8s.io/v1beta2``) and ``events``.
"""

from __future__ import annotations

from openrl_inspect.simulator.scenarios import cluster_shapes, past, pods, slow, state, waiting
from openrl_inspect.simulator.scenarios.base import add_nodes
from openrl_inspect.simulator.sim import Simulation

__all__ = ["stage_all"]


def stage_all(sim: Simulation, now: float) -> None:
    sid = sim.open_session(now - 7200, owner="scenarios")
    state.stage_original(sim, sid, now)
    add_nodes(sim)
    # A session per family: a session's logs merge at most ten models.
    for family in (state, pods, waiting, slow, cluster_shapes, past):
        owner = f"scenarios-{family.__name__.rsplit('.', 1)[-1]}"
        family.stage(sim, sim.open_session(now - 7200, owner=owner), now)
