"""An answer shared by identical polls is encoded once (``Answer.encoded``), and never
copied for an entry that only encodes it (``Runner.run(read_only=True)``)."""

from __future__ import annotations

import fakeredis
import orjson
import pytest
from openrl_inspect.adapters.redis import RedisStateStore
from openrl_inspect.core.principal import ANONYMOUS_OPERATOR
from openrl_inspect.core.settings import Settings, Switches
from openrl_inspect.execution import Request, Runner, build_schema
from openrl_inspect.resolvers.context import Backends
from openrl_inspect.simulator import SimConfig
from support.harness import populate

pytestmark = pytest.mark.anyio

QUERY = "{ models(state: ACTIVE, first: 5) { totalCount nodes { id state } } }"


async def test_a_fresh_answer_is_shared_whole_by_read_only_entries_and_copied_for_others() -> None:
    server = fakeredis.FakeServer()
    await populate(
        fakeredis.FakeAsyncRedis(server=server, decode_responses=True), SimConfig(seed=5)
    )
    settings = Settings(switches=Switches(fresh_for_s=300.0))
    runner = Runner(build_schema(settings.switches), settings)
    backends = Backends(state=RedisStateStore.in_memory(server))
    request = Request(QUERY)
    first = await runner.run(request, backends, ANONYMOUS_OPERATOR, read_only=True)
    second = await runner.run(request, backends, ANONYMOUS_OPERATOR, read_only=True)
    assert second is first
    assert second.encoded is first.encoded  # encoded for the first poll only
    assert orjson.loads(first.encoded) == first.body()
    # An entry that may narrow its answer in place gets its own copy.
    third = await runner.run(request, backends, ANONYMOUS_OPERATOR)
    assert third.data == first.data and third.data is not first.data
