"""DataLoaders over the state store (Redis). Built fresh for every request.

Each loader's batch function is one ``StateStore`` call, that is one Redis round trip,
however many keys a level of the query asks for.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from openrl_inspect.adapters.redis_state import StateStore
from openrl_inspect.loaders.batch import BatchLoader as DataLoader
from openrl_inspect.state.paging import Page, PageRequest
from openrl_inspect.state.records import (
    ModelRecord,
    OpRecord,
    PlacementRecord,
    SessionRecord,
    StepRecord,
    WorkerRecord,
)


def _loader(fn: Any) -> Any:
    return DataLoader(fn)


@dataclass(frozen=True)
class StateLoaders:
    pages: DataLoader[PageRequest, Page]
    sessions: DataLoader[str, SessionRecord | None]
    models: DataLoader[str, ModelRecord | None]
    steps: DataLoader[tuple[str, int], StepRecord | None]
    ops: DataLoader[tuple[str, str], OpRecord | None]
    op_models: DataLoader[str, str | None]
    workers: DataLoader[str, WorkerRecord | None]
    placements: DataLoader[tuple[str, str], PlacementRecord | None]

    @classmethod
    def build(cls, store: StateStore) -> StateLoaders:
        return cls(
            pages=_loader(store.pages),
            sessions=_loader(store.sessions),
            models=_loader(store.models),
            steps=_loader(store.steps),
            ops=_loader(store.ops),
            op_models=_loader(store.op_models),
            workers=_loader(store.workers),
            placements=_loader(store.placements),
        )
