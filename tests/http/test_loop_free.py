"""One request's work does not hold the others: the diagnosis runs off the event loop,
a request past its deadline stops judging, and one principal holds one slot for
expensive work at most.

No timing here: while the fan-out of issue 25 runs, ``/healthz`` and a small query are
answered before it ends.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import fakeredis
import pytest
from openrl_inspect.adapters.redis import RedisStateStore
from openrl_inspect.core.principal import Principal, Role
from openrl_inspect.core.settings import Bounds, Settings
from openrl_inspect.execution import build_schema
from openrl_inspect.execution.run import Request, Runner
from openrl_inspect.resolvers.context import Backends
from openrl_inspect.resolvers.summary import model as summary_model
from openrl_inspect.simulator import SimConfig
from support.harness import GRAPHQL, app_client, populate

pytestmark = pytest.mark.anyio

FAN_OUT = "{ sessions(first: 8) { nodes { models(first: 100) { nodes { id session { summary(worst: 1) { models } } } } } } }"  # fmt: skip
HEAVY = "{ " + " ".join(f"a{i}: " + FAN_OUT[2:-2] for i in range(4)) + " }"
OPEN = Bounds(max_nodes=10**9, max_aliases=100, expensive_nodes=10**9, request_deadline_s=0)


class Judged:
    """Counts the models judged, from whichever thread judges them."""

    def __init__(self) -> None:
        self.count = 0
        self._lock = threading.Lock()

    def add(self) -> None:
        with self._lock:
            self.count += 1


@pytest.fixture
def judged(monkeypatch: pytest.MonkeyPatch) -> Judged:
    counter = Judged()
    real = summary_model.diagnose  # type: ignore[attr-defined]

    def counting(evidence: Any) -> Any:
        counter.add()
        return real(evidence)

    monkeypatch.setattr(summary_model, "diagnose", counting)
    return counter


@pytest.fixture(scope="module")
def server() -> fakeredis.FakeServer:
    return fakeredis.FakeServer()


@pytest.fixture(scope="module")
async def store(server: fakeredis.FakeServer) -> RedisStateStore:
    config = SimConfig(seed=4, sessions=4, models_per_session=12, steps_per_model=3,
                       nodes_per_pool=(("h100", 40), ("h200", 40)))  # fmt: skip
    await populate(fakeredis.FakeAsyncRedis(server=server, decode_responses=True), config)
    return RedisStateStore.in_memory(server)


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


async def _started(judged: Judged, heavy: asyncio.Task[Any]) -> None:
    # Polled: the count moves on the judging thread, which sets no loop event.
    while judged.count == 0 and not heavy.done():  # noqa: ASYNC110
        await asyncio.sleep(0.01)


async def test_healthz_and_a_small_query_answer_while_the_fan_out_runs(
    store: RedisStateStore, judged: Judged
) -> None:
    # Every model judged afresh (no memo of judgements): the count measures the work.
    async with app_client(store, Settings(bounds=OPEN), judgements=None) as client:
        heavy = asyncio.create_task(client.post(GRAPHQL, json={"query": HEAVY}))
        await _started(judged, heavy)
        before = judged.count
        health = await client.get("/api/v1/inspect/healthz")
        small = await client.post(GRAPHQL, json={"query": "{ sessions(first: 1) { totalCount } }"})
        during = judged.count - before
        still_running = not heavy.done()
        done = await heavy
    assert health.status_code == 200 and small.status_code == 200
    assert "errors" not in small.json()
    assert still_running, "the fan-out ended before the probe was answered"
    assert done.status_code == 200 and "errors" not in done.json()
    total = judged.count
    # The probe and the small query were answered before the work was all done. (How
    # much of it they waited for depends on the host: on a quiet one a small part; a CI
    # run measured 2,584 of 2,864 judgements, the judging thread and the heavy query's
    # reads sharing the GIL with them: see the note of issue 25.)
    assert during < total, (during, total)


async def test_a_request_past_its_deadline_stops_judging(
    store: RedisStateStore, judged: Judged
) -> None:
    settings = Settings(bounds=Bounds(**{**vars(OPEN), "request_deadline_s": 0.5}))
    async with app_client(store, settings, judgements=None) as client:
        late = await client.post(GRAPHQL, json={"query": HEAVY})
        assert late.json()["errors"][0]["extensions"]["code"] == "DEADLINE_EXCEEDED"
        after = judged.count
        for _ in range(3):  # the loop and the judging thread go on a while
            await client.get("/api/v1/inspect/healthz")
            await asyncio.sleep(0.05)
    # At most the judgement under way when it was cancelled finishes.
    assert judged.count - after <= 1


async def test_one_principal_holds_one_expensive_slot(store: RedisStateStore) -> None:
    bounds = Bounds(expensive_nodes=50, max_expensive_requests=2, busy_wait_s=0.2)
    runner = Runner(build_schema(), Settings(bounds=bounds))
    slow = _Slow(store)
    backends = Backends(state=slow)
    alice, bob = (Principal(n, Role.VIEWER, frozenset({n})) for n in ("alice", "bob"))
    big = Request("{ sessions(first: 60) { nodes { id } } }")
    other = Request("{ sessions(first: 61) { nodes { id } } }")
    first = asyncio.create_task(runner.run(big, backends, alice))
    await slow.started.wait()
    again = await runner.run(other, backends, alice)
    theirs = asyncio.create_task(runner.run(other, backends, bob))
    await asyncio.sleep(0.05)
    slow.release.set()
    mine, answer = await first, await theirs
    assert again.codes == ["BUSY"] and not again.ran
    assert answer.errors == [] and mine.errors == []


class _Slow:
    """The store, whose page reads wait until released (so a query stays running)."""

    def __init__(self, store: RedisStateStore) -> None:
        self._store = store
        self.started = asyncio.Event()
        self.release = asyncio.Event()

    def __getattr__(self, name: str) -> Any:
        target = getattr(self._store, name)
        if name != "pages":
            return target

        async def held(*args: Any, **kwargs: Any) -> Any:
            self.started.set()
            await self.release.wait()
            return await target(*args, **kwargs)

        return held
