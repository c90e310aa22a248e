"""A backend the inspector was started without is said once per answer, not once per
item: the dashboard's overview over many models served with Redis alone."""

from __future__ import annotations

from typing import Any

import fakeredis
import pytest
from openrl_inspect.adapters.redis import RedisStateStore
from openrl_inspect.execution import registry
from openrl_inspect.simulator import SimConfig
from support.harness import GRAPHQL, app_client, populate

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_an_unconfigured_backend_is_one_error_with_its_count() -> None:
    server = fakeredis.FakeServer()
    writer = fakeredis.FakeAsyncRedis(server=server, decode_responses=True)
    await populate(writer, SimConfig(seed=3, sessions=4, models_per_session=5))
    store = RedisStateStore.in_memory(server)
    overview = registry()["ui/overview"].text
    async with app_client(store) as client:
        answer: dict[str, Any] = (await client.post(GRAPHQL, json={"query": overview})).json()
    errors = answer.get("errors", [])
    prometheus = [e for e in errors if e["extensions"].get("backend") == "prometheus"]
    assert len(prometheus) == 1, [e["path"] for e in prometheus]
    assert prometheus[0]["extensions"]["code"] == "BACKEND_NOT_CONFIGURED"
    assert prometheus[0]["extensions"]["fields"] > 1  # the fields it nulled, counted
    assert answer["data"] is not None
