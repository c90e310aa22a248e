"""Filters before the cap: over generated worlds written through the recorder, every
filter of ``models`` returns exactly the matching models, in order, with an exact total
on every page, every page full unless it is the last, and cursors that reach the end,
for an operator and for a viewer (whose list is read from its owners' indexes)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import fakeredis
import pytest
from hypothesis import HealthCheck, given, settings, strategies
from openrl_inspect.adapters.redis import RedisStateStore
from openrl_inspect.core.errors import IndexesNotBuilt, InvalidInput
from openrl_inspect.core.principal import ANONYMOUS_OPERATOR, Principal, Role
from openrl_inspect.recorder import Recorder, RecorderSettings, reindex
from openrl_inspect.resolvers.context import Backends, Context
from openrl_inspect.resolvers.state import reads
from openrl_inspect.state import keys

QUIET = RecorderSettings(publish_counters=False, recorder_id="filters", flush_at_exit=False)
OWNERS = ("alice", "bob", "carol")
SESSIONS = tuple(f"s{i}" for i in range(5))  # session i belongs to OWNERS[i % 3]
BASES = ("llama", "qwen")
STATES = ("waiting", "placed", "active", "failed", "ended")
VIEWER = Principal("viewer", Role.VIEWER, frozenset({"alice", "carol"}))


@dataclass(frozen=True)
class Spec:
    mid: str
    session: str
    base: str
    state: str
    created: float  # few distinct values: ties are ordered by id
    state_at: float

    @property
    def owner(self) -> str:
        return OWNERS[SESSIONS.index(self.session) % len(OWNERS)]


@strategies.composite
def worlds(draw: strategies.DrawFn) -> list[Spec]:
    n = draw(strategies.integers(0, 30))
    out = []
    for i in range(n):
        created = float(draw(strategies.integers(0, 4)))
        out.append(
            Spec(
                mid=f"m{i:02d}",
                session=draw(strategies.sampled_from(SESSIONS)),
                base=draw(strategies.sampled_from(BASES)),
                state=draw(strategies.sampled_from(STATES)),
                created=created,
                state_at=created + draw(strategies.integers(0, 3)),
            )
        )
    return out


FILTERS = strategies.fixed_dictionaries(
    {
        "state": strategies.sampled_from((None, *STATES)),
        "owner": strategies.sampled_from((None, *OWNERS, "nobody")),
        "session": strategies.sampled_from((None, *SESSIONS)),
        "base_model": strategies.sampled_from((None, *BASES)),
    }
).filter(lambda f: any(v is not None for v in f.values()))


def write(world: list[Spec], server: fakeredis.FakeServer) -> None:
    client = fakeredis.FakeRedis(server=server, decode_responses=True)
    rec = Recorder(client, settings=QUIET, start=False)
    for i, sid in enumerate(SESSIONS):
        rec.session_opened(sid, OWNERS[i % len(OWNERS)], at=0.0)
    for m in world:
        rec.model_created(m.mid, m.session, m.base, at=m.created)
        if m.state != "waiting":
            rec.model_state(m.mid, m.state, at=m.state_at)
    rec.flush()
    assert rec.stats().written == rec.stats().recorded


def expected(world: list[Spec], f: dict[str, str | None], viewer: bool) -> list[str]:
    def keep(m: Spec) -> bool:
        return (
            (f["state"] is None or m.state == f["state"])
            and (f["owner"] is None or m.owner == f["owner"])
            and (f["session"] is None or m.session == f["session"])
            and (f["base_model"] is None or m.base == f["base_model"])
            and (not viewer or m.owner in VIEWER.owners)
        )

    def score(m: Spec) -> float:
        if f["state"] is None:
            return m.created
        return m.created if f["state"] == "waiting" else m.state_at

    return [
        m.mid for m in sorted(filter(keep, world), key=lambda m: (score(m), m.mid), reverse=True)
    ]


async def walk(
    store: RedisStateStore, principal: Principal, f: dict[str, str | None], first: int
) -> list[str]:
    seen: list[str] = []
    after = None
    totals = set()
    for _ in range(100):
        ctx = Context.build(Backends(state=store), principal)
        page = await reads.models(ctx, **f, first=first, after=after)
        ids = [rec.id for _, rec in page.items]  # type: ignore[union-attr]
        totals.add(page.total)
        seen += ids
        if not page.has_next:
            break
        assert len(ids) == first, "a page before the last is full"
        after = page.end_cursor
    assert totals == {len(seen)}, "every page's total is exact"
    return seen


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    world=worlds(),
    filters=strategies.lists(FILTERS, min_size=1, max_size=4),
    first=strategies.integers(1, 4),
)
def test_every_filter_returns_exactly_the_matching_models_in_order(
    world: list[Spec], filters: list[dict[str, str | None]], first: int
) -> None:
    server = fakeredis.FakeServer()
    write(world, server)
    store = RedisStateStore.in_memory(server)

    async def check() -> None:
        for f in filters:
            assert await walk(store, ANONYMOUS_OPERATOR, f, first) == expected(world, f, False), f
            assert await walk(store, VIEWER, f, first) == expected(world, f, True), f

    asyncio.run(check())


def test_a_list_needing_the_indexes_is_refused_until_reindex_built_them() -> None:
    server = fakeredis.FakeServer()
    client = fakeredis.FakeRedis(server=server, decode_responses=True)
    client.set(keys.SCHEMA_VERSION_KEY, "1")  # data from before the indexes
    world = [
        Spec("m1", "s0", "llama", "active", 1.0, 2.0),
        Spec("m2", "s1", "qwen", "ended", 1.0, 3.0),
    ]
    write(world, server)
    client.delete(keys.models_of_owner("alice"))  # as an older writer would have left it
    store = RedisStateStore.in_memory(server)

    async def owner_list() -> list[str]:
        ctx = Context.build(Backends(state=store))
        page = await reads.models(ctx, state=None, owner="alice", first=10, after=None)
        return [rec.id for _, rec in page.items]  # type: ignore[union-attr]

    with pytest.raises(IndexesNotBuilt):
        asyncio.run(owner_list())
    found = reindex(client)
    assert (found.models, found.live, found.without_owner) == (2, 1, 0)
    assert asyncio.run(owner_list()) == ["m1"]


def test_no_filter_at_all_is_refused_as_bad_input() -> None:
    store = RedisStateStore.in_memory(fakeredis.FakeServer())
    ctx = Context.build(Backends(state=store))
    with pytest.raises(InvalidInput):
        asyncio.run(reads.models(ctx, state=None, first=10, after=None))
