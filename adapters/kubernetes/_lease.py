"""Leases (``coordination.k8s.io/v1``) as leader election sees them: the record, the
store protocol, the conflict, the wire format, and the client.

``LeaseStore`` is the small async protocol the elector (``openrl_inspect.tracker.leader``)
uses: get, create, and replace guarded by the ``resourceVersion`` read, so two candidates
writing at once cannot both win: the API server answers the later one 409, raised as
``LeaseConflict``. ``KubeLeases`` is the store over the official asyncio client's
``CoordinationV1Api`` (raw JSON, an explicit ``_request_timeout`` on every call, SDK
errors translated as everywhere in this adapter); ``memory.MemoryLeases`` is its twin.
Before its first call it asks discovery whether ``coordination.k8s.io/v1`` serves Leases
(the only version it writes): a cluster that does not is told apart from one that is
down.
Importing this module does not import the SDK: ``_api`` loads it when a client opens.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

import orjson
from openrl_inspect.adapters.kubernetes._api import KubeApi, create_api_client, kclient, translate
from openrl_inspect.adapters.kubernetes._discovery import Discovery
from openrl_inspect.adapters.kubernetes._resources import BACKEND, COORDINATION_GROUP, LEASES
from openrl_inspect.adapters.kubernetes._settings import KubernetesSettings
from openrl_inspect.core.backend_calls import timed
from openrl_inspect.core.errors import BackendError, BackendProtocolError, BackendUnavailable


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


class KubeLeases:
    """``LeaseStore`` over ``CoordinationV1Api``; every call bounded by ``timeout_s``.
    With ``discovery``, the first call checks that the cluster serves Leases in v1."""

    def __init__(
        self, api_client: Any, timeout_s: float, discovery: Discovery | None = None
    ) -> None:
        self._client = api_client
        self._api = kclient.CoordinationV1Api(api_client)
        self._timeout = float(timeout_s)
        self._discovery = discovery

    async def get(self, namespace: str, name: str) -> LeaseRecord | None:
        status, body = await self._call(
            "read lease", self._api.read_namespaced_lease_without_preload_content, name, namespace
        )
        if status == 404:
            return None
        return self._record(status, body, "read lease")

    async def create(self, namespace: str, name: str, record: LeaseRecord) -> LeaseRecord:
        call = self._api.create_namespaced_lease_without_preload_content
        body = lease_object(namespace, name, record)
        status, answer = await self._call("create lease", call, namespace, body)
        return self._record(status, answer, "create lease")

    async def replace(self, namespace: str, name: str, record: LeaseRecord) -> LeaseRecord:
        call = self._api.replace_namespaced_lease_without_preload_content
        body = lease_object(namespace, name, record)
        status, answer = await self._call("replace lease", call, name, namespace, body)
        return self._record(status, answer, "replace lease")

    async def _call(self, what: str, call: Any, *args: Any) -> tuple[int, bytes]:
        if self._discovery is not None:
            # NotServed, or ApiVersionUnsupported naming the versions the cluster serves.
            await self._discovery.version(LEASES)
            self._discovery = None
        with timed(BACKEND), translate(what):
            response = await call(*args, _request_timeout=self._timeout)
            try:
                return int(response.status), await response.read()
            finally:
                response.release()

    def _record(self, status: int, body: bytes, what: str) -> LeaseRecord:
        if status == 409:
            raise LeaseConflict(BACKEND, f"{what}: written by someone else first")
        if status in (401, 403):
            raise BackendUnavailable(BACKEND, f"{what}: access denied (HTTP {status})")
        if status not in (200, 201):
            raise BackendUnavailable(BACKEND, f"{what}: the API server answered HTTP {status}")
        try:
            obj = orjson.loads(body)
        except orjson.JSONDecodeError:
            raise BackendProtocolError(BACKEND, f"{what}: the answer is not JSON") from None
        if not isinstance(obj, dict):
            raise BackendProtocolError(BACKEND, f"{what}: the answer is not an object")
        return parse_lease(obj)

    async def aclose(self) -> None:
        await self._client.close()


@contextlib.asynccontextmanager
async def open_leases(settings: KubernetesSettings) -> AsyncIterator[KubeLeases]:
    """A Lease client configured as the watch cache is (in-cluster or a kubeconfig)."""
    api_client, _ = await create_api_client(settings)
    discovery = KubeApi(api_client, settings).discovery
    leases = KubeLeases(api_client, settings.request_timeout_s, discovery)
    try:
        yield leases
    finally:
        await leases.aclose()
