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


async def test_a_cancelled_load_many_cancels_its_keys_and_an_abandoned_fetch() -> None:
    started, finished = asyncio.Event(), False

    async def fetch(keys: list[int]) -> list[int]:
        nonlocal finished
        started.set()
        await asyncio.sleep(10)
        finished = True
        return keys

    loader: BatchLoader[int, int] = BatchLoader(fetch)
    waiter = asyncio.ensure_future(loader.load_many([1, 2, 3]))
    await started.wait()
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    futures = [loader.load(k) for k in (1, 2, 3)]  # the cached futures of those keys
    assert all(f.cancelled() for f in futures)
    await asyncio.sleep(0.01)
    assert not finished and loader._task is None


async def test_a_key_cancelled_elsewhere_fails_the_load_not_its_waiter() -> None:
    async def fetch(keys: list[int]) -> list[int]:
        return keys

    loader: BatchLoader[int, int] = BatchLoader(fetch)
    loader.load(2).cancel()  # another waiter gave up on key 2
    # As with a gather of the keys: the cancelled key is an outcome, not isolated, so
    # raised after every key settled; the other keys are answered.
    with pytest.raises(asyncio.CancelledError):
        await loader.load_each([1, 2, 3], LookupError)
    assert loader.load(1).result() == 1 and loader.load(3).result() == 3
