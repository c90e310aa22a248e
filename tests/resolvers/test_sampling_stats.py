"""Sampler stats from recorded batches: the numbers, checked by hand."""

from __future__ import annotations

import math

import pytest
from openrl_inspect.resolvers.state.sampling import (
    MAX_WORKERS,
    basics,
    quantile,
    sampler_throughput,
    sampling_stats,
)
from openrl_inspect.state.records import SamplerBatchRecord

NOW = 1_772_366_400.0


def b(
    at: float,
    gen: int | None = 1000,
    latency: float | None = 1.0,
    *,
    size: int | None = 32,
    prompt: int | None = 100,
    queue: int | None = 0,
    worker: str | None = "s-0",
) -> SamplerBatchRecord:
    return SamplerBatchRecord(
        id=f"r/{at}",
        model_id="m",
        at=at,
        worker=worker,
        op_id=None,
        batch_size=size,
        prompt_tokens=prompt,
        generated_tokens=gen,
        latency_s=latency,
        queue_depth=queue,
    )


def test_throughput_is_tokens_over_the_wall_span_from_first_start_to_last_end() -> None:
    # Batches end at 10, 12 and 20 with latencies 2, 1, 4: the first starts at 8,
    # the last ends at 20, a 12 s span for 600 + 300 + 900 = 1800 tokens.
    batches = [b(10, 600, 2), b(12, 300, 1), b(20, 900, 4)]
    assert sampler_throughput(batches, 0, 100) == pytest.approx(1800 / 12)
    # [start, end) picks by end time: 20 is out, so 900 tokens over 8..12.
    assert sampler_throughput(batches, 10, 20) == pytest.approx(900 / 4)
    # A batch that does not say its tokens neither counts nor stretches the span.
    assert sampler_throughput([*batches, b(50, None, 1)], 0, 100) == pytest.approx(150)


def test_throughput_needs_a_span() -> None:
    assert sampler_throughput([], 0, 1) is None
    assert sampler_throughput([b(10, 500, None)], 0, 100) is None
    assert sampler_throughput([b(10, 500, 0.5)], 0, 100) == pytest.approx(1000)
    # Without latencies the span is between the batches' ends.
    assert sampler_throughput([b(10, 500, None), b(14, 300, None)], 0, 100) == pytest.approx(200)


def test_quantiles_are_by_rank_and_medians_interpolate() -> None:
    values = [float(v) for v in range(1, 11)]  # 1..10
    assert quantile(values, 0.9) == 10.0  # index int(0.9 * 10) = 9
    assert quantile(values[:9], 0.9) == 9.0  # index int(8.1) = 8
    assert quantile([], 0.5) is None
    got = basics([b(1, size=8), b(2, size=16), b(3, size=64), b(4, size=32)])
    assert got.batch_size_median == 24.0  # (16 + 32) / 2
    assert got.batch_size_p90 == 64.0


def test_basics_of_a_window() -> None:
    batches = [
        b(100, 1000, 2.0, size=32, prompt=400, queue=5),
        b(103, 2000, 3.0, size=64, prompt=800, queue=1),
        b(110, 1500, 1.0, size=None, prompt=None, queue=None),
        b(104, 500, None, size=16, prompt=100, queue=9),
    ]
    got = basics(batches)
    assert (got.batches, got.generated_tokens, got.prompt_tokens) == (4, 5000, 1300)
    # Span: first start 100 - 2 = 98, last end 110: 12 s.
    assert got.tokens_per_s == pytest.approx(5000 / 12)
    # While running: the batches with a latency, 4500 tokens over 6 s.
    assert got.batch_tokens_per_s == pytest.approx(750)
    assert (got.batch_size_median, got.batch_size_p90) == (32.0, 64.0)
    assert (got.latency_median_s, got.latency_p90_s) == (2.0, 3.0)
    # The latest batch that said its queue (at 104), and the median of 5, 1, 9.
    assert (got.queue_depth_latest, got.queue_depth_median) == (9, 5.0)
    assert (got.first_at, got.last_at) == (100, 110)


def test_nothing_in_the_window_is_all_zero_and_none() -> None:
    got = sampling_stats([], NOW, 900)
    assert got.basics.batches == 0 and got.basics.tokens_per_s is None
    assert got.workers == () and got.ratio_to_baseline is None
    assert (got.start, got.end, got.in_window, got.baseline_batches) == (NOW - 900, NOW, 0, 0)


def _steady(start: float, count: int, every: float, gen: int) -> list[SamplerBatchRecord]:
    """Back-to-back batches of ``every`` seconds each, ending at start + every * (i + 1)."""
    return [b(start + every * (i + 1), gen, every) for i in range(count)]


def test_the_ratio_to_baseline_compares_throughput_now_with_before() -> None:
    # Before the window: 20 batches of 2 s, 4000 tokens each: 2000 tokens/s.
    before = _steady(NOW - 2000, 20, 2.0, 4000)
    # In the window: 10 batches of 2 s, 1000 tokens each: 500 tokens/s.
    recent = _steady(NOW - 100, 10, 2.0, 1000)
    got = sampling_stats([*recent, *before], NOW, 900)
    assert (got.basics.batches, got.baseline_batches) == (10, 20)
    assert got.basics.tokens_per_s == pytest.approx(500)
    assert got.baseline_tokens_per_s == pytest.approx(2000)
    assert got.ratio_to_baseline == pytest.approx(0.25)
    assert got.baseline_start == NOW - 2000 + 2.0
    # A batch exactly at the window's start is in the window.
    edge = sampling_stats([b(NOW - 900, 10, 1.0)], NOW, 900)
    assert (edge.basics.batches, edge.baseline_batches) == (1, 0)


@pytest.mark.parametrize(("before", "recent"), [(9, 10), (20, 2)])
def test_too_few_batches_give_no_ratio(before: int, recent: int) -> None:
    batches = [*_steady(NOW - 2000, before, 2.0, 4000), *_steady(NOW - 100, recent, 2.0, 1000)]
    got = sampling_stats(batches, NOW, 900)
    assert got.baseline_tokens_per_s == pytest.approx(2000)
    assert got.basics.tokens_per_s == pytest.approx(500)
    assert got.ratio_to_baseline is None


def test_per_worker_rows_most_batches_first_and_bounded() -> None:
    batches = [
        b(NOW - 10, 100, 1.0, worker="s-b"),
        b(NOW - 9, 300, 1.0, worker="s-a"),
        b(NOW - 8, 100, 1.0, worker="s-b", queue=7),
        b(NOW - 7, 50, 1.0, worker=None),
    ]
    got = sampling_stats(batches, NOW, 900)
    assert [(w.worker, w.basics.batches) for w in got.workers] == [
        ("s-b", 2),
        (None, 1),
        ("s-a", 1),
    ]
    s_b = got.workers[0].basics
    assert s_b.tokens_per_s == pytest.approx(200 / 3)  # from NOW - 11 to NOW - 8
    assert s_b.queue_depth_latest == 7 and not got.workers_truncated
    many = [b(NOW - 1, worker=f"w-{i:03d}") for i in range(MAX_WORKERS + 5)]
    cut = sampling_stats(many, NOW, 900)
    assert len(cut.workers) == MAX_WORKERS and cut.workers_truncated
    assert cut.workers[0].worker == "w-000"  # ties by name


def test_what_the_read_saw_is_carried() -> None:
    got = sampling_stats([b(NOW - 1)], NOW, 60, in_window=1500, truncated=True, undecodable=2)
    assert (got.in_window, got.truncated, got.undecodable, got.window_s) == (1500, True, 2, 60)
    assert math.isclose(got.start, NOW - 60)
