"""The batching loader: one call per settled level, key order, errors to every waiter."""

from __future__ import annotations

import asyncio

import pytest
from openrl_inspect.loaders.batch import BatchLoader

pytestmark = pytest.mark.anyio


async def test_loads_arriving_over_a_few_iterations_share_one_batch() -> None:
    calls: list[list[int]] = []

    async def fetch(keys: list[int]) -> list[int]:
        calls.append(keys)
        return [k * 10 for k in keys]

    loader: BatchLoader[int, int] = BatchLoader(fetch)

    async def late(key: int, hops: int) -> int:
        for _ in range(hops):  # a longer chain of futures, as graphql-core's are
            await asyncio.sleep(0)
        return await loader.load(key)

    got = await asyncio.gather(*(late(k, k % 3) for k in range(50)), loader.load(7))
    assert got == [k * 10 for k in range(50)] + [70]
    assert len(calls) == 1 and sorted(calls[0]) == list(range(50))  # 7 asked twice, fetched once


async def test_a_failing_batch_fails_every_waiter_and_the_next_batch_is_fresh() -> None:
    attempts = 0

    async def fetch(keys: list[str]) -> list[str]:
        nonlocal attempts
        attempts += 1
        if attempts == 1:
            raise ConnectionError("down")
        return keys

    loader: BatchLoader[str, str] = BatchLoader(fetch)
    results = await asyncio.gather(loader.load("a"), loader.load("b"), return_exceptions=True)
    assert all(isinstance(r, ConnectionError) for r in results)
    assert await loader.load("c") == "c"


async def test_wrong_number_of_results_is_an_error() -> None:
    async def fetch(keys: list[int]) -> list[int]:
        return []

    loader: BatchLoader[int, int] = BatchLoader(fetch)
    with pytest.raises(RuntimeError, match="returned 0 for 1 keys"):
        await loader.load(1)


async def test_an_exception_as_a_value_fails_its_own_key_only() -> None:
    async def fetch(keys: list[int]) -> list[int | BaseException]:
        return [LookupError(f"no {k}") if k % 2 else k for k in keys]

    loader: BatchLoader[int, int] = BatchLoader(fetch)
    results = await asyncio.gather(*(loader.load(k) for k in range(4)), return_exceptions=True)
    assert results[0] == 0 and results[2] == 2
    assert isinstance(results[1], LookupError) and str(results[1]) == "no 1"
    assert isinstance(results[3], LookupError)


async def test_load_many_raises_the_first_failure_in_key_order() -> None:
    async def fetch(keys: list[int]) -> list[int | BaseException]:
        return [ValueError(str(k)) if k >= 2 else k for k in keys]

    loader: BatchLoader[int, int] = BatchLoader(fetch)
    assert await loader.load_many([0, 1]) == [0, 1]
    with pytest.raises(ValueError, match=r"^3$"):
        await loader.load_many([3, 1, 2])


async def test_a_cancelled_load_many_cancels_an_abandoned_fetch_and_a_later_load_asks_again() -> (
    None
):
    started, finished, calls = asyncio.Event(), False, 0

    async def fetch(keys: list[int]) -> list[int]:
        nonlocal finished, calls
        calls += 1
        started.set()
        if calls == 1:
            await asyncio.sleep(10)
        finished = True
        return keys

    loader: BatchLoader[int, int] = BatchLoader(fetch)
    waiter = asyncio.ensure_future(loader.load_many([1, 2, 3]))
    await started.wait()
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    await asyncio.sleep(0.01)
    assert not finished and loader._task is None
    assert all(loader._cache[k].cancelled() for k in (1, 2, 3))
    assert await loader.load_many([3, 1]) == [3, 1] and calls == 2


async def test_a_waiter_cancelled_leaves_the_other_waiters_of_its_keys_alone() -> None:
    # graphql-core cancels the siblings of a failed field; a sibling's keys are often
    # another field's too (two root fields reading one model's events): those must
    # still get their values, not a CancelledError their own task never asked for.
    release, calls = asyncio.Event(), 0

    async def fetch(keys: list[int]) -> list[int]:
        nonlocal calls
        calls += 1
        await release.wait()
        return [k * 10 for k in keys]

    loader: BatchLoader[int, int] = BatchLoader(fetch)
    gone = asyncio.ensure_future(loader.load_many([1, 2, 3]))
    single_gone = asyncio.ensure_future(loader.load(2))
    staying = asyncio.ensure_future(loader.load_each([2, 3], LookupError))
    single = asyncio.ensure_future(loader.load(3))
    for _ in range(10):
        await asyncio.sleep(0)
    assert calls == 1
    gone.cancel()
    single_gone.cancel()
    for _ in range(5):
        await asyncio.sleep(0)
    release.set()
    assert await staying == [20, 30] and await single == 30 and calls == 1
    assert gone.cancelled() and single_gone.cancelled()


async def test_a_key_cancelled_elsewhere_still_answers_its_other_waiters() -> None:
    async def fetch(keys: list[int]) -> list[int]:
        return keys

    loader: BatchLoader[int, int] = BatchLoader(fetch)
    loader.load(2).cancel()  # another waiter gave up on key 2
    assert await loader.load_each([1, 2, 3], LookupError) == [1, 2, 3]
    assert loader.load(1).result() == 1 and loader.load(2).result() == 2


async def test_a_batch_abandoned_as_a_new_waiter_joins_is_asked_again() -> None:
    calls: list[list[int]] = []
    block = asyncio.Event()

    async def fetch(keys: list[int]) -> list[int]:
        calls.append(keys)
        if len(calls) == 1:
            await block.wait()
        return keys

    loader: BatchLoader[int, int] = BatchLoader(fetch)
    first = asyncio.ensure_future(loader.load_many([5]))
    for _ in range(10):
        await asyncio.sleep(0)
    # The only waiter leaves and, in the same iteration, a new one joins the key: the
    # cancelled batch must not hand the new waiter a CancelledError.
    first.cancel()
    late = asyncio.ensure_future(loader.load_many([5]))
    assert await late == [5] and len(calls) == 2
