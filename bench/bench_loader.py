"""Benchmark: what ``BatchLoader`` costs per key, against another version of it.

A level is ``--parents`` concurrent ``load_many`` calls of ``--keys`` keys each (and,
with ``--singles``, one ``load`` per parent as well), answered by a batch function that
returns the keys; ``--levels`` levels make a round. With ``--against PATH`` (a copy of
an older ``loaders/batch.py``, e.g. ``git show REV:loaders/batch.py > /tmp/old.py``) the
two loaders alternate round by round in one process and the per-round ratio is
reported; without it, the current loader alone.

    .venv/bin/python bench/bench_loader.py [--against /tmp/old.py] [--rounds 7]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import statistics
import time
from types import ModuleType
from typing import Any

from openrl_inspect.loaders import batch as current


def _module(path: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location("batch_other", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def _fetch(keys: list[Any]) -> list[Any]:
    return keys


async def _round(module: ModuleType, args: argparse.Namespace) -> float:
    async def one(loader: Any, parent: int) -> list[Any]:
        out: list[Any] = await loader.load_many([(parent, i) for i in range(args.keys)])
        return out

    async def single(loader: Any, parent: int) -> Any:
        return await loader.load((parent, 0))

    start = time.perf_counter()
    for _ in range(args.levels):
        loader = module.BatchLoader(_fetch)
        calls = [one(loader, p) for p in range(args.parents)]
        if args.singles:
            calls += [single(loader, p) for p in range(args.parents)]
        await asyncio.gather(*calls)
    return time.perf_counter() - start


def _spread(values: list[float], unit: float = 1.0, digits: int = 0) -> str:
    v = [x * unit for x in values]
    return f"{statistics.median(v):.{digits}f} [{min(v):.{digits}f} - {max(v):.{digits}f}]"


async def main(args: argparse.Namespace) -> None:
    other = _module(args.against) if args.against else None
    mine: list[float] = []
    theirs: list[float] = []
    for r in range(args.rounds):
        # Alternate which goes first, so drift lands on both alike.
        order = [(current, mine), (other, theirs)] if other else [(current, mine)]
        if r % 2:
            order.reverse()
        for module, times in order:
            assert module is not None
            times.append(await _round(module, args))
    keys = args.levels * args.parents * args.keys
    print(f"{keys:,} keys per round ({args.levels} levels x {args.parents} x {args.keys})")
    print(f"current: {_spread(mine, 1000)} ms per round")
    if other:
        print(f"other:   {_spread(theirs, 1000)} ms per round")
        ratios = [m / t for m, t in zip(mine, theirs, strict=True)]
        print(f"current / other per round: {_spread(ratios, 1, 3)}")
        extra = [(m - t) / keys * 1e6 for m, t in zip(mine, theirs, strict=True)]
        print(f"difference per key: {_spread(extra, 1, 3)} us")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", help="path of another loaders/batch.py to compare")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--levels", type=int, default=20)
    parser.add_argument("--parents", type=int, default=1000)
    parser.add_argument("--keys", type=int, default=20)
    parser.add_argument("--singles", action="store_true", help="one load() per parent too")
    asyncio.run(main(parser.parse_args()))
