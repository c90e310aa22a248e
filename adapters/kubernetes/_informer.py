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
* Every LIST first asks discovery again which version to read (``_discovery``, shared by
  the informers of a group): the parser is the one of that version. A group not
  installed (no Kueue, no DRA) is reported as not served and holds nothing; one served
  only at versions the adapter does not read is reported unsupported and holds nothing
  (its reads are refused, see ``_source``); both are asked again after a resync period.
  A 404 on a collection discovery had offered (the version was just dropped) relists at
  once, at the version discovery now gives.

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

from openrl_inspect.adapters.kubernetes._api import KubeApi, ResourceExpired
from openrl_inspect.adapters.kubernetes._discovery import NotDiscovered, NotServed
from openrl_inspect.adapters.kubernetes._json import object_key, resource_version
from openrl_inspect.adapters.kubernetes._records import KindStatus
from openrl_inspect.adapters.kubernetes._resources import BACKEND, WatchedResource
from openrl_inspect.adapters.kubernetes._store import Keyed, Store
from openrl_inspect.core.errors import (
    ApiVersionUnsupported,
    BackendError,
    BackendProtocolError,
    BackendUnavailable,
)

log = logging.getLogger(__name__)

R = TypeVar("R", bound=Keyed)
#: A parser: an object as served at an API version -> its record (None: skip it).
Parse = Callable[[Mapping[str, Any], str], R | None]


class Informer(Generic[R]):
    """List-then-watch of one resource (in one namespace, or all) into a store."""

    def __init__(
        self,
        api: KubeApi,
        resource: WatchedResource,
        namespace: str | None,
        store: Store[R],
        parse: Parse[R],
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
        self.version: str | None = None
        self.unsupported: ApiVersionUnsupported | None = None

    def status(self) -> KindStatus:
        now = self.clock()
        unsupported = self.unsupported
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
            group=self.resource.group,
            version=self.version,
            understood=self.resource.versions,
            unsupported_versions=() if unsupported is None else unsupported.seen,
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
            except ApiVersionUnsupported as exc:
                self._not_served(exc)
                need_list = True
                await asyncio.sleep(self.settings.resync_period_s)
            except NotDiscovered:
                self._not_served()
                need_list = True
                await asyncio.sleep(self.settings.resync_period_s)
            except NotServed as exc:  # gone since discovery offered it: ask again soon
                need_list = True
                self._fail(exc.message)
                await self._sleep(backoff)
                backoff = min(backoff * 2, self.settings.backoff_max_s)
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

    def _not_served(self, unsupported: ApiVersionUnsupported | None = None) -> None:
        """Not served (no version has it), or ``unsupported``: served only at versions
        the adapter does not read. Either way it holds nothing."""
        self.served = unsupported is not None
        self.unsupported = unsupported
        self.version = None
        self.store.replace([], namespace=self.namespace)
        self.resource_version = None
        self._healthy()
        if unsupported is not None:
            log.warning("kubernetes %s: %s", self._name, unsupported.message)
            self.last_error = unsupported.message
        self.synced.set()

    async def _relist(self) -> None:
        version = await self.api.version(self.resource, fresh=True)
        records: list[R] = []
        token: str | None = None
        while True:
            page = await self.api.list_page(
                self.resource,
                self.namespace,
                limit=self.settings.list_page_size,
                continue_token=token,
                version=version,
            )
            for item in page.items:
                record = self.parse(item, version)
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
        self.version, self.unsupported = version, None
        self._healthy()
        self.synced.set()

    async def _watch(self) -> int:
        """Watch until the server ends the stream or a resync is due; events applied."""
        assert self.resource_version is not None and self.last_list_at is not None
        assert self.version is not None
        until_resync = self.last_list_at + self.settings.resync_period_s - self.clock()
        timeout = max(1, math.ceil(min(self.settings.watch_timeout_s, until_resync)))
        async with self.api.watch(
            self.resource, self.namespace, self.resource_version, timeout, self.version
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
            record = self.parse(obj, self.version or "")
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
