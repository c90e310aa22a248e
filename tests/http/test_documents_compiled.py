"""A document is parsed, validated and costed once (``execution.documents``): a poll of a
document sent before pays none of them again, and an invalid one is refused every time."""

from __future__ import annotations

import fakeredis
import pytest
from openrl_inspect.adapters.redis import RedisStateStore
from openrl_inspect.core.principal import ANONYMOUS_OPERATOR
from openrl_inspect.core.settings import Settings, Switches
from openrl_inspect.execution import Request, Runner, build_schema
from openrl_inspect.execution.documents import Documents
from openrl_inspect.resolvers.context import Backends

pytestmark = pytest.mark.anyio

GOOD = "query($n: Int) { models(state: ACTIVE, first: $n) { totalCount } }"
BAD = "{ models(state: ACTIVE) { noSuchField } }"


def _runner() -> tuple[Runner, Backends]:
    settings = Settings(switches=Switches(single_flight=False))
    runner = Runner(build_schema(settings.switches), settings)
    return runner, Backends(state=RedisStateStore.in_memory(fakeredis.FakeServer()))


async def test_a_document_is_compiled_once_and_validated_once() -> None:
    runner, backends = _runner()
    answers = [
        await runner.run(Request(GOOD, {"n": n}), backends, ANONYMOUS_OPERATOR) for n in (1, 2, 1)
    ]
    assert [a.data for a in answers] == [{"models": {"totalCount": 0}}] * 3
    assert (runner.compiled.compiled, runner.compiled.found) == (1, 2)
    assert runner.compiled.get(GOOD).valid
    assert len(runner.costs) == 2  # one per variables


async def test_an_invalid_document_is_refused_every_time() -> None:
    runner, backends = _runner()
    for _ in range(2):
        answer = await runner.run(Request(BAD), backends, ANONYMOUS_OPERATOR)
        assert not answer.ran and answer.codes == ["GRAPHQL_VALIDATION_FAILED"]
    assert not runner.compiled.get(BAD).valid


def test_the_cache_is_bounded_and_warms_the_shipped_documents() -> None:
    kept = Documents(max_tokens=4000, size=2)
    kept.warm(["{ a }", "{ b }", "{ c }"])
    assert kept.size == 2 and kept.compiled == 3
    kept.get("{ a }")  # the oldest was let go: compiled again
    assert kept.compiled == 4
    runner, _ = _runner()
    runner.warm()
    assert runner.compiled.compiled == len(list(runner.documents))
