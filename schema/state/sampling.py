"""Sampling from the batches the samplers recorded in Redis: stats and the batches.

``ModelSamplingFields`` is the mixin ``Model`` inherits. Both fields read Redis (one round
trip for every model of a query); when Redis fails they go null with its coded error.
Not to be confused with ``Model.sampling``, the vLLM engine's own stats from Prometheus.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Protocol, cast

import strawberry
from openrl_inspect.resolvers.state import sampling_reads
from openrl_inspect.resolvers.state.sampling import BatchBasics
from openrl_inspect.resolvers.state.sampling import SamplingStats as Stats
from openrl_inspect.schema.common import Info, ts
from openrl_inspect.schema.connection import After, Connection, First
from openrl_inspect.state.records import SamplerBatchRecord

StatsWindow = Annotated[
    float,
    strawberry.argument(
        description=f"Seconds before now (from {sampling_reads.MIN_WINDOW_S:g} to "
        f"{sampling_reads.MAX_WINDOW_S:g})."
    ),
]


@strawberry.type(description="One batch a sampler recorded.")
class SamplerBatch:
    id: str = strawberry.field(description="The recorder's record id.")
    at: datetime = strawberry.field(description="When the batch ended (when it was recorded).")
    worker: str | None = strawberry.field(description="The sampler worker id, if recorded.")
    op_id: str | None = strawberry.field(description="The `sample` op it served, if recorded.")
    batch_size: int | None = strawberry.field(description="Requests in the batch, if recorded.")
    prompt_tokens: int | None = strawberry.field(description="Prompt tokens it read, if recorded.")
    generated_tokens: int | None = strawberry.field(description="Tokens it generated, if recorded.")
    latency_seconds: float | None = strawberry.field(
        description="How long the batch ran, seconds, if recorded."
    )
    queue_depth: int | None = strawberry.field(description="Requests waiting behind it.")
    tokens_per_second: float | None = strawberry.field(
        description="Its generated tokens over its latency."
    )

    @classmethod
    def from_record(cls, rec: SamplerBatchRecord) -> SamplerBatch:
        rate = None
        if rec.generated_tokens is not None and rec.latency_s:
            rate = rec.generated_tokens / rec.latency_s
        return cls(
            id=rec.id,
            at=ts(rec.at),  # type: ignore[arg-type]  # a time is never None here
            worker=rec.worker,
            op_id=rec.op_id,
            batch_size=rec.batch_size,
            prompt_tokens=rec.prompt_tokens,
            generated_tokens=rec.generated_tokens,
            latency_seconds=rec.latency_s,
            queue_depth=rec.queue_depth,
            tokens_per_second=rate,
        )


@strawberry.type
class SamplingBasics:
    """What a set of batches did. Quantiles are by rank; null when no batch said."""

    batches_read: int = strawberry.field(description="Batches these numbers are over.")
    generated_tokens: float = strawberry.field(description="Tokens generated, summed.")
    prompt_tokens: float = strawberry.field(description="Prompt tokens read, summed.")
    tokens_per_second: float | None = strawberry.field(
        description="Generated tokens per wall second: over the span from the first "
        "batch's start to the last one's end (idle time between batches lowers it)."
    )
    batch_tokens_per_second: float | None = strawberry.field(
        description="Generated tokens over the batches' summed latency: the rate while "
        "a batch runs."
    )
    batch_size_median: float | None = strawberry.field(description="Median requests per batch.")
    batch_size_p90: float | None = strawberry.field(
        description="90th percentile of requests per batch."
    )
    latency_median_seconds: float | None = strawberry.field(
        description="Median batch latency, seconds."
    )
    latency_p90_seconds: float | None = strawberry.field(
        description="90th percentile of batch latency, seconds."
    )
    queue_depth_latest: int | None = strawberry.field(
        description="Requests waiting behind the newest batch."
    )
    queue_depth_median: float | None = strawberry.field(
        description="Median of the requests waiting behind each batch."
    )
    first_batch_at: datetime | None = strawberry.field(
        description="When the oldest batch read ended (UTC)."
    )
    last_batch_at: datetime | None = strawberry.field(
        description="When the newest batch read ended (UTC)."
    )

    @staticmethod
    def basics(b: BatchBasics) -> dict[str, object]:
        return {
            "batches_read": b.batches,
            "generated_tokens": float(b.generated_tokens),
            "prompt_tokens": float(b.prompt_tokens),
            "tokens_per_second": b.tokens_per_s,
            "batch_tokens_per_second": b.batch_tokens_per_s,
            "batch_size_median": b.batch_size_median,
            "batch_size_p90": b.batch_size_p90,
            "latency_median_seconds": b.latency_median_s,
            "latency_p90_seconds": b.latency_p90_s,
            "queue_depth_latest": b.queue_depth_latest,
            "queue_depth_median": b.queue_depth_median,
            "first_batch_at": ts(b.first_at),
            "last_batch_at": ts(b.last_at),
        }


@strawberry.type(description="One sampler worker's batches in the window.")
class SamplerWorkerSampling(SamplingBasics):
    worker: str | None = strawberry.field(description="Null: batches without a worker id.")


@strawberry.type(
    description="A model's sampling over a window, from the batches its samplers "
    "recorded, against its baseline: the same throughput over the batches recorded "
    "before the window."
)
class SamplingStats(SamplingBasics):
    window_seconds: float = strawberry.field(description="The window's length, seconds.")
    window_start: datetime = strawberry.field(description="The window's start (UTC).")
    window_end: datetime = strawberry.field(description="The window's end: the query's now.")
    batches: int = strawberry.field(
        description="Batches in the window, read or not (more than `batchesRead` when `truncated`)."
    )
    truncated: bool = strawberry.field(
        description="Only the window's newest batches were read; the numbers are theirs."
    )
    undecodable: int = strawberry.field(
        description="Stored batches (window and baseline) that could not be read: skipped."
    )
    workers: list[SamplerWorkerSampling] = strawberry.field(
        description="Per sampler worker, most batches first (bounded)."
    )
    workers_truncated: bool = strawberry.field(
        description="More than 50 sampler workers had batches: only the 50 with most are listed."
    )
    baseline_batches: int = strawberry.field(description="Batches the baseline is over.")
    baseline_since: datetime | None = strawberry.field(description="The earliest baseline batch.")
    baseline_tokens_per_second: float | None = strawberry.field(
        description="`tokensPerSecond` over up to 200 batches recorded before the window; "
        "null with fewer than 10."
    )
    ratio_to_baseline: float | None = strawberry.field(
        description="`tokensPerSecond` over `baselineTokensPerSecond`; null with too few "
        "batches for a baseline (under 10 before the window, or under 3 in it)."
    )

    @classmethod
    def from_stats(cls, s: Stats) -> SamplingStats:
        workers = [
            SamplerWorkerSampling(worker=w.worker, **SamplingBasics.basics(w.basics))  # type: ignore[arg-type]
            for w in s.workers
        ]
        return cls(
            window_seconds=s.window_s,
            window_start=ts(s.start),  # type: ignore[arg-type]
            window_end=ts(s.end),  # type: ignore[arg-type]
            batches=s.in_window,
            truncated=s.truncated,
            undecodable=s.undecodable,
            workers=workers,
            workers_truncated=s.workers_truncated,
            baseline_batches=s.baseline_batches,
            baseline_since=ts(s.baseline_start),
            baseline_tokens_per_second=s.baseline_tokens_per_s,
            ratio_to_baseline=s.ratio_to_baseline,
            **SamplingBasics.basics(s.basics),  # type: ignore[arg-type]
        )


class _Ident(Protocol):
    id: strawberry.ID


def _own_id(obj: object) -> str:
    return str(cast(_Ident, obj).id)


@strawberry.type
class ModelSamplingFields:
    """Fields of ``Model`` over its recorded sampler batches (Redis)."""

    @strawberry.field(
        description="Sampler throughput, batch sizes, latency and queue depth over the "
        "last `windowSeconds`, per worker, and against the model's own earlier "
        "throughput; from the batches its samplers recorded."
    )
    async def sampler_batch_stats(
        self, info: Info, window_seconds: StatsWindow = sampling_reads.DEFAULT_WINDOW_S
    ) -> SamplingStats | None:
        stats = await sampling_reads.model_sampling(info.context, _own_id(self), window_seconds)
        return SamplingStats.from_stats(stats)

    @strawberry.field(description="The batches its samplers recorded, newest first.")
    async def sampler_batches(
        self, info: Info, first: First = None, after: After = None
    ) -> Connection[SamplerBatch]:
        page = await sampling_reads.sampler_batches(info.context, _own_id(self), first, after)
        return Connection.of(page, SamplerBatch.from_record)
