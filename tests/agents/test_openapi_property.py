"""A property run over the REST routes: schemathesis generates requests from the
OpenAPI document the server serves, against the demo's world on a real socket; no answer
may be a 5xx, every answer must match the document (status, content type, body), what
the document forbids is refused (its limits are the server's), and a method a route
does not answer is a 405."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from openrl_inspect.agents.rest.openapi import document
from openrl_inspect.execution import registry
from openrl_inspect.web.app import PREFIX
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_schema_conformance,
    status_code_conformance,
    unsupported_method,
)
from support.live_server import serve_demo
from support.types import api_types

OPENAPI = document(api_types(), registry(), PREFIX)
schema = schemathesis.openapi.from_dict(OPENAPI)
# Every check but accepting schema-valid data, which a cursor (opaque: any string is
# valid by the document) and PromQL that does not parse fail by design (the command
# line run with every check: docs/conformance.md).
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    negative_data_rejection,
    unsupported_method,
]


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    with serve_demo() as url:
        yield url


def test_the_served_document_is_the_one_checked(base: str) -> None:
    served = httpx.get(f"{base}{PREFIX}/openapi.json", timeout=10).json()
    assert served == OPENAPI
    assert served["openapi"] == "3.1.0"
    assert set(served["paths"]) >= {
        "/inventory",
        "/models/{id}/summary",
        "/logs",
        "/nodes/{name}/activity",
    }


@schema.parametrize()
@settings(
    max_examples=30,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
def test_every_answer_matches_the_document(case: schemathesis.Case[Any], base: str) -> None:
    case.call_and_validate(base_url=f"{base}{PREFIX}", checks=CHECKS, timeout=30)
