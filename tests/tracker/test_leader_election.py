"""Leader election over the in-memory Lease twin: one leader at a time, expiry judged by
the candidate's own clock, conflicts lost cleanly, release, and the campaign loop."""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime

import fakeredis
import pytest
from openrl_inspect.adapters.kubernetes import LeaseRecord
from openrl_inspect.adapters.kubernetes.memory import MemoryKubernetesSource, MemoryLeases
from openrl_inspect.core.errors import BackendUnavailable, SettingsError
from openrl_inspect.simulator import SimConfig
from openrl_inspect.simulator.kube_twin import mirror_kubernetes
from openrl_inspect.tracker.leader import ElectionSettings, LeaderElector, Work
from openrl_inspect.tracker.run import TrackerSettings, run_term
from support.harness import populate

pytestmark = pytest.mark.anyio

NS, NAME = "openrl", "openrl-inspect-tracker"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def elector(leases: MemoryLeases, who: str, clock: Clock, **over: float) -> LeaderElector:
    settings = ElectionSettings(lease_name=NAME, namespace=NS, identity=who, **over)
    # A wall clock far off the others': expiry must not depend on it.
    skew = {"a": 0, "b": 3600, "c": -3600}[who]
    return LeaderElector(
        leases,
        settings,
        clock=clock,
        wall=lambda: datetime.fromtimestamp(clock.now + skew, UTC),
    )


async def test_the_first_candidate_creates_the_lease_and_the_second_waits() -> None:
    leases, clock = MemoryLeases(), Clock()
    a, b = elector(leases, "a", clock), elector(leases, "b", clock)
    assert await a.try_acquire_or_renew() and a.leading
    assert not await b.try_acquire_or_renew() and not b.leading
    stored = leases.leases[NS, NAME]
    assert (stored.holder, stored.duration_s, stored.transitions) == ("a", 15, 0)
    clock.now += 14  # not yet the duration since b first saw this record
    assert not await b.try_acquire_or_renew()


async def test_a_renewing_leader_keeps_the_lease() -> None:
    leases, clock = MemoryLeases(), Clock()
    a, b = elector(leases, "a", clock), elector(leases, "b", clock)
    assert await a.try_acquire_or_renew()
    for _ in range(10):
        clock.now += 10
        assert await a.try_acquire_or_renew()
        assert not await b.try_acquire_or_renew()
    assert leases.leases[NS, NAME].transitions == 0


async def test_a_silent_leader_is_replaced_after_the_duration_by_the_observers_clock() -> None:
    leases, clock = MemoryLeases(), Clock()
    a, b = elector(leases, "a", clock), elector(leases, "b", clock)
    assert await a.try_acquire_or_renew()
    first = leases.leases[NS, NAME]
    assert not await b.try_acquire_or_renew()  # b starts its count now
    clock.now += 15
    assert await b.try_acquire_or_renew() and b.leading
    taken = leases.leases[NS, NAME]
    assert taken.holder == "b" and taken.transitions == 1
    assert taken.acquired_at != first.acquired_at
    # a comes back: it sees b's fresh record and stands down.
    assert not await a.try_acquire_or_renew() and not a.leading
    assert leases.leases[NS, NAME].holder == "b"


async def test_of_two_writers_of_one_record_one_gets_a_conflict() -> None:
    leases, clock = MemoryLeases(), Clock()
    b, c = elector(leases, "b", clock), elector(leases, "c", clock)
    leases.leases[NS, NAME] = LeaseRecord("", 15, None, None, 3, "7")  # released
    real_replace = leases.replace

    async def c_writes_first(namespace: str, name: str, record: LeaseRecord) -> LeaseRecord:
        leases.replace = real_replace  # type: ignore[method-assign]  # once
        assert await c.try_acquire_or_renew()
        return await real_replace(namespace, name, record)

    leases.replace = c_writes_first  # type: ignore[method-assign]  # c slips in between
    assert not await b.try_acquire_or_renew() and not b.leading
    stored = leases.leases[NS, NAME]
    assert stored.holder == "c" and stored.transitions == 4


async def test_a_released_lease_is_taken_at_once() -> None:
    leases, clock = MemoryLeases(), Clock()
    a, b = elector(leases, "a", clock), elector(leases, "b", clock)
    assert await a.try_acquire_or_renew()
    assert not await b.try_acquire_or_renew()
    await a.release()
    assert leases.leases[NS, NAME].holder == "" and not a.leading
    assert await b.try_acquire_or_renew()
    # Releasing what another holds writes nothing.
    writes = leases.writes
    await a.release()
    assert leases.writes == writes and leases.leases[NS, NAME].holder == "b"


def test_settings_keep_the_renewal_inside_the_lease() -> None:
    with pytest.raises(SettingsError):
        ElectionSettings(identity="a", lease_duration_s=10, renew_deadline_s=10)
    with pytest.raises(SettingsError):
        ElectionSettings(identity="a", retry_period_s=0)
    with pytest.raises(SettingsError):
        ElectionSettings(identity="")


# -- the campaign loop, on the real clock with short periods ---------------------

FAST = {"lease_duration_s": 0.6, "renew_deadline_s": 0.4, "retry_period_s": 0.05}


