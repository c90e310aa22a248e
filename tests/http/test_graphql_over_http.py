"""GraphQL over HTTP: the MUST and SHOULD audits of graphql-http's server suite (version
1.23, src/audits/server.ts), each by its id, against /graphql, and the MAYs we keep.

graphql-http itself runs them against a running inspector (docs/conformance.md); this
port keeps them in the test command.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from openrl_inspect.web.app import PREFIX
from support.demo_app import demo_client

pytestmark = pytest.mark.anyio
URL = f"{PREFIX}/graphql"
JSON = "application/json"
GRAPHQL_RESPONSE = "application/graphql-response+json"
TYPENAME = "{ __typename }"
TYPE_QUERY = "query Type($name: String!) { __type(name: $name) { name } }"
NOT_A_FIELD = "{ 8f31403dfe404bccbb0e835f2629c6a7 }"
INVALID = [{"obj": "ect"}, 0, False, ["array"]]
INVALID_MAP = ["string", 0, False, ["array"]]


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with demo_client() as c:
        yield c


async def post(
    client: httpx.AsyncClient, body: Any, accept: str | None = None, raw: bytes | None = None
) -> httpx.Response:
    headers = {"content-type": JSON}
    if accept is not None:
        headers["accept"] = accept
    content = raw if raw is not None else json.dumps(body).encode()
    return await client.post(URL, content=content, headers=headers)


def body(resp: httpx.Response) -> dict[str, Any]:
    value = resp.json()
    assert isinstance(value, dict)
    return value


# -- media types -------------------------------------------------------------------------


async def test_22eb_accepts_graphql_response_json_and_matches(client: httpx.AsyncClient) -> None:
    resp = await post(client, {"query": TYPENAME}, GRAPHQL_RESPONSE)
    assert resp.status_code == 200
    assert GRAPHQL_RESPONSE in resp.headers["content-type"]


@pytest.mark.parametrize(("accept", "media"), [(JSON, JSON), ("*/*", JSON)])
async def test_4655_47de_accepts_json_and_any(
    client: httpx.AsyncClient, accept: str, media: str
) -> None:
    resp = await post(client, {"query": TYPENAME}, accept)
    assert resp.status_code == 200 and resp.headers["content-type"].startswith(media)


async def test_80d8_5a70_a_get_without_accept_is_json(client: httpx.AsyncClient) -> None:
    resp = await client.get(URL, params={"query": TYPENAME})
    assert resp.status_code == 200 and resp.headers["content-type"].startswith(JSON)


async def test_82a3_bf61_78d5_utf8_both_ways(client: httpx.AsyncClient) -> None:
    resp = await client.post(
        URL,
        content=json.dumps({"query": TYPENAME}).encode(),
        headers={"content-type": "application/json; charset=utf-8"},
    )
    assert resp.status_code == 200
    resp.content.decode("utf-8")  # strict: raises on anything else


# -- the request -------------------------------------------------------------------------


async def test_9c48_no_mutation_over_get(client: httpx.AsyncClient) -> None:
    resp = await client.get(
        URL, params={"query": "mutation { __typename }"}, headers={"accept": GRAPHQL_RESPONSE}
    )
    assert 400 <= resp.status_code <= 499


async def test_9abe_a_post_without_content_type_is_4xx(client: httpx.AsyncClient) -> None:
    resp = await client.post(URL)
    assert 400 <= resp.status_code <= 499
    assert body(resp)["errors"][0]["extensions"]["code"] == "UNSUPPORTED_MEDIA_TYPE"


async def test_7267_a_post_needs_a_body(client: httpx.AsyncClient) -> None:
    resp = await client.post(URL, headers={"content-type": JSON})
    assert "errors" in body(resp)


async def test_423l_a5bf_lkjx_6c0x_476x_58bx_a_request_not_well_formed_is_400(
    client: httpx.AsyncClient,
) -> None:
    # MAY: a missing query or body, and a parameter of the wrong type, are 400s (not a
    # well-formed request), whatever the media type; no data entry.
    requests: list[Any] = [{"notquery": TYPENAME}, {"qeury": TYPENAME}]
    requests += [{"query": TYPENAME, "operationName": bad} for bad in INVALID]
    requests += [{"query": bad} for bad in INVALID]
    requests += [{"query": TYPENAME, "variables": bad} for bad in INVALID_MAP]
    requests += [{"query": TYPENAME, "extensions": bad} for bad in INVALID_MAP]
    for request in requests:
        for accept in (GRAPHQL_RESPONSE, JSON):
            resp = await post(client, request, accept)
            assert resp.status_code == 400, (request, accept)
            assert "data" not in body(resp) and body(resp)["errors"], (request, accept)


@pytest.mark.parametrize("accept", [GRAPHQL_RESPONSE, JSON])
async def test_34a2_13ee_8161_b8b3_strings_are_taken(
    client: httpx.AsyncClient, accept: str
) -> None:
    plain = await post(client, {"query": TYPENAME}, accept)
    named = await post(
        client, {"query": "query Query { __typename }", "operationName": "Query"}, accept
    )
    for resp in (plain, named):
        assert resp.status_code == 200 and "errors" not in body(resp)


@pytest.mark.parametrize("accept", [GRAPHQL_RESPONSE, JSON])
@pytest.mark.parametrize("parameter", ["variables", "operationName", "extensions"])
async def test_94bx_022x_null_parameters_are_taken(
    client: httpx.AsyncClient, accept: str, parameter: str
) -> None:
    resp = await post(client, {"query": TYPENAME, parameter: None}, accept)
    assert resp.status_code == 200 and "errors" not in body(resp)


@pytest.mark.parametrize("accept", [GRAPHQL_RESPONSE, JSON])
async def test_2ea1_28b9_428f_1b7a_maps_are_taken(client: httpx.AsyncClient, accept: str) -> None:
    typed = await post(client, {"query": TYPE_QUERY, "variables": {"name": "sometype"}}, accept)
    extended = await post(client, {"query": TYPENAME, "extensions": {"some": "value"}}, accept)
    for resp in (typed, extended):
        assert resp.status_code == 200 and "errors" not in body(resp)


@pytest.mark.parametrize("accept", [GRAPHQL_RESPONSE, JSON])
async def test_d6d5_6a70_variables_in_a_get(client: httpx.AsyncClient, accept: str) -> None:
    params = {"query": TYPE_QUERY, "variables": json.dumps({"name": "sometype"})}
    resp = await client.get(URL, params=params, headers={"accept": accept})
    assert resp.status_code == 200 and "errors" not in body(resp)


# -- the answer, by media type -----------------------------------------------------------


async def test_bcf8_b7n8_json_that_does_not_parse_is_400(client: httpx.AsyncClient) -> None:
    for accept in (JSON, GRAPHQL_RESPONSE):
        resp = await post(client, None, accept, raw=b'{ "not a JSON')
        assert resp.status_code == 400 and "data" not in body(resp)


async def test_572b_fde2_7b9b_document_errors_are_200_as_json(client: httpx.AsyncClient) -> None:
    unparsable = await post(client, {"query": "{"}, JSON)
    invalid = await post(client, {"query": "{ notAField }"}, JSON)
    coerced = await post(client, {"query": TYPE_QUERY, "variables": {"name": 1}}, JSON)
    for resp in (unparsable, invalid, coerced):
        assert resp.status_code == 200 and body(resp)["errors"]
        assert "data" not in body(resp)


async def test_556a_d586_74ff_5e5b_86ee_document_errors_are_400_with_graphql_response(
    client: httpx.AsyncClient,
) -> None:
    unparsable = await post(client, {"query": "{"}, GRAPHQL_RESPONSE)
    lexed = await post(client, {"query": NOT_A_FIELD}, GRAPHQL_RESPONSE)
    invalid = await post(client, {"query": "{ notAField }"}, GRAPHQL_RESPONSE)
    coerced = await post(client, {"query": TYPE_QUERY, "variables": {"name": 1}}, GRAPHQL_RESPONSE)
    for resp in (unparsable, lexed, invalid, coerced):
        assert resp.status_code == 400
        assert "data" not in body(resp) and body(resp)["errors"]
    # graphql-http's "not a field" starts with a digit: it fails to lex, not to validate.
    codes = [body(r)["errors"][0]["extensions"]["code"] for r in (unparsable, lexed, invalid)]
    assert codes == ["GRAPHQL_PARSE_FAILED", "GRAPHQL_PARSE_FAILED", "GRAPHQL_VALIDATION_FAILED"]


async def test_an_answer_with_data_is_2xx_whatever_the_type(client: httpx.AsyncClient) -> None:
    # A field that fails (a model that does not exist) leaves data: the request ran.
    query = '{ model(id: "no-such-model") { id } sessions(first: 1) { totalCount } }'
    for accept in (GRAPHQL_RESPONSE, JSON):
        resp = await post(client, {"query": query}, accept)
        answer = body(resp)
        assert resp.status_code == 200, accept
        assert answer["data"]["model"] is None and answer["errors"], accept
