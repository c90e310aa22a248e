"""Parsers from the API server's JSON to the adapter's records.

They take an object as it arrives on the wire (a LIST item or a WATCH event's object, a
plain ``dict``) and keep only what the inspector shows, so the watch cache holds small
records, never SDK objects. They are tolerant: a missing optional field becomes
``None``/empty; an object without a name is skipped (the parser returns ``None``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from openrl_inspect.adapters.kubernetes._records import (
    DEFAULT_LABELS,
    GPU_RESOURCE,
    JOB_CONTROLLER_UID_LABELS,
    JOBSET_UID_LABEL,
    Condition,
    ContainerState,
    LabelKeys,
    NodeRecord,
    ObjectKey,
    OwnerRef,
    PodRecord,
    PodResourceClaim,
    SchedulingFailure,
    Taint,
    Termination,
)

Json = Mapping[str, Any]


# --- small JSON helpers ------------------------------------------------------------------


def _map(obj: Any, key: str) -> Json:
    value = obj.get(key) if isinstance(obj, Mapping) else None
    return value if isinstance(value, Mapping) else {}


def _list(obj: Any, key: str) -> Sequence[Any]:
    value = obj.get(key) if isinstance(obj, Mapping) else None
    return value if isinstance(value, list) else ()


def _str(obj: Any, key: str) -> str | None:
    value = obj.get(key) if isinstance(obj, Mapping) else None
    return value if isinstance(value, str) else None


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            return None
    return None


def _str_map(value: Any) -> dict[str, str]:
    if not isinstance(value, Mapping):
        return {}
    return {str(k): str(v) for k, v in value.items()}


def parse_time(value: Any) -> float | None:
    """RFC 3339 (``2026-01-02T03:04:05Z``, optional fraction) to POSIX seconds."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": Decimal(1)}
_DECIMAL.update({"k": Decimal("1e3"), "M": Decimal("1e6"), "G": Decimal("1e9")})
_DECIMAL.update({"T": Decimal("1e12"), "P": Decimal("1e15"), "E": Decimal("1e18")})


