"""DataLoaders over the GPU metrics (Prometheus). Built fresh for every request.

Each key carries what its answer depends on besides the GPU (window, evaluation time,
metric, range); each batch function groups its keys by that and makes ONE
``GpuMetrics`` call per group, with every GPU of the group. A query level that asks for
the duty of any number of GPUs, workers, placements or models over one window is one
``duty`` call, which the Prometheus implementation answers with one query per duty
metric: the number of Prometheus queries of a request depends on the windows and
metrics it asks for, never on the number of GPUs.

Without a metrics backend every batch function raises ``BackendNotConfigured``, so the
fields that need it go null with ``BACKEND_NOT_CONFIGURED``.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from openrl_inspect.adapters.prometheus import (
    BACKEND,
    Activity,
    Duty,
    GpuKey,
    GpuMetrics,
    GpuSeries,
    HeldInterval,
    MetricsSource,
    NodeDuty,
    RawQuery,
    RawQuerySettings,
    VllmStats,
    gather,
)
from openrl_inspect.core.errors import BackendNotConfigured
from openrl_inspect.loaders.batch import BatchLoader

K = TypeVar("K", bound=Hashable)
G = TypeVar("G", bound=Hashable)
I = TypeVar("I")  # noqa: E741 - the item a key contributes to its group's call
V = TypeVar("V")

# (GPU, window seconds, evaluated at)
DutyKey = tuple[GpuKey, float, float]
# (node name, window seconds, evaluated at)
NodeDutyKey = tuple[str, float, float]
# (GPU, metric, start, end, requested step or None)
SeriesKey = tuple[GpuKey, str, float, float, float | None]
# (held intervals of one group, the group's window tag): groups of one tag share a call
ActivityKey = tuple[tuple[HeldInterval, ...], float]
# (pod, window seconds, evaluated at)
VllmKey = tuple[str, float, float]


def not_configured() -> BackendNotConfigured:
    return BackendNotConfigured(BACKEND, "Prometheus is not configured")


def grouped(
    group_of: Callable[[K], G],
    item_of: Callable[[K], I],
    call: Callable[[G, list[I]], Awaitable[Sequence[V]]],
) -> Callable[[list[K]], Awaitable[list[V | None]]]:
    """A batch function: the keys grouped by ``group_of``, one ``call`` per group
    (concurrently), each answer put back at its key's position."""

    async def load(keys: list[K]) -> list[V | None]:
        groups: dict[G, list[int]] = {}
        for i, key in enumerate(keys):
            groups.setdefault(group_of(key), []).append(i)
        order = list(groups)
        calls = [functools.partial(call, g, [item_of(keys[i]) for i in groups[g]]) for g in order]
        answers = await gather(calls)
        out: list[V | None] = [None] * len(keys)
        for g, answer in zip(order, answers, strict=True):
            positions = groups[g]
            if len(answer) != len(positions):
                raise RuntimeError("metrics answer does not match its keys")
            for i, value in zip(positions, answer, strict=True):
                out[i] = value
        return out

    return load


@dataclass(frozen=True)
class MetricsLoaders:
    """Per-request loaders over ``GpuMetrics``, and the guarded raw query."""

    duty: BatchLoader[DutyKey, Duty | None]
    node_duty: BatchLoader[NodeDutyKey, NodeDuty | None]
    series: BatchLoader[SeriesKey, GpuSeries | None]
    activity: BatchLoader[ActivityKey, Activity | None]
    vllm: BatchLoader[VllmKey, VllmStats | None]
    raw: RawQuery
    configured: bool

    def require(self) -> None:
        """Raise ``BackendNotConfigured`` when there is no metrics backend."""
        if not self.configured:
            raise not_configured()

    @classmethod
    def build(
        cls,
        metrics: GpuMetrics | None,
        source: MetricsSource | None = None,
        raw: RawQuerySettings | None = None,
    ) -> MetricsLoaders:
        def need() -> GpuMetrics:
            if metrics is None:
                raise not_configured()
            return metrics

        async def duty(g: tuple[float, float], keys: list[GpuKey]) -> list[Duty | None]:
            return await need().duty(keys, g[0], at=g[1])

        async def node_duty(g: tuple[float, float], nodes: list[str]) -> list[NodeDuty | None]:
            return await need().node_duty(nodes, g[0], at=g[1])

        async def series(
            g: tuple[str, float, float, float | None], keys: list[GpuKey]
        ) -> list[GpuSeries | None]:
            metric, start, end, step = g
            return await need().series(keys, metric, start, end, step)

        async def activity(
            g: float, groups: list[tuple[HeldInterval, ...]]
        ) -> list[Activity | None]:
            return await need().activity(groups)

        async def vllm(g: tuple[float, float], pods: list[str]) -> list[VllmStats | None]:
            return await need().vllm(pods, g[0], at=g[1])

        return cls(
            duty=BatchLoader(grouped(lambda k: (k[1], k[2]), lambda k: k[0], duty)),
            node_duty=BatchLoader(grouped(lambda k: (k[1], k[2]), lambda k: k[0], node_duty)),
            series=BatchLoader(grouped(lambda k: k[1:], lambda k: k[0], series)),
            activity=BatchLoader(grouped(lambda k: k[1], lambda k: k[0], activity)),
            vllm=BatchLoader(grouped(lambda k: (k[1], k[2]), lambda k: k[0], vllm)),
            raw=RawQuery(source, raw or RawQuerySettings()),
            configured=metrics is not None,
        )
