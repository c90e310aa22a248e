"""Which API version each resource is read at, chosen from the API server's discovery.

The server says which versions of each group it serves (``GET /apis``) and which
resources each version has (``GET /apis/<group>/<version>``). A resource is read at the
first of its understood versions (``WatchedResource.versions``, newest first) that has
it, whatever the server's preferred version or storage version. Three other outcomes:

- the group serves the resource only at versions the adapter does not know (a Kueue
  past v1beta2, say): ``ApiVersionUnsupported``, naming the group and the versions seen.
  Its objects exist but cannot be read, which must never read as "there are none";
- no served version has it (the group is not installed, a feature gate is off):
  ``NotDiscovered``, the kind is not served;
- discovery itself fails: the ``BackendError`` of the call, as for any read.

Answers are kept and asked again when an informer relists (``fresh``), at most once per
``min_interval_s`` whichever informer asks first, so a Kueue upgrade that stops serving
v1beta1, or a DRA version turned on, is followed at the next relist without a restart.
The fetching is the client's (``_api``); this module only decides.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

from openrl_inspect.adapters.kubernetes._resources import BACKEND, WatchedResource
from openrl_inspect.core.errors import ApiVersionUnsupported, BackendUnavailable

#: ``GET /apis``: group -> its served versions, the server's preferred first.
FetchGroups = Callable[[], Awaitable[Mapping[str, tuple[str, ...]]]]
#: ``GET /apis/<group>/<version>``: the resource names, or None when not served (404).
FetchResources = Callable[[str, str], Awaitable[frozenset[str] | None]]


class NotServed(BackendUnavailable):
    """HTTP 404 on a collection: the API group is not installed (no Kueue, no DRA)."""


class NotDiscovered(NotServed):
    """Discovery says no served version has the resource: asking again soon is useless."""


@dataclass(frozen=True, slots=True)
class Choice:
    """What discovery says of one resource: the ``version`` to read it at (None when it
    cannot be read) and ``seen``, the served versions that have it (with none understood
    among them, the resource is unsupported; with none at all, not served)."""

    resource: WatchedResource
    version: str | None
    seen: tuple[str, ...]

    @property
    def unsupported(self) -> bool:
        return self.version is None and bool(self.seen)

    def error(self) -> ApiVersionUnsupported | NotDiscovered:
        """Why it cannot be read (only when ``version`` is None)."""
        r = self.resource
        if self.seen:
            return ApiVersionUnsupported(BACKEND, r.group, r.resource, self.seen, r.versions)
        group = r.group or "the core API"
        return NotDiscovered(BACKEND, f"{r.resource}: not served by this cluster ({group})")


class Discovery:
    """Chooses each resource's version and remembers the answers (see the module doc)."""

    def __init__(
        self,
        fetch_groups: FetchGroups,
        fetch_resources: FetchResources,
        *,
        min_interval_s: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._fetch_groups = fetch_groups
        self._fetch_resources = fetch_resources
        self._min_interval_s = min_interval_s
        self._clock = clock
        self._lock = asyncio.Lock()
        self._groups: tuple[float, Mapping[str, tuple[str, ...]]] | None = None
        self._resources: dict[tuple[str, str], tuple[float, frozenset[str] | None]] = {}
        #: The last choice made for each resource, by kind: what the status reports.
        self.choices: dict[str, Choice] = {}

    async def choose(self, resource: WatchedResource, *, fresh: bool = False) -> Choice:
        """The version to read ``resource`` at; ``fresh`` asks the server again unless
        it was asked less than ``min_interval_s`` ago."""
        if not resource.group:  # the core API serves v1, and only v1
            choice = Choice(resource, "v1", ("v1",))
        else:
            async with self._lock:
                choice = await self._choose(resource, fresh)
        self.choices[resource.kind] = choice
        return choice

    async def version(self, resource: WatchedResource, *, fresh: bool = False) -> str:
        """The version to read ``resource`` at, or the reason it cannot be read raised."""
        choice = await self.choose(resource, fresh=fresh)
        if choice.version is None:
            raise choice.error()
        return choice.version

    def forget(self) -> None:
        """Ask the server again next time (a LIST said the chosen version is gone)."""
        self._groups = None
        self._resources.clear()

    async def _choose(self, resource: WatchedResource, fresh: bool) -> Choice:
        served = (await self._served(fresh)).get(resource.group, ())
        understood = [v for v in resource.versions if v in served]
        for version in understood:
            if resource.resource in await self._names(resource.group, version, fresh):
                return Choice(resource, version, (version,))
        # None of the understood versions has it: does an unknown one?
        others = [v for v in served if v not in resource.versions]
        seen = []
        for version in others:
            if resource.resource in await self._names(resource.group, version, fresh):
                seen.append(version)
        return Choice(resource, None, tuple(seen))

    def _stale(self, fetched_at: float, fresh: bool) -> bool:
        return fresh and self._clock() - fetched_at >= self._min_interval_s

    async def _served(self, fresh: bool) -> Mapping[str, tuple[str, ...]]:
        if self._groups is None or self._stale(self._groups[0], fresh):
            self._groups = (self._clock(), await self._fetch_groups())
        return self._groups[1]

    async def _names(self, group: str, version: str, fresh: bool) -> frozenset[str]:
        known = self._resources.get((group, version))
        if known is None or self._stale(known[0], fresh):
            known = (self._clock(), await self._fetch_resources(group, version))
            self._resources[group, version] = known
        return known[1] or frozenset()
