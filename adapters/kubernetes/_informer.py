"""The watch cache: one informer per kind (and per selected namespace).

An informer LISTs its kind once, page by page (``limit``/``continue``), then WATCHes
from the list's resourceVersion with bookmarks, applying ADDED / MODIFIED / DELETED to a
``Store`` of small records and moving its resourceVersion on every event and BOOKMARK.

* 410 Gone (an HTTP 410, or a watch ERROR event whose Status has code 410): the history
  it would resume from is gone, so it relists.
* Every ``resync_period_s`` it relists anyway, replacing the store wholesale.
* When the API server goes away it retries with exponential backoff (and jitter),
  resuming the watch from its resourceVersion; a server that lost that history answers
  410 and the informer relists.
* 404 on the collection means the API group is not installed (no Kueue, no DRA): the
  kind is reported as not served and holds nothing; it is asked again after a resync
  period.

Requests never wait on an informer: they read the store (see ``kubernetes_source``).
"""

from __future__ import annotations

import asyncio
import logging
import math
import random
import time
from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

from openrl_inspect.adapters.kubernetes._api import KubeApi, NotServed, ResourceExpired
from openrl_inspect.adapters.kubernetes._json import object_key, resource_version
from openrl_inspect.adapters.kubernetes._records import KindStatus
from openrl_inspect.adapters.kubernetes._resources import BACKEND, WatchedResource
from openrl_inspect.adapters.kubernetes._store import Keyed, Store
from openrl_inspect.core.errors import BackendError, BackendProtocolError, BackendUnavailable

log = logging.getLogger(__name__)

R = TypeVar("R", bound=Keyed)


class Informer(Generic[R]):
    """List-then-watch of one resource (in one namespace, or all) into a store."""

    def __init__(
        self,
        api: KubeApi,
        resource: WatchedResource,
        namespace: str | None,
        store: Store[R],
        parse: Callable[[Mapping[str, Any]], R | None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.api = api
        self.resource = resource
        self.namespace = namespace
        self.store = store
        self.parse = parse
        self.clock = clock
        self.settings = api.settings
        self.synced = asyncio.Event()
        self.served = True
        self.resource_version: str | None = None
        self.last_list_at: float | None = None
        self.last_error: str | None = None
        self.error_since: float | None = None
        self.relists = 0
        self.watch_restarts = 0

    def status(self) -> KindStatus:
        now = self.clock()
        return KindStatus(
            kind=self.resource.kind,
            served=self.served,
            synced=self.synced.is_set(),
            objects=len(self.store),
            list_age_s=None if self.last_list_at is None else now - self.last_list_at,
            error_age_s=None if self.error_since is None else now - self.error_since,
            last_error=self.last_error,
            relists=self.relists,
            watch_restarts=self.watch_restarts,
            evicted=self.store.evicted,
        )

    async def run(self) -> None:
        backoff = self.settings.backoff_initial_s
        need_list = True
        while True:
            try:
                if need_list or self._resync_due():
                    need_list = True
                    await self._relist()
                    need_list = False
                started = self.clock()
                if await self._watch() == 0 and self.clock() - started < 1.0:
                    # A watch that ends at once with nothing in it (a proxy cutting
                    # streams, say) must not turn into a busy loop of requests.
                    await self._sleep(backoff)
                    backoff = min(backoff * 2, self.settings.backoff_max_s)
                else:
                    backoff = self.settings.backoff_initial_s
            except ResourceExpired:
                need_list = True
                log.info("kubernetes %s: resource version expired, relisting", self._name)
                if self.last_error is not None:
                    # Expired twice in a row without progress: do not spin.
                    await self._sleep(backoff)
                    backoff = min(backoff * 2, self.settings.backoff_max_s)
                self._fail("resource version expired")
            except NotServed:
                self._not_served()
                need_list = True
                await asyncio.sleep(self.settings.resync_period_s)
            except BackendError as exc:
                self._fail(exc.message)
                await self._sleep(backoff)
                backoff = min(backoff * 2, self.settings.backoff_max_s)
            except Exception:  # a parser or client bug must not kill the cache silently
                log.exception("kubernetes %s: informer failed", self._name)
                self._fail("internal error in the watch cache")
                need_list = True
                await self._sleep(backoff)
                backoff = min(backoff * 2, self.settings.backoff_max_s)

    @property
    def _name(self) -> str:
        scope = f" in {self.namespace}" if self.namespace else ""
        return f"{self.resource.kind}{scope}"

    async def _sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds * random.uniform(0.8, 1.2))  # jitter spreads reconnects

    def _resync_due(self) -> bool:
        return (
            self.last_list_at is not None
            and self.clock() - self.last_list_at >= self.settings.resync_period_s
        )

    def _fail(self, message: str) -> None:
        if self.last_error is None:
            self.error_since = self.clock()
            log.warning("kubernetes %s: %s", self._name, message)
        self.last_error = message

    def _healthy(self) -> None:
        self.last_error = None
        self.error_since = None

    def _not_served(self) -> None:
        self.served = False
        self.store.replace([], namespace=self.namespace)
        self.resource_version = None
        self._healthy()
        self.synced.set()

    async def _relist(self) -> None:
        records: list[R] = []
        token: str | None = None
        while True:
            page = await self.api.list_page(
                self.resource,
                self.namespace,
                limit=self.settings.list_page_size,
                continue_token=token,
            )
            for item in page.items:
                record = self.parse(item)
                if record is not None:
                    records.append(record)
            token = page.continue_token
            if token is None:
                break
        self.store.replace(records, namespace=self.namespace)
        self.resource_version = page.resource_version
        self.last_list_at = self.clock()
        self.relists += 1
        self.served = True
        self._healthy()
        self.synced.set()

    async def _watch(self) -> int:
        """Watch until the server ends the stream or a resync is due; events applied."""
        assert self.resource_version is not None and self.last_list_at is not None
        until_resync = self.last_list_at + self.settings.resync_period_s - self.clock()
        timeout = max(1, math.ceil(min(self.settings.watch_timeout_s, until_resync)))
        async with self.api.watch(
            self.resource, self.namespace, self.resource_version, timeout
        ) as stream:
            self.watch_restarts += 1
            self._healthy()
            applied = 0
            while (event := await stream.next()) is not None:
                self._apply(event)
                applied += 1
                if self._resync_due():
                    break
        return applied

    def _apply(self, event: Mapping[str, Any]) -> None:
        kind, obj = event.get("type"), event.get("object")
        if not isinstance(obj, Mapping):
            raise BackendProtocolError(BACKEND, f"watch {self._name}: event without an object")
        if kind == "ERROR":
            if obj.get("code") == 410:
                raise ResourceExpired(BACKEND, f"watch {self._name}: resource version expired")
            code = obj.get("code")
            raise BackendUnavailable(BACKEND, f"watch {self._name}: the server reported {code}")
        if kind in ("ADDED", "MODIFIED"):
            record = self.parse(obj)
            if record is not None:
                self.store.upsert(record)
            elif (key := object_key(obj)) is not None:
                self.store.delete(key)  # no longer of interest (e.g. another driver)
        elif kind == "DELETED":
            if (key := object_key(obj)) is not None:
                self.store.delete(key)
        elif kind != "BOOKMARK":
            raise BackendProtocolError(BACKEND, f"watch {self._name}: unknown event {kind!r}")
        version = resource_version(obj)
        if version:
            self.resource_version = version
