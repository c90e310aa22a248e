"""Leases (``coordination.k8s.io/v1``) as leader election sees them: the record, the
store protocol, the conflict, and the wire format (kept apart from the client so the
twin and the RBAC test need no SDK).

``LeaseStore`` is the small async protocol the elector (``openrl_inspect.tracker.leader``) uses:
get, create, and replace guarded by the ``resourceVersion`` read, so two candidates
writing at once cannot both win: the API server answers the later one 409, raised as
``LeaseConflict``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from openrl_inspect.adapters.kubernetes._resources import BACKEND
from openrl_inspect.core.errors import BackendError, BackendProtocolError

COORDINATION_GROUP = "coordination.k8s.io"
#: What the elector asks of the API server (RBAC): (API group, resource, verbs).
LEASE_VERBS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    (COORDINATION_GROUP, "leases", ("get", "create", "update")),
)


class LeaseConflict(BackendError):
    """Someone else wrote the Lease since it was read (HTTP 409): the write lost."""

    code = "LEASE_CONFLICT"


@dataclass(frozen=True, slots=True)
class LeaseRecord:
    """A Lease's spec as leader election uses it; ``holder`` is ``""`` when released."""

    holder: str
    duration_s: int
    acquired_at: datetime | None
    renewed_at: datetime | None
    transitions: int
    resource_version: str = ""


class LeaseStore(Protocol):
    async def get(self, namespace: str, name: str) -> LeaseRecord | None: ...

    async def create(self, namespace: str, name: str, record: LeaseRecord) -> LeaseRecord: ...

    async def replace(self, namespace: str, name: str, record: LeaseRecord) -> LeaseRecord: ...


def _micro(moment: datetime | None) -> str | None:
    # MicroTime: RFC 3339 with microseconds, in UTC.
    return None if moment is None else moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise BackendProtocolError(BACKEND, "a Lease carries a time that is not one") from None


def lease_object(namespace: str, name: str, record: LeaseRecord) -> dict[str, Any]:
    """The Lease as the API server takes it (``resourceVersion`` guards a replace)."""
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if record.resource_version:
        metadata["resourceVersion"] = record.resource_version
    spec: dict[str, Any] = {
        "holderIdentity": record.holder,
        "leaseDurationSeconds": record.duration_s,
        "acquireTime": _micro(record.acquired_at),
        "renewTime": _micro(record.renewed_at),
        "leaseTransitions": record.transitions,
    }
    return {
        "apiVersion": f"{COORDINATION_GROUP}/v1",
        "kind": "Lease",
        "metadata": metadata,
        "spec": {k: v for k, v in spec.items() if v is not None},
    }


def parse_lease(obj: Mapping[str, Any]) -> LeaseRecord:
    spec = obj.get("spec") or {}
    metadata = obj.get("metadata") or {}
    if not isinstance(spec, dict) or not isinstance(metadata, dict):
        raise BackendProtocolError(BACKEND, "a Lease is not an object")
    duration = spec.get("leaseDurationSeconds")
    transitions = spec.get("leaseTransitions")
    return LeaseRecord(
        holder=str(spec.get("holderIdentity") or ""),
        duration_s=duration if isinstance(duration, int) else 0,
        acquired_at=_parse_time(spec.get("acquireTime")),
        renewed_at=_parse_time(spec.get("renewTime")),
        transitions=transitions if isinstance(transitions, int) else 0,
        resource_version=str(metadata.get("resourceVersion") or ""),
    )
