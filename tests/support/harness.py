"""Building the app over a given state store, and querying it in-process."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import fakeredis
import httpx
from openrl_inspect.adapters.redis import StateStore
from openrl_inspect.core.settings import Settings
from openrl_inspect.recorder import AsyncRecorder, RecorderSettings
from openrl_inspect.resolvers.context import Backends
from openrl_inspect.simulator import SimConfig, Simulation, world
from openrl_inspect.web.app import PREFIX, create_app
from openrl_inspect.web.health import HealthSettings

GRAPHQL = f"{PREFIX}/graphql"


async def populate(client: Any, config: SimConfig, now: float | None = None) -> Simulation:
    """Write a simulated history through the recorder and flush it."""
    # No counters hash: a populated history is the simulation's records only; a fixed
    # recorder id keeps record ids (client logs, sampler batches) the same run to run.
    # One pipeline, however large: a real server may take longer than the recorder's
    # usual 5 s per attempt for a 1,000-model world, and a retry would send it all again.
    rec = AsyncRecorder(
        client,
        batch_size=1 << 30,
        settings=RecorderSettings(
            publish_counters=False, recorder_id="sim", attempt_timeout_s=600.0
        ),
    )
    sim = Simulation(config, rec)
    world.populate(sim, time.time() if now is None else now)
    await rec.flush(600.0)
    # Every record written: a world half filled (or still filling behind the test) would
    # make whatever runs next measure the fill. (Tests record more through ``sim.rec``.)
    st = rec.stats()
    assert st.pending == 0 and st.dropped == 0 and st.written == st.recorded, st
    return sim


@asynccontextmanager
async def app_client(
    store: StateStore, limits: Settings | None = None, **others: Any
) -> AsyncIterator[httpx.AsyncClient]:
    """An httpx client on the ASGI app, with the app's lifespan running.

    ``others`` are the optional backends (``kubernetes=``, ``gpu_metrics=``, ``prometheus=``,
    ``logs=``), as in ``context.Backends``.
    """

    @asynccontextmanager
    async def backends() -> AsyncIterator[Backends]:
        yield Backends(state=store, **others)

    # No background probes: tests count the backend calls their queries make.
    app = create_app(backends, limits, health=HealthSettings(interval_s=0))
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://inspector") as client,
    ):
        yield client


async def gql(client: httpx.AsyncClient, query: str, **variables: Any) -> dict[str, Any]:
    resp = await client.post(GRAPHQL, json={"query": query, "variables": variables})
    assert resp.status_code == 200, resp.text
    body: dict[str, Any] = resp.json()
    return body


def fake_server() -> fakeredis.FakeServer:
    return fakeredis.FakeServer()
