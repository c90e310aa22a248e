"""Pods and nodes: parsers from the API server's JSON to ``PodRecord`` and ``NodeRecord``.

They take an object as it arrives on the wire and keep only what the inspector shows, so
the watch cache holds small records, never SDK objects. They are tolerant (see
``_json``): a missing optional field becomes ``None``/empty; an object without a name is
skipped (the parser returns ``None``).
"""

from __future__ import annotations

from collections.abc import Mapping

from openrl_inspect.adapters.kubernetes._json import (
    Json,
    as_int,
    as_list,
    as_map,
    as_str,
    conditions,
    meta,
    owner_refs,
    parse_quantity,
    parse_time,
    unique,
)
from openrl_inspect.adapters.kubernetes._records import (
    DEFAULT_LABELS,
    GPU_RESOURCE,
    JOB_CONTROLLER_UID_LABELS,
    JOBSET_UID_LABEL,
    ContainerState,
    LabelKeys,
    NodeRecord,
    PodRecord,
    PodResourceClaim,
    SchedulingFailure,
    Taint,
    Termination,
)


def _termination(detail: Json) -> Termination:
    return Termination(
        reason=as_str(detail, "reason") or None,
        exit_code=as_int(detail.get("exitCode")),
        signal=as_int(detail.get("signal")) or None,  # 0 is "no signal"
        message=as_str(detail, "message") or None,
        started_at=parse_time(detail.get("startedAt")),
        finished_at=parse_time(detail.get("finishedAt")),
    )


def _memory_limits(spec: Json) -> dict[str, str]:
    """Container name -> its memory limit as written (``64Gi``): what an OOM kill hit."""
    out: dict[str, str] = {}
    for field in ("initContainers", "containers"):
        for container in as_list(spec, field):
            name = as_str(container, "name")
            limit = as_map(as_map(container, "resources"), "limits").get("memory")
            if name and isinstance(limit, str | int):
                out[name] = str(limit)[:MAX_LIMIT_CHARS]
    return out


MAX_LIMIT_CHARS = 32


def _container_state(
    status: Json, init: bool, images: Mapping[str, str], limits: Mapping[str, str]
) -> ContainerState:
    state = as_map(status, "state")
    kind, detail = "unknown", {}
    for candidate in ("waiting", "running", "terminated"):
        if candidate in state and isinstance(state[candidate], Mapping):
            kind, detail = candidate, state[candidate]
            break
    name = as_str(status, "name") or ""
    # The kubelet's lastState.terminated: where an OOM kill shows once it has restarted.
    last = as_map(as_map(status, "lastState"), "terminated")
    return ContainerState(
        name=name,
        state=kind,
        init=init,
        ready=status.get("ready") is True,
        restart_count=as_int(status.get("restartCount")) or 0,
        reason=as_str(detail, "reason"),
        message=as_str(detail, "message"),
        exit_code=as_int(detail.get("exitCode")),
        started_at=parse_time(detail.get("startedAt")),
        finished_at=parse_time(detail.get("finishedAt")),
        signal=as_int(detail.get("signal")) or None,
        image=as_str(status, "image") or images.get(name),
        last_termination=_termination(last) if last else None,
        memory_limit=limits.get(name),
    )


def _images(spec: Json) -> dict[str, str]:
    """Container name -> the image its spec names (status may not carry one yet)."""
    out: dict[str, str] = {}
    for field in ("initContainers", "containers"):
        for container in as_list(spec, field):
            name, image = as_str(container, "name"), as_str(container, "image")
            if name and image:
                out[name] = image
    return out


def _gpu_request(spec: Json) -> int:
    total = 0
    for container in as_list(spec, "containers"):
        resources = as_map(container, "resources")
        amount = as_map(resources, "limits").get(GPU_RESOURCE)
        if amount is None:
            amount = as_map(resources, "requests").get(GPU_RESOURCE)
        total += parse_quantity(amount) or 0
    return total


def _pod_claims(spec: Json, status: Json) -> tuple[PodResourceClaim, ...]:
    generated = {
        as_str(item, "name"): as_str(item, "resourceClaimName")
        for item in as_list(status, "resourceClaimStatuses")
    }
    out = []
    for item in as_list(spec, "resourceClaims"):
        name = as_str(item, "name")
        if not name:
            continue
        direct = as_str(item, "resourceClaimName")
        out.append(
            PodResourceClaim(
                name=name,
                claim_name=direct or generated.get(name),
                template_name=as_str(item, "resourceClaimTemplateName"),
            )
        )
    return tuple(out)


def parse_pod(obj: Json, keys: LabelKeys = DEFAULT_LABELS) -> PodRecord | None:
    identity = meta(obj)
    if identity is None:
        return None
    namespace, name, uid, labels = identity
    metadata, spec, status = as_map(obj, "metadata"), as_map(obj, "spec"), as_map(obj, "status")
    pod_conditions = conditions(as_list(status, "conditions"))
    failure = None
    for cond in pod_conditions:
        if cond.type == "PodScheduled" and cond.status == "False":
            failure = SchedulingFailure(cond.reason, cond.message, cond.last_transition)
    images, limits = _images(spec), _memory_limits(spec)
    containers = tuple(
        _container_state(s, True, images, limits) for s in as_list(status, "initContainerStatuses")
    )
    containers += tuple(
        _container_state(s, False, images, limits) for s in as_list(status, "containerStatuses")
    )
    owners = owner_refs(metadata)
    controller = owners[0] if owners and owners[0].controller else None
    job_labels = (labels.get(k) for k in (*JOB_CONTROLLER_UID_LABELS, JOBSET_UID_LABEL))
    job_uids = unique([controller.uid if controller else None, *job_labels])
    return PodRecord(
        namespace=namespace,
        name=name,
        uid=uid,
        phase=as_str(status, "phase"),
        node_name=as_str(spec, "nodeName") or None,
        labels=labels,
        model_id=labels.get(keys.model),
        worker_role=labels.get(keys.role),
        conditions=pod_conditions,
        containers=containers,
        scheduling_failure=failure,
        resource_claims=_pod_claims(spec, status),
        gpu_request=_gpu_request(spec),
        owner_kind=controller.kind if controller else None,
        owner_name=controller.name if controller else None,
        created=parse_time(metadata.get("creationTimestamp")),
        started=parse_time(status.get("startTime")),
        deleting=bool(metadata.get("deletionTimestamp")),
        job_uids=job_uids,
    )


def parse_node(obj: Json) -> NodeRecord | None:
    identity = meta(obj)
    if identity is None:
        return None
    _, name, _, labels = identity
    spec, status = as_map(obj, "spec"), as_map(obj, "status")
    node_conditions = conditions(as_list(status, "conditions"))
    ready = None
    for cond in node_conditions:
        if cond.type == "Ready":
            ready = cond.status == "True"
    taints = tuple(
        Taint(
            key=as_str(t, "key") or "", effect=as_str(t, "effect") or "", value=as_str(t, "value")
        )
        for t in as_list(spec, "taints")
    )
    return NodeRecord(
        name=name,
        labels=labels,
        gpu_allocatable=parse_quantity(as_map(status, "allocatable").get(GPU_RESOURCE)),
        gpu_capacity=parse_quantity(as_map(status, "capacity").get(GPU_RESOURCE)),
        ready=ready,
        unschedulable=spec.get("unschedulable") is True,
        taints=taints,
        conditions=node_conditions,
        created=parse_time(as_map(obj, "metadata").get("creationTimestamp")),
    )