class Terms:
    """Work that records who leads; fails the test if two ever lead at once."""

    def __init__(self) -> None:
        self.current: str | None = None
        self.log: list[str] = []
        self.started = {who: asyncio.Event() for who in "abc"}
        self.ended = {who: asyncio.Event() for who in "abc"}

    def work(self, who: str) -> Work:
        async def term(lost: asyncio.Event) -> None:
            assert self.current is None, f"{who} leads while {self.current} does"
            self.current = who
            self.log.append(who)
            self.started[who].set()
            try:
                await lost.wait()
            finally:
                self.current = None
                self.ended[who].set()

        return term


async def _within(event: asyncio.Event, seconds: float = 10.0) -> None:
    async with asyncio.timeout(seconds):
        await event.wait()


async def test_campaign_one_leader_then_the_other_after_a_clean_stop() -> None:
    leases, terms = MemoryLeases(), Terms()
    stops = {"a": asyncio.Event(), "b": asyncio.Event()}
    electors = {who: LeaderElector(leases, ElectionSettings(NAME, NS, who, **FAST)) for who in "ab"}
    a = asyncio.create_task(electors["a"].run(terms.work("a"), stops["a"]))
    await _within(terms.started["a"])
    b = asyncio.create_task(electors["b"].run(terms.work("b"), stops["b"]))
    await asyncio.sleep(0.3)  # b campaigns for several retry periods meanwhile
    assert terms.log == ["a"]
    stops["a"].set()
    await a
    assert terms.ended["a"].is_set()
    await _within(terms.started["b"])
    assert terms.log == ["a", "b"] and leases.leases[NS, NAME].holder == "b"
    stops["b"].set()
    await b
    assert leases.leases[NS, NAME].holder == ""


async def test_a_leader_that_cannot_renew_stops_its_work() -> None:
    leases, terms = MemoryLeases(), Terms()
    stop = asyncio.Event()
    leader = LeaderElector(leases, ElectionSettings(NAME, NS, "a", **FAST))
    task = asyncio.create_task(leader.run(terms.work("a"), stop))
    await _within(terms.started["a"])
    leases.fail = BackendUnavailable("kubernetes", "the API server cannot be reached")
    await _within(terms.ended["a"])
    assert not leader.leading
    terms.started["a"].clear()
    leases.fail = None  # back: it campaigns again and, the Lease being its own, leads
    await _within(terms.started["a"])
    assert terms.log == ["a", "a"] and leases.leases[NS, NAME].transitions == 0
    stop.set()
    await task


async def test_work_that_fails_ends_the_campaign_and_releases() -> None:
    leases = MemoryLeases()

    async def broken(lost: asyncio.Event) -> None:
        raise RuntimeError("tracker crashed")

    leader = LeaderElector(leases, ElectionSettings(NAME, NS, "a", **FAST))
    with pytest.raises(RuntimeError, match="tracker crashed"):
        await leader.run(broken, asyncio.Event())
    assert leases.leases[NS, NAME].holder == ""


async def test_only_the_leading_tracker_writes_placements() -> None:
    """Two tracker replicas, each writing to a Redis of its own so the writer shows:
    the leader's fills, the standby's stays empty until the leader steps down."""
    now = time.time()
    sim = await populate(
        fakeredis.FakeAsyncRedis(decode_responses=True), SimConfig(seed=21, scenarios=False), now
    )
    kube = MemoryKubernetesSource()
    mirror_kubernetes(sim, kube)
    leases = MemoryLeases()
    servers = {who: fakeredis.FakeServer() for who in "ab"}
    stops = {who: asyncio.Event() for who in "ab"}
    settings = TrackerSettings(interval_s=0.02, leader_elect=True)

    def replica(who: str) -> asyncio.Task[None]:
        client = fakeredis.FakeAsyncRedis(server=servers[who], decode_responses=True)
        elector = LeaderElector(leases, ElectionSettings(NAME, NS, who, **FAST))
        work = functools.partial(run_term, kube, client, settings)
        return asyncio.create_task(elector.run(work, stops[who]))

    async def placements(who: str) -> int:
        client = fakeredis.FakeAsyncRedis(server=servers[who], decode_responses=True)
        return len(await client.keys("*placement*"))

    a = replica("a")
    await _until(lambda: placements("a"))
    b = replica("b")
    await asyncio.sleep(0.3)  # b campaigns for several retry periods meanwhile
    assert await placements("b") == 0
    stops["a"].set()
    await a
    await _until(lambda: placements("b"))
    stops["b"].set()
    await b


async def _until(check: Callable[[], Awaitable[int]], tries: int = 500) -> None:
    for _ in range(tries):
        if await check():
            return
        await asyncio.sleep(0.02)
    raise AssertionError("never came true")


async def test_a_lease_call_that_never_answers_is_a_failed_try() -> None:
    class Hanging(MemoryLeases):
        async def get(self, namespace: str, name: str) -> LeaseRecord | None:
            await asyncio.Event().wait()  # an API server that accepted and went silent
            return None

    settings = ElectionSettings(
        NAME, NS, "a", lease_duration_s=0.3, renew_deadline_s=0.2, retry_period_s=0.05
    )
    elector = LeaderElector(Hanging(), settings)
    assert await elector._try() is False
    assert not elector.leading
