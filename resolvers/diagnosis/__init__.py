"""Diagnosis: from the evidence of every backend to a verdict and ranked causes. Pure.

``diagnose(ModelEvidence) -> Diagnosis``. The caller gathers the evidence (Redis
state; Kubernetes objects with ``why_waiting``'s reasons; DCGM duty; sampler
batches), each backend possibly ``Unknown``; the engine judges, ranks (dead or
failed > lost > stuck > waiting, by stage > slow; then the longest-standing) and cuts
to a budget of about 1,200 tokens. A backend that is ``Unknown`` has no causes and
is listed in ``Diagnosis.unknown``; a healthy model has no cause at all.

Causes (``CauseKind``): what each means; the evidence (facts) it carries.

- MODEL_FAILED: OpenRL marked the model failed. Failure reason, time, latest step.
- OP_FAILED: ops failed in the recent steps. Count, last op, kind, step, error, worker.
- OOM_KILLED: a container was OOM-killed recently. Pod, container, exit code, time,
  restarts, the node's OOM event.
- CRASH_LOOP: a container keeps exiting. Restarts, last exit code, reason, message.
- IMAGE_PULL: its image cannot be pulled. Container, image, reason, message.
- CONTAINER_CONFIG: its container cannot be created. Container, reason, message.
- POD_FAILED: a pod is in phase Failed. Node, containers' exit codes, time.
- WORKER_LOST: a worker stopped heartbeating and none replaced it. Worker, role,
  heartbeat age, pod, node (and whether it is Ready), ops lost with it.
- OPS_LOST: open ops on a silent worker. Count, oldest op, kind, step, workers.
- GPU_UNHEALTHY: a GPU under the model is tainted (DRA device taint). Device, UUID,
  node, taint, rule, since.
- EVICTED_BY_DEVICE_TAINT: a NoExecute device taint evicted a pod of the model (the
  pod may be gone). Pod, role, DeviceTaintRule, device, UUID, node, taint, Xid, time.
- NODE_LOST: a node a current or recent placement ran on is gone or NotReady. Node,
  its Event, time, pods, GPUs.
- OP_STUCK: ops running past the stuck threshold. Count, oldest op, running time.
- STALLED: no step for far longer than usual. Last step, time since, median step.
- NOT_QUEUED: no Kueue Workload (or only finished ones). Message, time waited.
- WORKLOAD_INACTIVE: the Workload is deactivated. Reason, time waited.
- PREEMPTED: Kueue (or the scheduler) preempted it. Reason, preemptor UID, time,
  requeues.
- EVICTED: Kueue or the kubelet evicted it. Reason, time, message, requeues.
- INADMISSIBLE: Kueue cannot admit it (no such queue...). Message, time waited.
- QUOTA: short of quota in its ClusterQueue. Resource, flavor, shortfall, queue
  position and length, time waited.
- ADMISSION_CHECK: quota reserved, admission checks pending. Message, time waited.
- UNSCHEDULABLE: the scheduler cannot place a pod. Nodes that fit of the total, nodes
  rejected per reason, attempts.
- CLAIM_UNALLOCATED: a ResourceClaim is not allocated. The claim, what it requests.
- WAITING_OTHER: pending, gated or starting (the top wait reason only). Message.
- IDLE_RESERVATION: GPUs held while DCGM duty stays low and no op runs. GPUs held,
  mean and max duty, window, held since.
- TRAINER_SLOW: forward_backward / optim_step slower than the model's own baseline.
  Kind, recent and baseline medians, ratio, worker.
- SAMPLER_SLOW: sampler tokens/s below its own baseline. Recent and baseline tok/s,
  queue depth.
- CLIENT_BOUND: workers idle between ops, waiting on the client. Idle share, idle and
  wall time, longest gap and the op it followed.
- PACE_REGRESSION: recent steps slower than the model's earlier steps. Recent and
  baseline median step, ratio.

Causes that outlive their pods (``rules_past``) read the recorded placements and the
Events about their gone pods and Workloads (the watch cache, then Cloud Logging's events
log). A cause can explain another (``roots``): a root is ranked just before its first
effect, its statement the chain, and ``Cause.explained_by``/``explains`` link them.

Every cause has a one-line statement with its numbers, ``since``, up to 8 facts,
refs to the objects involved, and ``next``: a log search around it, the pods and
nodes to open, and a GraphQL query that drills in. Verdicts are the summary's
(FAILED, ENDED, LOST_OPS, STUCK, WAITING, IDLE, STALLED, PROGRESSING) and SLOW.

Modules: ``evidence`` (inputs, ``Thresholds``), ``causes`` (outputs), ``rules_*``
(one family each), ``scheduling`` (the scheduler's message condensed), ``baseline``
and ``pace`` (a model against its own past), ``rank``, ``verdict``, ``budget``,
``lookups`` (queries and log searches), ``text``, ``engine``.
"""

from __future__ import annotations

from openrl_inspect.resolvers.diagnosis.budget import TOKEN_BUDGET, render, tokens
from openrl_inspect.resolvers.diagnosis.causes import (
    Cause,
    CauseLink,
    Diagnosis,
    Fact,
    LogSearch,
    Lookup,
)
from openrl_inspect.resolvers.diagnosis.engine import diagnose
from openrl_inspect.resolvers.diagnosis.evidence import (
    DutyEvidence,
    KubeEvidence,
    ModelEvidence,
    SamplingEvidence,
    StateEvidence,
    Thresholds,
    Unknown,
)

__all__ = [
    "TOKEN_BUDGET",
    "Cause",
    "CauseLink",
    "Diagnosis",
    "DutyEvidence",
    "Fact",
    "KubeEvidence",
    "LogSearch",
    "Lookup",
    "ModelEvidence",
    "SamplingEvidence",
    "StateEvidence",
    "Thresholds",
    "Unknown",
    "diagnose",
    "render",
    "tokens",
]
