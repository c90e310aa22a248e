"""Through the API: failed, stalled and stuck models show no pace from their old steps,
and say how long since their last step; stepping models keep theirs."""

from __future__ import annotations

import time
from typing import Any

import fakeredis
import pytest
from openrl_inspect.adapters.redis import RedisStateStore
from openrl_inspect.simulator import SimConfig
from support.harness import app_client, gql, populate

pytestmark = pytest.mark.anyio

FIELDS = "summary { verdict stepsPerMinute secondsSinceLastStep medianStepSeconds }"
STOPPED = ("failed", "model_failed", "stalled", "idle_placement", "stuck")


async def test_models_that_stopped_stepping_have_no_pace() -> None:
    server = fakeredis.FakeServer()
    writer = fakeredis.FakeAsyncRedis(server=server, decode_responses=True)
    sim = await populate(writer, SimConfig(seed=3), time.time())
    ids = sim.scenario_ids
    aliases = " ".join(f'{n}: model(id: "{ids[n]}") {{ {FIELDS} }}' for n in STOPPED)
    async with app_client(RedisStateStore.in_memory(server)) as client:
        body: dict[str, Any] = await gql(client, f"{{ {aliases} healthy: {healthy(ids)} }}")
    assert "errors" not in body, body
    for name in STOPPED:
        s = body["data"][name]["summary"]
        assert s["verdict"] in ("FAILED", "STALLED", "STUCK"), (name, s)
        assert s["stepsPerMinute"] is None, (name, s)
        assert s["secondsSinceLastStep"] is not None and s["secondsSinceLastStep"] > 0, name
    moving = body["data"]["healthy"]["summary"]
    assert moving["verdict"] == "PROGRESSING" and moving["stepsPerMinute"] > 0


def healthy(ids: dict[str, str]) -> str:
    return f'model(id: "{ids["healthy_trainer"]}") {{ {FIELDS} }}'
