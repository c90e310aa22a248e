"""The adapter's only door to the API server: paged LISTs and WATCH streams.

It drives the official asyncio client (``kubernetes.aio``), asking each generated
``list_*`` call for its raw response (``*_without_preload_content``) so every kind,
typed or custom (Kueue), arrives as the same plain JSON the parsers read. Every call has
an explicit ``_request_timeout``; every call is counted by verb and kind; SDK and
transport exceptions are translated here into ``adapters.errors`` classes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson
from openrl_inspect.adapters.kubernetes._resources import (
    BACKEND,
    DEVICE_TAINT_RULES,
    EVENTS,
    JOBS,
    JOBSET_GROUP,
    KUEUE_GROUP,
    NODES,
    PODS,
    RESOURCE_SLICES,
    WatchedResource,
)
from openrl_inspect.adapters.kubernetes._settings import DRA_VERSIONS, KubernetesSettings
from openrl_inspect.core import lazy
from openrl_inspect.core.backend_calls import timed
from openrl_inspect.core.errors import (
    BackendError,
    BackendProtocolError,
    BackendTimeout,
    BackendUnavailable,
)

log = logging.getLogger(__name__)


# The SDK is only partly annotated (untyped functions, ``Any`` results): it is used as
# ``Any`` here, at the one boundary, and nothing typed from it leaves this module.
# The SDK (about a second to import) loads when a Kubernetes source opens.
if TYPE_CHECKING:
    import aiohttp
else:
    aiohttp = lazy.module("aiohttp")
kclient: Any = lazy.module("kubernetes.aio.client")
kconfig: Any = lazy.module("kubernetes.aio.config")


_DRA_APIS: dict[str, str] = {
    "v1": "ResourceV1Api",
    "v1beta2": "ResourceV1beta2Api",
    "v1beta1": "ResourceV1beta1Api",
}
# DeviceTaintRules: v1alpha3 from 1.33, beta then GA later; newest first. Independent of
# the slices' version: a cluster serving ResourceSlices in v1 may serve rules only in
# v1alpha3 (or not at all), so discovery asks each version's resource list.
_TAINT_RULE_APIS: dict[str, str] = {
    "v1": "ResourceV1Api",
    "v1beta2": "ResourceV1beta2Api",
    "v1alpha3": "ResourceV1alpha3Api",
}


class ResourceExpired(BackendUnavailable):
    """HTTP 410 Gone: a resourceVersion or continue token is too old; relist."""


class NotServed(BackendUnavailable):
    """HTTP 404 on a collection: the API group is not installed (no Kueue, no DRA)."""


@dataclass(frozen=True, slots=True)
class ListPage:
    items: list[Mapping[str, Any]]
    resource_version: str
    continue_token: str | None


async def create_api_client(settings: KubernetesSettings) -> tuple[Any, Any]:
    """An ``ApiClient`` configured in-cluster or from a kubeconfig (and its loader)."""
    config = kclient.Configuration()
    loader = None
    try:
        if settings.in_cluster:
            kconfig.load_incluster_config(client_configuration=config)
        else:
            loader = await kconfig.load_kube_config(
                config_file=settings.kubeconfig,
                context=settings.context,
                client_configuration=config,
                persist_config=False,
            )
    except Exception as exc:  # YAML, missing files, exec plugins: all mean "cannot configure"
        raise BackendUnavailable(BACKEND, "the client configuration could not be loaded") from exc
    api_client = kclient.ApiClient(configuration=config)
    api_client.user_agent = "openrl-inspect"
    return api_client, loader


@contextlib.contextmanager
def translate(what: str) -> Iterator[None]:
    """Turn transport and SDK exceptions into ``adapters.errors`` classes."""
    try:
        yield
    except BackendError:
        raise
    except TimeoutError as exc:
        raise BackendTimeout(BACKEND, f"{what}: the API server did not answer in time") from exc
    except (aiohttp.ClientError, ConnectionError) as exc:
        raise BackendUnavailable(BACKEND, f"{what}: the API server cannot be reached") from exc
    except (kclient.exceptions.OpenApiException, ValueError) as exc:
        raise BackendProtocolError(BACKEND, f"{what}: the answer could not be understood") from exc


def check_status(status: int, what: str) -> None:
    if status == 200:
        return
    if status == 410:
        raise ResourceExpired(BACKEND, f"{what}: resource version expired")
    if status == 404:
        raise NotServed(BACKEND, f"{what}: not served by this cluster")
    if status in (401, 403):
        raise BackendUnavailable(BACKEND, f"{what}: access denied (HTTP {status})")
    if status == 429 or status >= 500:
        raise BackendUnavailable(BACKEND, f"{what}: the API server answered HTTP {status}")
    raise BackendProtocolError(BACKEND, f"{what}: unexpected HTTP {status}")


class WatchStream:
    """Newline-delimited watch events from one open WATCH response."""

    def __init__(self, response: aiohttp.ClientResponse, what: str) -> None:
        self._response = response
        self._what = what

    async def next(self) -> Mapping[str, Any] | None:
        """The next event, or ``None`` when the server closed the watch."""
        with translate(self._what):
            while True:
                line = await self._response.content.readline()
                if not line:
                    return None
                if line.strip():
                    event = orjson.loads(line)
                    if not isinstance(event, dict):
                        raise BackendProtocolError(BACKEND, f"{self._what}: malformed event")
                    return event


class KubeApi:
    """Paged LIST and WATCH for the watched resources, counted per (verb, kind)."""

    def __init__(self, api_client: Any, settings: KubernetesSettings) -> None:
        self.client = api_client
        self.settings = settings
        self.counts: Counter[tuple[str, str]] = Counter()
        self._core: Any = kclient.CoreV1Api(api_client)
        self._custom: Any = kclient.CustomObjectsApi(api_client)
        # Custom resources (CRDs), by group: the version each is read at.
        self._custom_versions = {
            KUEUE_GROUP: settings.kueue_version,
            JOBSET_GROUP: settings.jobset_version,
        }
        self._dra_version: str | None = (
            None if settings.dra_version == "auto" else settings.dra_version
        )
        self._discovery_lock = asyncio.Lock()
        self._taint_rule_version: str | None = None

    async def aclose(self) -> None:
        await self.client.close()

    async def dra_version(self) -> str:
        """The ``resource.k8s.io`` version to use: configured, or the newest served."""
        async with self._discovery_lock:
            if self._dra_version is None:
                await self._discover_dra_version()
        assert self._dra_version is not None
        return self._dra_version

    async def _discover_dra_version(self) -> None:
        api = kclient.ResourceApi(self.client)
        self.counts["get", "discovery"] += 1
        what = "discovery of resource.k8s.io"
        with translate(what):
            response = await api.get_api_group_without_preload_content(
                _request_timeout=float(self.settings.request_timeout_s)
            )
            try:
                if response.status == 404:  # DRA not installed: lists will say so too
                    self._dra_version = DRA_VERSIONS[0]
                    return
                check_status(response.status, what)
                body = orjson.loads(await response.read())
            finally:
                response.release()
        versions = body.get("versions") if isinstance(body, dict) else None
        served = {v.get("version") for v in versions or [] if isinstance(v, dict)}
        self._dra_version = next((v for v in DRA_VERSIONS if v in served), DRA_VERSIONS[0])

    async def taint_rule_version(self) -> str:
        """The newest ``resource.k8s.io`` version serving devicetaintrules; ``NotServed``
        when none does (asked again next time: a feature gate may be turned on)."""
        async with self._discovery_lock:
            if self._taint_rule_version is None:
                self._taint_rule_version = await self._discover_taint_rule_version()
        return self._taint_rule_version

    async def _discover_taint_rule_version(self) -> str:
        what = "discovery of devicetaintrules"
        for version, api_name in _TAINT_RULE_APIS.items():
            api = getattr(kclient, api_name)(self.client)
            self.counts["get", "discovery"] += 1
            with translate(what):
                response = await api.get_api_resources_without_preload_content(
                    _request_timeout=float(self.settings.request_timeout_s)
                )
                try:
                    if response.status == 404:
                        continue
                    check_status(response.status, what)
                    body = orjson.loads(await response.read())
                finally:
                    response.release()
            resources = body.get("resources") if isinstance(body, dict) else None
            names = {r.get("name") for r in resources or [] if isinstance(r, dict)}
            if DEVICE_TAINT_RULES.resource in names:
                return version
        raise NotServed(BACKEND, f"{what}: not served by this cluster")

    def _check(self, resource: WatchedResource, status: int, what: str) -> None:
        if status == 404 and resource is DEVICE_TAINT_RULES:
            self._taint_rule_version = None  # served no more (a downgrade): discover again
        check_status(status, what)

    async def _request(
        self, resource: WatchedResource, namespace: str | None, params: dict[str, Any]
    ) -> aiohttp.ClientResponse:
        """Call the generated ``list_*`` for ``resource``; the raw response, unread."""
        ns = namespace if resource.namespaced else None
        args: tuple[str, ...] = (ns,) if ns else ()
        call: Any
        if resource is PODS:
            core = self._core
            call = (
                core.list_namespaced_pod_without_preload_content
                if ns
                else core.list_pod_for_all_namespaces_without_preload_content
            )
        elif resource is NODES:
            call = self._core.list_node_without_preload_content
        elif resource is JOBS:
            batch = kclient.BatchV1Api(self.client)
            call = (
                batch.list_namespaced_job_without_preload_content
                if ns
                else batch.list_job_for_all_namespaces_without_preload_content
            )
        elif resource is EVENTS:
            events = kclient.EventsV1Api(self.client)
            call = (
                events.list_namespaced_event_without_preload_content
                if ns
                else events.list_event_for_all_namespaces_without_preload_content
            )
        elif resource.group in self._custom_versions:
            custom = self._custom
            gv = (resource.group, self._custom_versions[resource.group])
            args = (*gv, *args, resource.resource)
            call = (
                custom.list_namespaced_custom_object_without_preload_content
                if ns
                else custom.list_custom_object_for_all_namespaces_without_preload_content
            )
        elif resource is DEVICE_TAINT_RULES:
            api_name = _TAINT_RULE_APIS[await self.taint_rule_version()]
            rules = getattr(kclient, api_name)(self.client)
            call = rules.list_device_taint_rule_without_preload_content
        else:
            dra = getattr(kclient, _DRA_APIS[await self.dra_version()])(self.client)
            if resource is RESOURCE_SLICES:
                call = dra.list_resource_slice_without_preload_content
            elif ns:
                call = dra.list_namespaced_resource_claim_without_preload_content
            else:
                call = dra.list_resource_claim_for_all_namespaces_without_preload_content
        response: aiohttp.ClientResponse = await call(*args, **params)
        return response

    async def list_page(
        self,
        resource: WatchedResource,
        namespace: str | None,
        *,
        limit: int,
        continue_token: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> ListPage:
        """One page of a LIST (a consistent snapshot across pages via ``continue``)."""
        params: dict[str, Any] = {
            "limit": limit,
            "_continue": continue_token,
            "label_selector": label_selector,
            "field_selector": field_selector,
            "_request_timeout": float(self.settings.request_timeout_s),
        }
        what = f"list {resource.kind}"
        self.counts["list", resource.kind] += 1
        with timed(BACKEND), translate(what):
            response = await self._request(resource, namespace, params)
            try:
                self._check(resource, response.status, what)
                body = orjson.loads(await response.read())
            finally:
                response.release()
        if not isinstance(body, dict) or not isinstance(body.get("items"), list | None):
            raise BackendProtocolError(BACKEND, f"{what}: the answer is not a list")
        metadata = body.get("metadata") or {}
        return ListPage(
            items=[item for item in body.get("items") or [] if isinstance(item, dict)],
            resource_version=str(metadata.get("resourceVersion") or ""),
            continue_token=metadata.get("continue") or None,
        )

    @contextlib.asynccontextmanager
    async def watch(
        self,
        resource: WatchedResource,
        namespace: str | None,
        resource_version: str,
        timeout_s: int,
    ) -> AsyncIterator[WatchStream]:
        """A WATCH from ``resource_version`` (with bookmarks) that the server ends after
        ``timeout_s``; the client gives up ``request_timeout_s`` later than that."""
        params: dict[str, Any] = {
            "watch": True,
            "allow_watch_bookmarks": True,
            "resource_version": resource_version,
            "timeout_seconds": timeout_s,
            "_request_timeout": float(timeout_s + self.settings.request_timeout_s),
        }
        what = f"watch {resource.kind}"
        self.counts["watch", resource.kind] += 1
        with translate(what):
            response = await self._request(resource, namespace, params)
        try:
            self._check(resource, response.status, what)
            yield WatchStream(response, what)
        finally:
            # Closing (not releasing) drops a stream the server may still be writing to.
            response.close()


async def refresh_credentials(loader: Any, config: Any) -> None:
    """Keep exec-plugin / GCP tokens fresh (returns at once for static credentials)."""
    if loader is None:
        return
    try:
        await kconfig.refresh_token(loader, config)
    except Exception:  # a failed refresh shows up as 401s, reported by the informers
        log.warning("kubernetes credential refresh stopped", exc_info=True)
