"""The OpenAPI 3.1 document of the routes, made from their declarations and documents.

Parameters come from each route's ``Param``s; the response bodies from the documents
read against the GraphQL schema (``shapes``), so the document says exactly what an
answer holds, and a property run (schemathesis, in the tests) checks every answer.
"""

from __future__ import annotations

from typing import Any

from graphql import GraphQLSchema
from openrl_inspect.agents.limits import Limit, limits
from openrl_inspect.agents.rest.routes import SPECS, RouteSpec
from openrl_inspect.agents.shapes import data_schema
from openrl_inspect.core.settings import Bounds
from openrl_inspect.execution import Registry

ERROR = {
    "type": "object",
    "properties": {
        "message": {"type": "string"},
        "path": {"type": "array", "items": {"type": ["string", "integer"]}},
        "locations": {"type": "array"},
        "extensions": {
            "type": "object",
            "properties": {
                "code": {"type": "string", "description": "See the README's table of codes."},
                "parameter": {"type": "string", "description": "The query parameter refused."},
                "backend": {"type": "string"},
            },
            "required": ["code"],
        },
    },
    "required": ["message", "extensions"],
}
ERRORS = {"type": "array", "items": {"$ref": "#/components/schemas/Error"}}
_FAILURES = {
    "400": "A parameter, id or cursor the route cannot use (BAD_INPUT), or a query too costly.",
    "401": "No credential, or one not accepted (UNAUTHENTICATED).",
    "403": "Not for this principal (FORBIDDEN), or raw PromQL is off (RAW_QUERY_DISABLED).",
    "404": "No such model, session, node or GPU (NOT_FOUND), or one the principal may not see.",
    "429": "Too many large queries at once (BUSY); retry after `Retry-After` seconds.",
    "502": "A stored record cannot be read (BAD_RECORD).",
    "503": "A backend failed (BACKEND_UNAVAILABLE, BACKEND_TIMEOUT, ...; `extensions.backend`).",
    "504": "The request ran past its deadline (DEADLINE_EXCEEDED).",
}


def _operation(
    spec: RouteSpec, schema: GraphQLSchema, documents: Registry, named: dict[str, Limit]
) -> dict[str, Any]:
    shapes = [data_schema(schema, documents[name].text) for name in spec.documents]
    properties: dict[str, Any] = {
        "data": shapes[0] if len(shapes) == 1 else {"anyOf": shapes},
        "errors": ERRORS,
    }
    required = ["data"]
    if spec.page is not None:
        properties["next"] = {
            "type": ["string", "null"],
            "description": "The next page's URL (path and query), null on the last page.",
        }
        required.append("next")
    ok = {
        "description": "The answer; a part that could not be answered is null and its "
        "error is in `errors` (still a 200).",
        "content": {
            "application/json": {
                "schema": {
                    "type": "object",
                    "properties": properties,
                    "required": required,
                    "additionalProperties": False,
                }
            }
        },
    }
    # A refusal has nothing to show at the route's root: data null, or the root null
    # beside what else the document asked (a node's duty without the node).
    failed = {"type": "object", "properties": properties, "required": ["errors"],
              "additionalProperties": False}  # fmt: skip
    refusal = {"application/json": {"schema": failed}}
    responses: dict[str, Any] = {"200": ok}
    for code, text in _FAILURES.items():
        responses[code] = {"description": text, "content": refusal}
    return {
        "operationId": spec.name,
        "summary": spec.summary,
        "description": spec.description + f"\n\nGraphQL documents: {', '.join(spec.documents)}.",
        "parameters": [
            {
                "name": p.name,
                "in": p.where,
                "required": p.required or p.where == "path",
                "description": p.description,
                "schema": p.schema(),
            }
            for p in (each.under(named) for each in spec.params)
        ],
        "responses": responses,
    }


def document(
    schema: GraphQLSchema, documents: Registry, prefix: str, bounds: Bounds | None = None
) -> dict[str, Any]:
    """The document; a parameter's named limit is the server's under ``bounds`` (its
    settings; the defaults unless given)."""
    named = limits(bounds or Bounds())
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "OpenRL Inspector REST",
            "version": "1",
            "description": "Read-only routes over the inspector's GraphQL schema: each runs a "
            "named GraphQL document with the same limits, authentication and scoping as "
            "/graphql. Errors keep their GraphQL codes (`errors[].extensions.code`).",
        },
        "servers": [{"url": prefix}],
        "security": [{"bearer": []}, {}],
        "paths": {s.path: {"get": _operation(s, schema, documents, named)} for s in SPECS},
        "components": {
            "schemas": {"Error": ERROR},
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    }
