"""The JSON Schema of a document's ``data``, read off the GraphQL schema.

Each selected field is required; a nullable GraphQL type may be null (an error there
nulls it and the rest stands), a non-null one never is. The schema is exact for what
the document selects, so a property run can hold every answer to it; each field keeps
its GraphQL description. The REST routes' OpenAPI document and the MCP tools' output
schemas are both made here.
"""

from __future__ import annotations

from typing import Any

from graphql import (
    FieldNode,
    GraphQLEnumType,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLOutputType,
    GraphQLScalarType,
    GraphQLSchema,
    OperationDefinitionNode,
    SelectionSetNode,
    parse,
)

_SCALARS: dict[str, dict[str, Any]] = {
    "String": {"type": "string"},
    "ID": {"type": "string"},
    "Int": {"type": "integer"},
    "Float": {"type": "number"},
    "Boolean": {"type": "boolean"},
    "DateTime": {"type": "string", "format": "date-time"},
    "JSON": {},
}


def data_schema(schema: GraphQLSchema, text: str) -> dict[str, Any]:
    """What ``data`` holds for the document ``text`` (null when nothing was answered)."""
    (operation,) = [d for d in parse(text).definitions if isinstance(d, OperationDefinitionNode)]
    query = schema.query_type
    assert query is not None
    return _nullable(_object(schema, query, operation.selection_set))


def _object(
    schema: GraphQLSchema, kind: GraphQLObjectType, selections: SelectionSetNode
) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    for node in selections.selections:
        if not isinstance(node, FieldNode):
            raise ValueError("route documents select fields only (no fragments)")
        field = kind.fields[node.name.value]
        key = node.alias.value if node.alias else node.name.value
        properties[key] = _output(schema, field.type, node.selection_set)
        if field.description:
            # The schema's own words (unit, bounds, source), for whoever reads the answer.
            properties[key]["description"] = field.description
    return {
        "type": "object",
        "properties": properties,
        "required": sorted(properties),
        "additionalProperties": False,
    }


def _output(
    schema: GraphQLSchema, kind: GraphQLOutputType, selections: SelectionSetNode | None
) -> dict[str, Any]:
    if isinstance(kind, GraphQLNonNull):
        return _inner(schema, kind.of_type, selections)
    return _nullable(_inner(schema, kind, selections))


def _inner(
    schema: GraphQLSchema, kind: GraphQLOutputType, selections: SelectionSetNode | None
) -> dict[str, Any]:
    if isinstance(kind, GraphQLList):
        return {"type": "array", "items": _output(schema, kind.of_type, selections)}
    if isinstance(kind, GraphQLObjectType):
        assert selections is not None
        return _object(schema, kind, selections)
    if isinstance(kind, GraphQLEnumType):
        return {"type": "string", "enum": sorted(kind.values)}
    if isinstance(kind, GraphQLScalarType):
        return dict(_SCALARS[kind.name])
    raise ValueError(f"route documents cannot select {kind}")


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    if not schema:
        return schema  # JSON: anything, null included
    return {"anyOf": [schema, {"type": "null"}]}
