"""The collector runs between requests (``web.collector.IdleCollector``), not inside one."""

from __future__ import annotations

import gc

from openrl_inspect.web.collector import GcSettings, IdleCollector


class Garbage:
    def __init__(self) -> None:
        self.me = self  # a cycle: only the collector frees it


def _pending(n: int) -> list[object]:
    return [[] for _ in range(n)]  # lists are tracked: each counts as an allocation


def test_collects_when_idle_and_waits_while_a_request_runs() -> None:
    was = gc.isenabled()
    gc.disable()
    busy = True
    collector = IdleCollector(
        GcSettings(threshold=1_000, max_pending=10**9, full_after=1),
        lambda: busy,
        clock=lambda: 0.0,
    )
    try:
        gc.collect()
        Garbage()
        keep = _pending(2_000)
        collector.step()
        assert collector.collections == 0  # busy, and under max_pending
        busy = False
        collector.step()
        assert collector.collections == 1 and collector.forced == 0
        assert gc.get_count()[0] < 1_000
        del keep
    finally:
        if was:
            gc.enable()


def test_collects_mid_request_past_max_pending() -> None:
    was = gc.isenabled()
    gc.disable()
    collector = IdleCollector(GcSettings(threshold=100, max_pending=1_000), lambda: True)
    try:
        gc.collect()
        keep = _pending(2_000)
        collector.step()
        assert collector.collections == 1 and collector.forced == 1
        del keep
    finally:
        if was:
            gc.enable()


def test_every_few_young_collections_one_is_full() -> None:
    was = gc.isenabled()
    gc.disable()
    collector = IdleCollector(GcSettings(threshold=100, full_after=2), lambda: False)
    full_before = gc.get_stats()[2]["collections"]
    try:
        for _ in range(4):
            keep = _pending(500)
            collector.step()
            del keep
        assert collector.collections == 4
        assert gc.get_stats()[2]["collections"] - full_before == 2
    finally:
        if was:
            gc.enable()


def test_collects_mid_request_when_never_idle_for_long() -> None:
    was = gc.isenabled()
    gc.disable()
    now = [0.0]
    settings = GcSettings(threshold=100, max_pending=10**9, max_wait_s=2.0)
    collector = IdleCollector(settings, lambda: True, clock=lambda: now[0])
    try:
        gc.collect()
        keep = _pending(500)
        collector.step()
        assert collector.collections == 0
        now[0] = 2.5
        collector.step()
        assert collector.collections == 1 and collector.forced == 1
        del keep
    finally:
        if was:
            gc.enable()