def parse_quantity(value: Any) -> int | None:
    """A Kubernetes quantity (``80Gi``, ``8``, ``1.5k``, ``1e3``) rounded down to an int."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if not isinstance(value, str) or not value:
        return None
    text = value.strip()
    try:
        if text[-2:] in _BINARY:
            return int(Decimal(text[:-2]) * _BINARY[text[-2:]])
        if text[-1:] in _DECIMAL and not text[-1:].isdigit():
            return int(Decimal(text[:-1]) * _DECIMAL[text[-1:]])
        return int(Decimal(text))
    except (InvalidOperation, ValueError):
        return None


def _conditions(raw: Sequence[Any]) -> tuple[Condition, ...]:
    out = []
    for item in raw:
        ctype, status = _str(item, "type"), _str(item, "status")
        if ctype is None or status is None:
            continue
        out.append(
            Condition(
                type=ctype,
                status=status,
                reason=_str(item, "reason") or None,
                message=_str(item, "message") or None,
                last_transition=parse_time(item.get("lastTransitionTime")),
            )
        )
    return tuple(out)


def _meta(obj: Json) -> tuple[str, str, str, dict[str, str]] | None:
    meta = _map(obj, "metadata")
    name = _str(meta, "name")
    if not name:
        return None
    return (
        _str(meta, "namespace") or "",
        name,
        _str(meta, "uid") or "",
        _str_map(meta.get("labels")),
    )


def object_key(obj: Json) -> ObjectKey | None:
    """The key of a raw object (used for DELETED events, whatever the kind)."""
    meta = _map(obj, "metadata")
    name = _str(meta, "name")
    return ObjectKey(_str(meta, "namespace") or "", name) if name else None


def resource_version(obj: Json) -> str | None:
    return _str(_map(obj, "metadata"), "resourceVersion")


# --- pods and nodes ----------------------------------------------------------------------


def _termination(detail: Json) -> Termination:
    return Termination(
        reason=_str(detail, "reason") or None,
        exit_code=_int(detail.get("exitCode")),
        signal=_int(detail.get("signal")) or None,  # 0 is "no signal"
        message=_str(detail, "message") or None,
        started_at=parse_time(detail.get("startedAt")),
        finished_at=parse_time(detail.get("finishedAt")),
    )


def _container_state(status: Json, init: bool, images: Mapping[str, str]) -> ContainerState:
    state = _map(status, "state")
    kind, detail = "unknown", {}
    for candidate in ("waiting", "running", "terminated"):
        if candidate in state and isinstance(state[candidate], Mapping):
            kind, detail = candidate, state[candidate]
            break
    name = _str(status, "name") or ""
    # The kubelet's lastState.terminated: where an OOM kill shows once it has restarted.
    last = _map(_map(status, "lastState"), "terminated")
    return ContainerState(
        name=name,
        state=kind,
        init=init,
        ready=status.get("ready") is True,
        restart_count=_int(status.get("restartCount")) or 0,
        reason=_str(detail, "reason"),
        message=_str(detail, "message"),
        exit_code=_int(detail.get("exitCode")),
        started_at=parse_time(detail.get("startedAt")),
        finished_at=parse_time(detail.get("finishedAt")),
        signal=_int(detail.get("signal")) or None,
        image=_str(status, "image") or images.get(name),
        last_termination=_termination(last) if last else None,
    )


def _images(spec: Json) -> dict[str, str]:
    """Container name -> the image its spec names (status may not carry one yet)."""
    out: dict[str, str] = {}
    for field in ("initContainers", "containers"):
        for container in _list(spec, field):
            name, image = _str(container, "name"), _str(container, "image")
            if name and image:
                out[name] = image
    return out


def _gpu_request(spec: Json) -> int:
    total = 0
    for container in _list(spec, "containers"):
        resources = _map(container, "resources")
        amount = _map(resources, "limits").get(GPU_RESOURCE)
        if amount is None:
            amount = _map(resources, "requests").get(GPU_RESOURCE)
        total += parse_quantity(amount) or 0
    return total


def _pod_claims(spec: Json, status: Json) -> tuple[PodResourceClaim, ...]:
    generated = {
        _str(item, "name"): _str(item, "resourceClaimName")
        for item in _list(status, "resourceClaimStatuses")
    }
    out = []
    for item in _list(spec, "resourceClaims"):
        name = _str(item, "name")
        if not name:
            continue
        direct = _str(item, "resourceClaimName")
        out.append(
            PodResourceClaim(
                name=name,
                claim_name=direct or generated.get(name),
                template_name=_str(item, "resourceClaimTemplateName"),
            )
        )
    return tuple(out)


def owner_refs(metadata: Json) -> tuple[OwnerRef, ...]:
    """``metadata.ownerReferences``, the controlling owner first."""
    refs = []
    for ref in _list(metadata, "ownerReferences"):
        kind, name, uid = _str(ref, "kind"), _str(ref, "name"), _str(ref, "uid")
        if kind and name and uid:
            refs.append(OwnerRef(kind, name, uid, controller=ref.get("controller") is True))
    return tuple(sorted(refs, key=lambda r: not r.controller))


def _unique(values: Sequence[str | None]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(v for v in values if v))


def parse_pod(obj: Json, keys: LabelKeys = DEFAULT_LABELS) -> PodRecord | None:
    meta = _meta(obj)
    if meta is None:
        return None
    namespace, name, uid, labels = meta
    metadata, spec, status = _map(obj, "metadata"), _map(obj, "spec"), _map(obj, "status")
    conditions = _conditions(_list(status, "conditions"))
    failure = None
    for cond in conditions:
        if cond.type == "PodScheduled" and cond.status == "False":
            failure = SchedulingFailure(cond.reason, cond.message, cond.last_transition)
    images = _images(spec)
    containers = tuple(
        _container_state(s, True, images) for s in _list(status, "initContainerStatuses")
    )
    containers += tuple(
        _container_state(s, False, images) for s in _list(status, "containerStatuses")
    )
    owners = owner_refs(metadata)
    controller = owners[0] if owners and owners[0].controller else None
    job_labels = (labels.get(k) for k in (*JOB_CONTROLLER_UID_LABELS, JOBSET_UID_LABEL))
    job_uids = _unique([controller.uid if controller else None, *job_labels])
    return PodRecord(
        namespace=namespace,
        name=name,
        uid=uid,
        phase=_str(status, "phase"),
        node_name=_str(spec, "nodeName") or None,
        labels=labels,
        model_id=labels.get(keys.model),
        worker_role=labels.get(keys.role),
        conditions=conditions,
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
    meta = _meta(obj)
    if meta is None:
        return None
    _, name, _, labels = meta
    spec, status = _map(obj, "spec"), _map(obj, "status")
    conditions = _conditions(_list(status, "conditions"))
    ready = None
    for cond in conditions:
        if cond.type == "Ready":
            ready = cond.status == "True"
    taints = tuple(
        Taint(key=_str(t, "key") or "", effect=_str(t, "effect") or "", value=_str(t, "value"))
        for t in _list(spec, "taints")
    )
    return NodeRecord(
        name=name,
        labels=labels,
        gpu_allocatable=parse_quantity(_map(status, "allocatable").get(GPU_RESOURCE)),
        gpu_capacity=parse_quantity(_map(status, "capacity").get(GPU_RESOURCE)),
        ready=ready,
        unschedulable=spec.get("unschedulable") is True,
        taints=taints,
        conditions=conditions,
        created=parse_time(_map(obj, "metadata").get("creationTimestamp")),
    )
