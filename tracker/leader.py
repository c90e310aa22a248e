"""Leader election on a ``coordination.k8s.io`` Lease, so one replica of a writer works.

The rules are client-go's (``tools/leaderelection``), on ``adapters.kubernetes.LeaseStore``:

- a candidate takes the Lease when nobody holds it, or when the record it last saw has
  not changed for the Lease's duration *by its own clock* (the holder's ``renewTime`` is
  never compared with local time, so clock skew between nodes does not matter);
- every write is a replace guarded by the ``resourceVersion`` read, so of two
  candidates writing at once one gets a conflict and stays a candidate;
- the leader renews every ``retry_period_s``; when it has not renewed for
  ``renew_deadline_s`` (or sees another holder) it stops leading: the work is told to
  stop, and cancelled if it has not after ``lease_duration_s - renew_deadline_s``, the
  margin before any other candidate may take over;
- on a clean stop the leader releases the Lease (holder ``""``) so another replica
  takes over at its next try instead of after the whole duration.

Every call has a timeout (the client's own, and ``renew_deadline_s`` around each try).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from openrl_inspect.adapters.kubernetes import LeaseConflict, LeaseRecord, LeaseStore
from openrl_inspect.core.errors import BackendError, SettingsError

log = logging.getLogger("openrl_inspect.tracker.leader")

Work = Callable[[asyncio.Event], Coroutine[Any, Any, None]]


@dataclass(frozen=True)
class ElectionSettings:
    """Env prefix ``OPENRL_INSPECT_LEADER_``; ``identity`` defaults to the host (pod) name."""

    lease_name: str = "openrl-inspect-tracker"
    namespace: str = "openrl-inspect"
    identity: str = ""
    lease_duration_s: float = 15.0
    renew_deadline_s: float = 10.0
    retry_period_s: float = 2.0

    def __post_init__(self) -> None:
        if not 0 < self.retry_period_s < self.renew_deadline_s < self.lease_duration_s:
            raise SettingsError(
                "OPENRL_INSPECT_LEADER_*: need 0 < retry_period_s < renew_deadline_s "
                "< lease_duration_s"
            )
        if not self.identity:
            raise SettingsError("OPENRL_INSPECT_LEADER_IDENTITY: empty")


class LeaderElector:
    """Campaigns for one Lease and runs ``work`` while it holds it (``run``)."""

    def __init__(
        self,
        leases: LeaseStore,
        settings: ElectionSettings,
        *,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.leases = leases
        self.settings = settings
        self._clock = clock
        self._wall = wall
        self._seen: LeaseRecord | None = None
        self._seen_at = 0.0
        self.leading = False
        self._extra = {"lease": settings.lease_name, "identity": settings.identity}

    # -- one step --------------------------------------------------------------

    async def try_acquire_or_renew(self) -> bool:
        """One attempt to take or keep the Lease; whether this candidate now holds it."""
        s = self.settings
        now = self._wall()
        current = await self.leases.get(s.namespace, s.lease_name)
        if current is None:
            fresh = LeaseRecord(s.identity, self._duration(), now, now, 0)
            return await self._write(self.leases.create, fresh)
        self._observe(current)
        mine = current.holder == s.identity
        expired = self._clock() >= self._seen_at + (current.duration_s or self._duration())
        if current.holder and not mine and not expired:
            self.leading = False
            return False
        wanted = dataclasses.replace(
            current,
            holder=s.identity,
            duration_s=self._duration(),
            acquired_at=current.acquired_at if mine else now,
            renewed_at=now,
            transitions=current.transitions if mine else current.transitions + 1,
        )
        return await self._write(self.leases.replace, wanted)

    async def release(self) -> None:
        """Give the Lease up, if held, so another candidate need not wait it out."""
        s = self.settings
        with contextlib.suppress(BackendError, TimeoutError):
            async with asyncio.timeout(s.renew_deadline_s):
                current = await self.leases.get(s.namespace, s.lease_name)
                if current is not None and current.holder == s.identity:
                    released = dataclasses.replace(current, holder="", duration_s=1)
                    await self.leases.replace(s.namespace, s.lease_name, released)
                    log.info("lease released", extra=self._extra)
        self.leading = False

    def _duration(self) -> int:
        return max(1, round(self.settings.lease_duration_s))

    def _observe(self, record: LeaseRecord) -> None:
        if self._seen is None or record.resource_version != self._seen.resource_version:
            self._seen, self._seen_at = record, self._clock()

    async def _write(
        self, call: Callable[[str, str, LeaseRecord], Awaitable[LeaseRecord]], record: LeaseRecord
    ) -> bool:
        try:
            stored = await call(self.settings.namespace, self.settings.lease_name, record)
        except LeaseConflict:
            self.leading = False
            return False
        self._observe(stored)
        self.leading = True
        return True

    async def _try(self) -> bool:
        """``try_acquire_or_renew`` within the renew deadline; a failure is a no."""
        try:
            async with asyncio.timeout(self.settings.renew_deadline_s):
                return await self.try_acquire_or_renew()
        except (BackendError, TimeoutError) as exc:
            code = exc.code if isinstance(exc, BackendError) else "BACKEND_TIMEOUT"
            log.warning("lease call failed", extra={**self._extra, "code": code})
            return False

    # -- the campaign ----------------------------------------------------------

    async def run(self, work: Work, stop: asyncio.Event) -> None:
        """Campaign until ``stop``; run ``work(lost)`` each time the Lease is won.

        ``work`` must return soon after ``lost`` is set. An exception from it ends the
        campaign (the Lease released) and is raised here.
        """
        try:
            while not stop.is_set():
                if not await self._acquire(stop):
                    return
                log.info("leading", extra=self._extra)
                lost = asyncio.Event()
                task = asyncio.create_task(work(lost))
                try:
                    await self._keep(stop, task)
                finally:
                    self.leading = False
                    lost.set()
                    await self._finish(task)
                log.info("stopped leading", extra=self._extra)
        finally:
            await self.release()

    async def _acquire(self, stop: asyncio.Event) -> bool:
        while not stop.is_set():
            if await self._try():
                return True
            await _wait(stop, self.settings.retry_period_s)
        return False

    async def _keep(self, stop: asyncio.Event, task: asyncio.Task[None]) -> None:
        """Renew until stopped, the work ends, or the Lease is lost."""
        renewed = self._clock()
        while not stop.is_set() and not task.done():
            stopping = asyncio.create_task(stop.wait())
            await asyncio.wait([task, stopping], timeout=self.settings.retry_period_s)
            stopping.cancel()
            if stop.is_set() or task.done():
                return
            if await self._try():
                renewed = self._clock()
            elif self._seen is not None and self._seen.holder not in ("", self.settings.identity):
                log.warning("lease taken by another holder", extra=self._extra)
                return
            elif self._clock() - renewed >= self.settings.renew_deadline_s:
                log.warning("lease not renewed in time", extra=self._extra)
                return

    async def _finish(self, task: asyncio.Task[None]) -> None:
        grace = self.settings.lease_duration_s - self.settings.renew_deadline_s
        done, _ = await asyncio.wait([task], timeout=grace)
        if not done:
            task.cancel()
            await asyncio.wait([task])
        failure = None if task.cancelled() else task.exception()
        if failure is not None:
            raise failure


async def _wait(stop: asyncio.Event, seconds: float) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), seconds)
