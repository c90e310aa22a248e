"""The vocabulary: lifecycle states, op status and health, verdicts and wait kinds.

One source of truth for every layer: the recorder writes these values, the state
records decode them, the resolvers judge with them and the schema exposes them
(Strawberry enums wrap these classes; a test checks that each GraphQL enum and its
domain enum agree). A string of one of these vocabularies written anywhere else is a
copy that will drift.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final


class ModelState(StrEnum):
    """Lifecycle of a model (a LoRA training run), as OpenRL records it."""

    WAITING = "waiting"  # created, waiting for GPUs (queued by Kueue)
    PLACED = "placed"  # admitted and placed, workers starting
    ACTIVE = "active"  # workers running ops
    FAILED = "failed"
    ENDED = "ended"


#: States a model leaves no more.
TERMINAL_STATES: Final = frozenset({ModelState.FAILED, ModelState.ENDED})
#: States of a model not running yet: it waits for GPUs or for its workers.
WAITING_STATES: Final = frozenset({ModelState.WAITING, ModelState.PLACED})
#: States of a model that holds GPUs.
HOLDING_STATES: Final = frozenset({ModelState.PLACED, ModelState.ACTIVE})


class SessionState(StrEnum):
    LIVE = "live"
    CLOSED = "closed"


class OpStatus(StrEnum):
    """What OpenRL recorded of an op."""

    ACCEPTED = "accepted"
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"


class OpHealth(StrEnum):
    """What became of an op, judged from its record and its worker's heartbeat."""

    DONE = "DONE"
    PENDING = "PENDING"
    RUNNING = "RUNNING"
    STUCK = "STUCK"  # running for too long on a live worker
    LOST = "LOST"  # started on a worker that stopped heartbeating; nobody will finish it


class Verdict(StrEnum):
    """A model's condition, most serious first."""

    FAILED = "FAILED"
    LOST_OPS = "LOST_OPS"
    STUCK = "STUCK"
    STALLED = "STALLED"
    WAITING = "WAITING"
    IDLE = "IDLE"
    SLOW = "SLOW"  # progressing, but slower than its own past or held back (diagnosis)
    PROGRESSING = "PROGRESSING"
    ENDED = "ENDED"


class WaitKind(StrEnum):
    """What kind of cause a reason for waiting is, in the order GPUs are reached."""

    NO_WORKLOAD = "NO_WORKLOAD"
    WORKLOAD_FINISHED = "WORKLOAD_FINISHED"
    WORKLOAD_INACTIVE = "WORKLOAD_INACTIVE"
    EVICTED = "EVICTED"
    PREEMPTED = "PREEMPTED"
    INADMISSIBLE = "INADMISSIBLE"
    QUOTA = "QUOTA"
    PENDING = "PENDING"
    REQUEUED = "REQUEUED"
    ADMISSION_CHECK = "ADMISSION_CHECK"
    NO_PODS = "NO_PODS"
    POD_GATED = "POD_GATED"
    UNSCHEDULABLE = "UNSCHEDULABLE"
    CLAIM_UNALLOCATED = "CLAIM_UNALLOCATED"
    CONTAINER_ERROR = "CONTAINER_ERROR"
    POD_FAILED = "POD_FAILED"
    CONTAINER_WAITING = "CONTAINER_WAITING"
    NO_WORKLOAD_FOR_PODS = "NO_WORKLOAD_FOR_PODS"
    NOTHING_FOUND = "NOTHING_FOUND"


class GpuHealth(StrEnum):
    """A GPU's health as the cluster reports it (DRA device taints)."""

    HEALTHY = "HEALTHY"
    UNHEALTHY = "UNHEALTHY"  # a NoSchedule/NoExecute taint keeps claims off it


class CauseKind(StrEnum):
    """What a diagnosed cause is: why a model is slow, stuck, waiting or dead."""

    # Waiting for GPUs: Kueue, the scheduler, DRA.
    NOT_QUEUED = "NOT_QUEUED"  # no Workload for the model's job
    WORKLOAD_INACTIVE = "WORKLOAD_INACTIVE"
    QUOTA = "QUOTA"
    INADMISSIBLE = "INADMISSIBLE"
    ADMISSION_CHECK = "ADMISSION_CHECK"
    PREEMPTED = "PREEMPTED"
    EVICTED = "EVICTED"
    UNSCHEDULABLE = "UNSCHEDULABLE"
    CLAIM_UNALLOCATED = "CLAIM_UNALLOCATED"
    WAITING_OTHER = "WAITING_OTHER"  # pending, gated, starting: the top wait reason
    # Containers and pods.
    OOM_KILLED = "OOM_KILLED"
    CRASH_LOOP = "CRASH_LOOP"
    IMAGE_PULL = "IMAGE_PULL"
    CONTAINER_CONFIG = "CONTAINER_CONFIG"
    POD_FAILED = "POD_FAILED"
    GPU_UNHEALTHY = "GPU_UNHEALTHY"
    # What outlives the pods: a NoExecute device taint's eviction, a lost node.
    EVICTED_BY_DEVICE_TAINT = "EVICTED_BY_DEVICE_TAINT"
    NODE_LOST = "NODE_LOST"
    # OpenRL's own state.
    MODEL_FAILED = "MODEL_FAILED"
    WORKER_LOST = "WORKER_LOST"
    OPS_LOST = "OPS_LOST"
    OP_STUCK = "OP_STUCK"
    OP_FAILED = "OP_FAILED"
    STALLED = "STALLED"
    # Slow rather than stopped.
    IDLE_RESERVATION = "IDLE_RESERVATION"
    SAMPLER_SLOW = "SAMPLER_SLOW"
    TRAINER_SLOW = "TRAINER_SLOW"
    CLIENT_BOUND = "CLIENT_BOUND"
    PACE_REGRESSION = "PACE_REGRESSION"


class TimelineSource(StrEnum):
    """Where a timeline entry comes from."""

    REDIS = "REDIS"  # OpenRL's own record: states, steps, ops, workers, placements
    KUBERNETES = "KUBERNETES"  # Workload conditions and Events (watch cache, events log)
    PROMETHEUS = "PROMETHEUS"  # DCGM duty: idle spans on the model's GPUs
    CLOUD_LOGGING = "CLOUD_LOGGING"  # the first ERROR or CRITICAL line of each message


class TimelineKind(StrEnum):
    """What a timeline entry records."""

    STATE = "STATE"  # the model entered a state
    FIRST_STEP = "FIRST_STEP"
    LAST_STEP = "LAST_STEP"
    OP_FAILED = "OP_FAILED"
    WORKER_LOST = "WORKER_LOST"  # a worker's last heartbeat, and none since
    WORKER_BACK = "WORKER_BACK"  # a worker (re)started
    PLACEMENT_ADMITTED = "PLACEMENT_ADMITTED"
    PLACEMENT_RELEASED = "PLACEMENT_RELEASED"
    WORKLOAD_CONDITION = "WORKLOAD_CONDITION"  # QuotaReserved, Admitted, Evicted, ...
    POD_EVENT = "POD_EVENT"  # scheduled, started, killed, OOMKilled, BackOff, evicted
    WORKLOAD_EVENT = "WORKLOAD_EVENT"
    NODE_EVENT = "NODE_EVENT"
    DEVICE_TAINT = "DEVICE_TAINT"  # a GPU of the model tainted (DRA, DeviceTaintRule)
    GPU_IDLE = "GPU_IDLE"  # DCGM duty under the idle threshold for minutes
    LOG_ERROR = "LOG_ERROR"  # the first ERROR or CRITICAL line of a distinct message
