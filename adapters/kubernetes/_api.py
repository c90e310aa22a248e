"""The adapter's only door to the API server: paged LISTs and WATCH streams.

It drives the official asyncio client (``kubernetes.aio``), asking each generated
``list_*`` call for its raw response (``*_without_preload_content``) so every kind,
typed or custom (Kueue), arrives as the same plain JSON the parsers read, at the version
discovery chose (``_discovery``; this module fetches the discovery documents). Every
call has an explicit ``_request_timeout``; every call is counted by verb and kind; SDK
and transport exceptions are translated here into ``adapters.errors`` classes.
"""

from __future__ import annotations

import contextlib
import logging
from collections import Counter
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson
from openrl_inspect.adapters.kubernetes._discovery import Discovery, NotServed
from openrl_inspect.adapters.kubernetes._resources import (
    BACKEND,
    DEVICE_TAINT_RULES,
    DRA_GROUP,
    EVENTS,
    JOBS,
    NODES,
    PODS,
    RESOURCE_SLICES,
    WatchedResource,
)
from openrl_inspect.adapters.kubernetes._settings import KubernetesSettings
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


# The generated class of each resource.k8s.io version (slices, claims, rules alike).
_DRA_APIS: dict[str, str] = {
    "v1": "ResourceV1Api",
    "v1beta2": "ResourceV1beta2Api",
    "v1beta1": "ResourceV1beta1Api",
    "v1alpha3": "ResourceV1alpha3Api",
}


class ResourceExpired(BackendUnavailable):
    """HTTP 410 Gone: a resourceVersion or continue token is too old; relist."""


@dataclass(frozen=True, slots=True)
class ListPage:
    """One page of a LIST; ``version`` is the API version it was read at (its parser's)."""

    items: list[Mapping[str, Any]]
    resource_version: str
    continue_token: str | None
    version: str


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
    """Paged LIST and WATCH for the watched resources, counted per (verb, kind), each
    at the version discovery chose for it (``_discovery``)."""

    def __init__(self, api_client: Any, settings: KubernetesSettings) -> None:
        self.client = api_client
        self.settings = settings
        self.counts: Counter[tuple[str, str]] = Counter()
        self._core: Any = kclient.CoreV1Api(api_client)
        self._custom: Any = kclient.CustomObjectsApi(api_client)
        self.discovery = Discovery(self._fetch_groups, self._fetch_resources)

    async def aclose(self) -> None:
        await self.client.close()

    async def version(self, resource: WatchedResource, *, fresh: bool = False) -> str:
        """The version ``resource`` is read at: ``NotServed`` or ``ApiVersionUnsupported``
        when it cannot be (``fresh``: ask the server again, as a relist does)."""
        return await self.discovery.version(resource, fresh=fresh)

    async def _fetch_groups(self) -> dict[str, tuple[str, ...]]:
        """``GET /apis`` (the official client's ``ApisApi.get_api_versions``)."""
        call = kclient.ApisApi(self.client).get_api_versions_without_preload_content
        body = await self._discovery_get("discovery of API groups", call) or {}
        groups: dict[str, tuple[str, ...]] = {}
        for group in body.get("groups") or ():
            if isinstance(group, dict) and isinstance(group.get("name"), str):
                entries = [v for v in group.get("versions") or () if isinstance(v, dict)]
                versions = (v.get("version") for v in entries)
                groups[group["name"]] = tuple(v for v in versions if isinstance(v, str))
        return groups

    async def _fetch_resources(self, group: str, version: str) -> frozenset[str] | None:
        call = self._custom.get_api_resources_without_preload_content
        body = await self._discovery_get(f"discovery of {group}/{version}", call, group, version)
        if body is None:
            return None
        names = (r.get("name") for r in body.get("resources") or () if isinstance(r, dict))
        return frozenset(n for n in names if isinstance(n, str))

    async def _discovery_get(self, what: str, call: Any, *args: str) -> dict[str, Any] | None:
        """A discovery document, or None for a 404 (the group or version is gone)."""
        self.counts["get", "discovery"] += 1
        with timed(BACKEND), translate(what):
            response = await call(*args, _request_timeout=float(self.settings.request_timeout_s))
            try:
                if response.status == 404:
                    return None
                check_status(response.status, what)
                body = orjson.loads(await response.read())
            finally:
                response.release()
        if not isinstance(body, dict):
            raise BackendProtocolError(BACKEND, f"{what}: the answer is not an object")
        return body

    def _check(self, status: int, what: str) -> None:
        if status == 404:  # the chosen version is gone (an upgrade): ask discovery again
            self.discovery.forget()
        check_status(status, what)

    async def _request(
        self,
        resource: WatchedResource,
        version: str,
        namespace: str | None,
        params: dict[str, Any],
    ) -> aiohttp.ClientResponse:
        """Call the generated ``list_*`` for ``resource`` at ``version``; the raw
        response, unread."""
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
        elif resource.group == DRA_GROUP:
            dra = getattr(kclient, _DRA_APIS[version])(self.client)
            if resource is RESOURCE_SLICES:
                call = dra.list_resource_slice_without_preload_content
            elif resource is DEVICE_TAINT_RULES:
                call = dra.list_device_taint_rule_without_preload_content
            elif ns:
                call = dra.list_namespaced_resource_claim_without_preload_content
            else:
                call = dra.list_resource_claim_for_all_namespaces_without_preload_content
        else:  # custom resources (Kueue, JobSet): the same call for every version
            custom = self._custom
            args = (resource.group, version, *args, resource.resource)
            call = (
                custom.list_namespaced_custom_object_without_preload_content
                if ns
                else custom.list_custom_object_for_all_namespaces_without_preload_content
            )
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
        version: str | None = None,
    ) -> ListPage:
        """One page of a LIST (a consistent snapshot across pages via ``continue``), at
        ``version`` or, by default, the one discovery gives."""
        version = version or await self.version(resource)
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
            response = await self._request(resource, version, namespace, params)
            try:
                self._check(response.status, what)
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
            version=version,
        )

    @contextlib.asynccontextmanager
    async def watch(
        self,
        resource: WatchedResource,
        namespace: str | None,
        resource_version: str,
        timeout_s: int,
        version: str,
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
            response = await self._request(resource, version, namespace, params)
        try:
            self._check(response.status, what)
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
