"""``GET /models``: the filters applied before the page is cut, over REST as over
GraphQL: each page full unless it is the last, an exact total, ``next`` to the end."""

from __future__ import annotations

import fakeredis
import pytest
from openrl_inspect.adapters.redis import RedisStateStore
from openrl_inspect.recorder import AsyncRecorder, RecorderSettings
from openrl_inspect.web.app import PREFIX
from support.harness import app_client

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_models_by_owner_and_base_model_page_to_the_end_full_and_counted() -> None:
    server = fakeredis.FakeServer()
    client = fakeredis.FakeAsyncRedis(server=server, decode_responses=True)
    rec = AsyncRecorder(client, settings=RecorderSettings(publish_counters=False))
    for s in range(6):
        rec.session_opened(f"s{s}", "alice" if s % 2 else "bob", at=1.0)
        for j in range(7):
            rec.model_created(f"m{s}-{j}", f"s{s}", "llama" if j % 3 else "qwen", at=10.0 + j)
    await rec.close(10.0)
    # alice: sessions 1, 3, 5; llama: j in 1, 2, 4, 5 -> 12 models
    store = RedisStateStore.in_memory(server)
    seen: list[str] = []
    async with app_client(store) as http:
        url: str | None = f"{PREFIX}/models?owner=alice&baseModel=llama&first=5"
        while url is not None:
            body = (await http.get(url)).json()
            page = body["data"]["models"]
            assert page["totalCount"] == 12
            seen += [m["id"] for m in page["nodes"]]
            url = body["next"]
            assert len(page["nodes"]) == 5 or url is None
    assert len(seen) == len(set(seen)) == 12
    assert all(m.split("-")[0] in ("m1", "m3", "m5") for m in seen)
