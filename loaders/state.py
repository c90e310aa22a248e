"""DataLoaders over the state store (Redis). Built fresh for every request.

Each loader's batch function is one ``StateStore`` call, that is one Redis round trip,
however many keys a level of the query asks for. ``sampler_batches`` reads through
``RedisSamplerBatches`` over the same store (one round trip a batch too); over a store
that is not the Redis adapter it answers ``BACKEND_NOT_CONFIGURED``.
"""

from __future__ import annotations

from dataclasses import dataclass

from openrl_inspect.adapters.redis import (
    RedisSamplerBatches,
    SamplerBatchRequest,
    SamplerBatchSlice,
    StateStore,
)
from openrl_inspect.core.errors import BackendNotConfigured
from openrl_inspect.loaders.batch import BatchLoader
from openrl_inspect.state.filters import LiveAsk, LiveModels, ModelQuery, SessionQuery
from openrl_inspect.state.paging import Page, PageRequest
from openrl_inspect.state.records import (
    ModelRecord,
    OpRecord,
    PlacementRecord,
    SessionRecord,
    StepRecord,
    WorkerRecord,
)
from openrl_inspect.state.rollup import ModelRollup


@dataclass(frozen=True)
class StateLoaders:
    pages: BatchLoader[PageRequest, Page]
    sessions: BatchLoader[str, SessionRecord | None]
    models: BatchLoader[str, ModelRecord | None]
    steps: BatchLoader[tuple[str, int], StepRecord | None]
    ops: BatchLoader[tuple[str, str], OpRecord | None]
    op_models: BatchLoader[str, str | None]
    workers: BatchLoader[str, WorkerRecord | None]
    placements: BatchLoader[tuple[str, str], PlacementRecord | None]
    sampler_batches: BatchLoader[SamplerBatchRequest, SamplerBatchSlice]
    # (model id, newest steps wanted) -> the model's rollup (state/rollup.py)
    rollups: BatchLoader[tuple[str, int], ModelRollup | None]
    # a filtered list of models (state/filters.py), counted exactly
    model_pages: BatchLoader[ModelQuery, Page]
    # an owner's sessions in a state (state/filters.py), counted exactly
    session_pages: BatchLoader[SessionQuery, Page]
    # the live models counted, the quiet and the recently failed ones (attention)
    live_models: BatchLoader[LiveAsk, LiveModels]

    @classmethod
    def build(cls, store: StateStore) -> StateLoaders:
        reader = RedisSamplerBatches.of(store)

        async def load_batches(requests: list[SamplerBatchRequest]) -> list[SamplerBatchSlice]:
            if reader is None:
                raise BackendNotConfigured("redis", "sampler batches are not readable here")
            return await reader.sampler_batches(requests)

        async def load_live(asks: list[LiveAsk]) -> list[LiveModels]:
            return [await store.live_models(ask) for ask in asks]

        return cls(
            pages=BatchLoader(store.pages),
            sessions=BatchLoader(store.sessions),
            models=BatchLoader(store.models),
            steps=BatchLoader(store.steps),
            ops=BatchLoader(store.ops),
            op_models=BatchLoader(store.op_models),
            workers=BatchLoader(store.workers),
            placements=BatchLoader(store.placements),
            sampler_batches=BatchLoader(load_batches),
            rollups=BatchLoader(store.rollups),
            model_pages=BatchLoader(store.model_pages),
            session_pages=BatchLoader(store.session_pages),
            live_models=BatchLoader(load_live),
        )
