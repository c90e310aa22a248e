"""The freshness window of single flight (``Flights(fresh_for_s=...)``), on a fake clock."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest
from openrl_inspect.execution.single_flight import Flights

pytestmark = pytest.mark.anyio


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def counting() -> tuple[list[int], Callable[[], Awaitable[int]]]:
    runs: list[int] = []

    async def start() -> int:
        runs.append(len(runs))
        return len(runs)

    return runs, start


async def test_an_answer_serves_calls_within_the_window_and_not_after() -> None:
    clock = Clock()
    flights: Flights[str, int] = Flights(fresh_for_s=2.0, clock=clock)
    runs, start = counting()
    assert await flights.join("k", start) == 1
    clock.now += 1.9
    assert await flights.join("k", start) == 1
    assert flights.served_fresh == 1 and len(runs) == 1
    clock.now += 0.2  # 2.1 s after the answer
    assert await flights.join("k", start) == 2
    assert len(runs) == 2


async def test_off_by_default_every_call_after_an_answer_runs() -> None:
    flights: Flights[str, int] = Flights()
    runs, start = counting()
    for _ in range(3):
        await flights.join("k", start)
    assert len(runs) == 3 and flights.served_fresh == 0


async def test_failures_cancellations_and_unkept_results_are_not_served() -> None:
    clock = Clock()
    flights: Flights[str, int] = Flights(fresh_for_s=60.0, clock=clock, keep=lambda r: r > 0)
    calls = 0

    async def failing() -> int:
        nonlocal calls
        calls += 1
        raise RuntimeError("backend down")

    for _ in range(2):
        with pytest.raises(RuntimeError):
            await flights.join("fail", failing)
    assert calls == 2

    async def refused() -> int:
        nonlocal calls
        calls += 1
        return 0  # ``keep`` says no: a refusal is no answer for the next caller

    await flights.join("refused", refused)
    await flights.join("refused", refused)
    assert calls == 4

    gate = asyncio.Event()

    async def slow() -> int:
        await gate.wait()
        return 7

    waiter = asyncio.ensure_future(flights.join("slow", slow))
    await asyncio.sleep(0)
    waiter.cancel()  # the only caller leaves: the work is cancelled, nothing is kept
    with pytest.raises(asyncio.CancelledError):
        await waiter
    gate.set()
    assert await flights.join("slow", slow) == 7
    assert flights.served_fresh == 0


async def test_the_window_keeps_at_most_max_fresh_answers_oldest_out_first() -> None:
    clock = Clock()
    flights: Flights[str, int] = Flights(fresh_for_s=60.0, max_fresh=3, clock=clock)
    runs, start = counting()
    for key in "abcd":
        await flights.join(key, start)
    assert len(runs) == 4
    await flights.join("a", start)  # pushed out by "d": runs again
    assert len(runs) == 5
    await flights.join("d", start)  # still kept
    assert len(runs) == 5 and flights.served_fresh == 1


async def test_a_result_past_half_its_window_is_served_and_refreshed_behind() -> None:
    clock = Clock()
    flights: Flights[str, int] = Flights(fresh_for_s=2.0, clock=clock)
    runs, start = counting()
    assert await flights.join("k", start) == 1
    clock.now += 0.5  # young: served, no refresh
    assert await flights.join("k", start) == 1
    assert flights.refreshed == 0
    clock.now += 1.0  # 1.5 s old: served at once, a refresh starts behind it
    assert await flights.join("k", start) == 1
    assert flights.refreshed == 1
    await asyncio.sleep(0)  # the refresh runs (nobody waits on it)
    await asyncio.sleep(0)
    assert len(runs) == 2
    clock.now += 1.0  # 2.5 s after the first answer, 1 s after the refresh
    assert await flights.join("k", start) == 2
    assert len(runs) == 2


async def test_a_refresh_that_fails_or_overruns_keeps_the_last_answer_until_it_expires() -> None:
    clock = Clock()
    flights: Flights[str, int] = Flights(fresh_for_s=2.0, clock=clock, refresh_deadline_s=0.05)
    assert await flights.join("k", lambda: asyncio.sleep(0, 5)) == 5

    async def hangs() -> int:
        await asyncio.sleep(60)
        return 6

    async def landed() -> None:
        async with asyncio.timeout(5):
            while len(flights):  # noqa: ASYNC110  # the refresh's deadline ends it
                await asyncio.sleep(0.01)

    clock.now += 1.5
    assert await flights.join("k", hangs) == 5  # served; the refresh hangs
    await landed()
    assert await flights.join("k", hangs) == 5  # still served; another refresh tries
    await landed()
    clock.now += 1.0  # past the window: nothing fresh, the call waits for its own run
    assert await flights.join("k", lambda: asyncio.sleep(0, 7)) == 7


@pytest.mark.parametrize(
    ("argv", "env", "window"),
    [
        (["serve"], {}, 2.0),
        (["serve"], {"OPENRL_INSPECT_FRESH_FOR_S": "0"}, 0.0),
        (["serve"], {"OPENRL_INSPECT_FRESH_FOR_S": "5"}, 5.0),
        (["demo"], {}, 0.0),
    ],
)
def test_serve_starts_with_a_two_second_window(
    argv: list[str], env: dict[str, str], window: float
) -> None:
    from openrl_inspect.cli.main import inspector_settings, parser

    assert inspector_settings(parser().parse_args(argv), env).switches.fresh_for_s == window


async def test_healthz_states_the_window() -> None:
    import fakeredis
    from openrl_inspect.adapters.redis import RedisStateStore
    from openrl_inspect.core.settings import Settings, Switches
    from openrl_inspect.web.app import PREFIX
    from support.harness import app_client

    settings = Settings(switches=Switches(fresh_for_s=2.0))
    async with app_client(RedisStateStore.in_memory(fakeredis.FakeServer()), settings) as client:
        body = (await client.get(f"{PREFIX}/healthz")).json()
    assert body["freshForSeconds"] == 2.0
