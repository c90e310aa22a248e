"""The Lease client: ``LeaseStore`` over the official asyncio client's
``CoordinationV1Api`` (raw JSON, an explicit ``_request_timeout`` on every call, SDK
errors translated as everywhere in this adapter); ``memory.MemoryLeases`` is its twin.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import orjson
from openrl_inspect.adapters.kubernetes._api import create_api_client, kclient, translate
from openrl_inspect.adapters.kubernetes._lease_records import (
    LeaseConflict,
    LeaseRecord,
    lease_object,
    parse_lease,
)
from openrl_inspect.adapters.kubernetes._resources import BACKEND
from openrl_inspect.adapters.kubernetes._settings import KubernetesSettings
from openrl_inspect.core.backend_calls import timed
from openrl_inspect.core.errors import BackendProtocolError, BackendUnavailable


class KubeLeases:
    """``LeaseStore`` over ``CoordinationV1Api``; every call bounded by ``timeout_s``."""

    def __init__(self, api_client: Any, timeout_s: float) -> None:
        self._client = api_client
        self._api = kclient.CoordinationV1Api(api_client)
        self._timeout = float(timeout_s)

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
    leases = KubeLeases(api_client, settings.request_timeout_s)
    try:
        yield leases
    finally:
        await leases.aclose()
