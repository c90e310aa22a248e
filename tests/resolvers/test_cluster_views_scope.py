"""Scoping over the GPU views' snapshot: a viewer gets the same capacity as an operator
(counts name nobody) and, per GPU, only the holders that are its own models' pods; the
degraded flags follow the kinds each answer is made of."""

from __future__ import annotations

import asyncio
import time

import fakeredis
import pytest
from openrl_inspect.adapters.kubernetes.memory import MemoryKubernetesSource
from openrl_inspect.adapters.redis import RedisStateStore
from openrl_inspect.core.principal import Principal, Role
from openrl_inspect.core.settings import Bounds, Settings
from openrl_inspect.resolvers.cluster import capacity as cluster_capacity
from openrl_inspect.resolvers.cluster import holders as cluster_holders
from openrl_inspect.resolvers.cluster import reads as cluster_reads
from openrl_inspect.resolvers.context import Backends, Context
from openrl_inspect.simulator import SimConfig
from openrl_inspect.simulator.kube_twin import mirror_kubernetes
from support.harness import populate

pytestmark = pytest.mark.anyio


async def world() -> tuple[Backends, dict[str, str]]:
    server = fakeredis.FakeServer()
    client = fakeredis.FakeAsyncRedis(server=server, decode_responses=True)
    sim = await populate(client, SimConfig(seed=5), time.time())
    twin = MemoryKubernetesSource()
    mirror_kubernetes(sim, twin)
    store = RedisStateStore.in_memory(server)
    sessions = await store.sessions(sorted({m.session_id for m in sim.models.values()}))
    owner = {s.id: s.owner for s in sessions if s is not None and not isinstance(s, Exception)}
    return Backends(state=store, kubernetes=twin), {
        mid: owner[m.session_id] for mid, m in sim.models.items()
    }


async def holders_by_gpu(ctx: Context) -> dict[str, list[str | None]]:
    page = await cluster_reads.nodes(ctx, 1000, None)
    gpus = [
        g
        for listing in await asyncio.gather(
            *(cluster_reads.node_gpus(ctx, rec.name, 64, None) for _, rec in page.items)
        )
        for _, g in listing.items
    ]
    out: dict[str, list[str | None]] = {}
    for g, held in zip(gpus, await cluster_holders.gpus_held(ctx, gpus), strict=True):
        out[g.uuid or ""] = [h.pod_record.model_id if h.pod_record else None for h in held.holders]
    return out


async def test_a_viewer_sees_all_capacity_and_only_its_holders() -> None:
    backends, owner_of = await world()
    operator = Context.build(backends, settings=Settings(bounds=Bounds(max_page_size=1000)))
    everyone = await holders_by_gpu(operator)
    held_models = {m for ms in everyone.values() for m in ms if m}
    viewer_owner = owner_of[sorted(held_models)[0]]
    viewer = Principal(viewer_owner, Role.VIEWER, frozenset({viewer_owner}))
    ctx = Context.build(backends, viewer, Settings(bounds=Bounds(max_page_size=1000)))

    assert await cluster_capacity.cluster_capacity(ctx) == await cluster_capacity.cluster_capacity(
        operator
    )
    mine = await holders_by_gpu(ctx)
    assert mine.keys() == everyone.keys()
    for uuid, models in everyone.items():
        assert mine[uuid] == [m for m in models if m and owner_of[m] == viewer_owner]
    assert any(mine.values()) and any(m and owner_of[m] != viewer_owner for m in held_models)


async def test_degraded_flags_follow_the_kinds_read() -> None:
    backends, _ = await world()
    twin = backends.kubernetes
    assert isinstance(twin, MemoryKubernetesSource)
    for kinds, capacity_degraded, gpus_degraded in (
        (set(), False, False),
        ({"pods"}, False, False),
        ({"resourceclaims"}, True, False),
        ({"devicetaintrules"}, True, True),
    ):
        twin.degraded_kinds = kinds
        ctx = Context.build(backends)
        node = (await cluster_reads.nodes(ctx, 1, None)).items[0][1]
        assert (await cluster_capacity.cluster_capacity(ctx)).degraded is capacity_degraded, kinds
        assert (await cluster_reads.node_gpus(ctx, node.name, 8, None)).degraded is gpus_degraded, (
            kinds
        )
