"""The real ``KubernetesSource``: reads answered from the watch cache.

In steady state a read touches no API server at all: it queries the informers' stores.
A kind whose informer has not synced yet is answered by one bounded direct LIST
(``max_direct_read`` items, narrowed by selectors where the query allows) and the answer
is marked degraded; so is an answer from a synced cache whose watch is failing. A read
that needs a kind the cluster serves only at API versions the adapter does not read is
refused (``ApiVersionUnsupported``); a kind it only follows links through is left out,
and the answer marked degraded.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

from openrl_inspect.adapters.kubernetes._api import (
    KubeApi,
    create_api_client,
    refresh_credentials,
)
from openrl_inspect.adapters.kubernetes._discovery import NotServed
from openrl_inspect.adapters.kubernetes._dra import parse_claim, parse_slice, parse_taint_rule
from openrl_inspect.adapters.kubernetes._event_store import EventStore
from openrl_inspect.adapters.kubernetes._events import parse_event
from openrl_inspect.adapters.kubernetes._informer import Informer, Parse
from openrl_inspect.adapters.kubernetes._pods import parse_node, parse_pod
from openrl_inspect.adapters.kubernetes._queries import KubernetesSource, Resolved, Selector
from openrl_inspect.adapters.kubernetes._records import KindStatus, SourceStatus
from openrl_inspect.adapters.kubernetes._resources import (
    BACKEND,
    DEVICE_TAINT_RULES,
    EVENTS,
    JOBS,
    JOBSETS,
    NODES,
    PODS,
    RESOURCE_CLAIMS,
    RESOURCE_SLICES,
    WATCHED_RESOURCES,
    WORKLOADS,
    WatchedResource,
)
from openrl_inspect.adapters.kubernetes._settings import KubernetesSettings
from openrl_inspect.adapters.kubernetes._store import (
    Store,
    claim_store,
    job_store,
    node_store,
    pod_store,
    slice_store,
    taint_rule_store,
    workload_store,
)
from openrl_inspect.adapters.kubernetes._view import ClusterView
from openrl_inspect.adapters.kubernetes._workloads import parse_job, parse_workload
from openrl_inspect.core.errors import ApiVersionUnsupported

# kind -> (ClusterView field, empty store factory)
_VIEW_FIELDS: dict[str, tuple[str, Callable[[], Store[Any]]]] = {
    PODS.kind: ("pods", pod_store),
    NODES.kind: ("nodes", node_store),
    WORKLOADS.kind: ("workloads", workload_store),
    RESOURCE_SLICES.kind: ("slices", slice_store),
    RESOURCE_CLAIMS.kind: ("claims", claim_store),
    JOBS.kind: ("jobs", job_store),
    JOBSETS.kind: ("jobsets", job_store),
    DEVICE_TAINT_RULES.kind: ("taint_rules", taint_rule_store),
    EVENTS.kind: ("events", EventStore),
}
_RESOURCES = {r.kind: r for r in WATCHED_RESOURCES}
_DIRECT_READS_AT_ONCE = 4


def _one_version(parse: Callable[[Mapping[str, Any]], Any]) -> Parse[Any]:
    """A kind with one version (pods, nodes, jobs, events): its parser ignores it."""
    return lambda obj, version: parse(obj)


class KubernetesCacheSource(KubernetesSource):
    """Informer-backed ``KubernetesSource``. Open it with ``open_kubernetes``."""

    def __init__(self, api: KubeApi, credentials_loader: Any = None) -> None:
        self.api = api
        self.settings: KubernetesSettings = api.settings
        self.view = ClusterView(events=self._event_store())
        # The informers write these stores for the source's life: the GPU views follow
        # every event rather than being rebuilt by requests.
        self.view.gpu_views.watch()
        self._credentials_loader = credentials_loader
        drivers = frozenset(self.settings.gpu_drivers)
        self.labels = labels = self.settings.labels
        # Each takes the object and the API version it was read at.
        self.parsers: dict[str, Parse[Any]] = {
            PODS.kind: _one_version(functools.partial(parse_pod, keys=labels)),
            NODES.kind: _one_version(parse_node),
            WORKLOADS.kind: functools.partial(parse_workload, keys=labels),
            RESOURCE_SLICES.kind: functools.partial(parse_slice, drivers=drivers),
            RESOURCE_CLAIMS.kind: parse_claim,
            JOBS.kind: _one_version(functools.partial(parse_job, kind="Job", keys=labels)),
            JOBSETS.kind: _one_version(functools.partial(parse_job, kind="JobSet", keys=labels)),
            DEVICE_TAINT_RULES.kind: parse_taint_rule,
            EVENTS.kind: _one_version(parse_event),
        }
        self.informers: dict[str, list[Informer[Any]]] = {}
        for resource in WATCHED_RESOURCES:
            store = getattr(self.view, _VIEW_FIELDS[resource.kind][0])
            self.informers[resource.kind] = [
                Informer(self.api, resource, namespace, store, self.parsers[resource.kind])
                for namespace in self._namespaces(resource)
            ]
        self.direct_reads: dict[str, int] = dict.fromkeys(_RESOURCES, 0)
        self._direct_gate = asyncio.Semaphore(_DIRECT_READS_AT_ONCE)
        self._tasks: list[asyncio.Task[None]] = []

    def _event_store(self) -> EventStore:
        return EventStore(self.settings.max_events, self.settings.event_max_age_s)

    def _namespaces(self, resource: WatchedResource) -> tuple[str | None, ...]:
        if resource.namespaced and self.settings.namespaces:
            return self.settings.namespaces
        return (None,)

    # --- lifecycle ----------------------------------------------------------------------

    async def start(self) -> None:
        """Start every informer; returns at once (see ``wait_synced``)."""
        for kind, informers in self.informers.items():
            for informer in informers:
                name = f"kubernetes-informer-{kind}-{informer.namespace or 'all'}"
                self._tasks.append(asyncio.create_task(informer.run(), name=name))
        self._tasks.append(
            asyncio.create_task(
                refresh_credentials(self._credentials_loader, self.api.client.configuration)
            )
        )

    async def aclose(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()
        await self.api.aclose()

    async def wait_synced(self, timeout_s: float) -> bool:
        """Wait until every kind has synced (or is known not to be served)."""
        waits = [i.synced.wait() for informers in self.informers.values() for i in informers]
        try:
            async with asyncio.timeout(timeout_s):
                await asyncio.gather(*waits)
        except TimeoutError:
            return False
        return True

    def request_counts(self) -> dict[tuple[str, str], int]:
        """API-server requests made so far, by (verb, kind): list, watch, get discovery."""
        return dict(self.api.counts)

    # --- status -------------------------------------------------------------------------

    def kind_status(self, kind: str) -> KindStatus:
        parts = [i.status() for i in self.informers[kind]]
        errors = [p for p in parts if p.last_error is not None]
        list_ages = [p.list_age_s for p in parts]
        return KindStatus(
            kind=kind,
            served=any(p.served for p in parts),
            synced=all(p.synced for p in parts),
            objects=parts[0].objects,  # the namespaces of a kind share one store
            list_age_s=None if None in list_ages else max(a for a in list_ages if a is not None),
            error_age_s=max((p.error_age_s or 0.0 for p in errors), default=None),
            last_error=errors[0].last_error if errors else None,
            relists=sum(p.relists for p in parts),
            watch_restarts=sum(p.watch_restarts for p in parts),
            evicted=parts[0].evicted,  # one store, as for objects
            group=parts[0].group,
            version=next((p.version for p in parts if p.version), None),
            understood=parts[0].understood,
            unsupported_versions=next((p.unsupported_versions for p in parts if p.unsupported), ()),
        )

    async def status(self) -> SourceStatus:
        return SourceStatus(BACKEND, tuple(self.kind_status(k) for k in self.informers))

    # --- reads --------------------------------------------------------------------------

    async def _resolve(self, needs: Mapping[str, Selector]) -> Resolved:
        degraded = truncated = False
        replacements: dict[str, Any] = {}
        for kind, selector in needs.items():
            status = self.kind_status(kind)
            if status.unsupported:
                if selector.required:
                    raise status.refusal()
                degraded = True  # links through it are missing
                continue
            if status.synced:
                degraded = degraded or status.degraded
                continue
            field, new_store = _VIEW_FIELDS[kind]
            store = self._event_store() if kind == EVENTS.kind else new_store()
            records, short = await self._direct_read(kind, selector)
            store.replace(records)
            replacements[field] = store
            degraded = True
            truncated = truncated or short
        view = dataclasses.replace(self.view, **replacements) if replacements else self.view
        return Resolved(view, degraded=degraded, truncated=truncated)

    async def _direct_read(self, kind: str, selector: Selector) -> tuple[list[Any], bool]:
        """One bounded LIST per selected namespace; ``True`` if more existed."""
        resource = _RESOURCES[kind]
        namespaces = self._namespaces(resource)
        if resource.namespaced and selector.namespace is not None:
            wanted = selector.namespace
            namespaces = (wanted,) if namespaces == (None,) or wanted in namespaces else ()
        parse = self.parsers[kind]
        records: list[Any] = []
        short = False
        async with self._direct_gate:
            for namespace in namespaces:
                self.direct_reads[kind] += 1
                try:
                    page = await self.api.list_page(
                        resource,
                        namespace,
                        limit=self.settings.max_direct_read,
                        label_selector=selector.labels,
                        field_selector=selector.fields,
                    )
                except NotServed:
                    continue
                except ApiVersionUnsupported:
                    if selector.required:
                        raise
                    return [], False  # a link kind: the read is marked degraded
                found = (parse(item, page.version) for item in page.items)
                records.extend(r for r in found if r is not None)
                short = short or page.continue_token is not None
        return records, short


@contextlib.asynccontextmanager
async def open_kubernetes(settings: KubernetesSettings) -> AsyncIterator[KubernetesCacheSource]:
    """Configure the client, start the watch cache, and close both on exit.

    Meant for the application's lifespan; it does not wait for the cache to sync (use
    ``wait_synced`` or ``status().ready`` for readiness).
    """
    api_client, loader = await create_api_client(settings)
    source = KubernetesCacheSource(KubeApi(api_client, settings), loader)
    try:
        await source.start()
        yield source
    finally:
        await source.aclose()
