"""Which fields the fast executor answers itself, decided once per schema field.

A field qualifies when what Strawberry would do for it is only a read of the source:
its resolver is Strawberry's attribute read (no resolver of ours), or a synchronous
method taking ``self`` alone; no arguments, no field extensions (permissions are
extensions), no exception handlers on the schema. Its type must be a leaf (scalar or
enum), an object type without ``is_type_of``, or a list of those, each nullable or not.
Everything else (async resolvers, arguments, ``info``) is left to the stock executor.
"""

from __future__ import annotations

import builtins
import enum
import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from graphql import (
    GraphQLField,
    GraphQLLeafType,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLOutputType,
    GraphQLScalarType,
    Undefined,
)
from graphql.type.scalars import serialize_boolean, serialize_id, serialize_string
from strawberry.schema.schema_converter import GraphQLCoreConverter
from strawberry.types.field import StrawberryField


class Kind(enum.Enum):
    LEAF = "leaf"
    OBJECT = "object"
    LIST = "list"


@dataclass(frozen=True, slots=True)
class Shape:
    """How a value of one GraphQL type is completed: a leaf, an object, or a list."""

    kind: Kind
    non_null: bool
    # The type as declared (with its NonNull), for the stock path and error handling.
    type: GraphQLOutputType
    coerce: Callable[[Any], Any] | None = None  # leaves
    # A leaf value of exactly this type is its own serialisation (graphql-core's String,
    # ID and Boolean return a str or bool as it is).
    passthrough: builtins.type | None = None
    object_type: GraphQLObjectType | None = None  # objects
    item: Shape | None = None  # lists


@dataclass(frozen=True, slots=True)
class FieldPlan:
    field_def: GraphQLField
    get: Callable[[Any], Any]
    shape: Shape


def shape_of(type_: GraphQLOutputType, nested: bool = False) -> Shape | None:
    non_null = isinstance(type_, GraphQLNonNull)
    inner = type_.of_type if isinstance(type_, GraphQLNonNull) else type_
    if isinstance(inner, GraphQLLeafType):
        coerce = inner.coerce_output_value
        return Shape(Kind.LEAF, non_null, type_, coerce=coerce, passthrough=_passthrough(inner))
    if isinstance(inner, GraphQLObjectType):
        # is_type_of needs an info object; Strawberry sets it only with interfaces.
        if inner.is_type_of is not None:
            return None
        return Shape(Kind.OBJECT, non_null, type_, object_type=inner)
    if isinstance(inner, GraphQLList) and not nested:
        item = shape_of(inner.of_type, nested=True)
        if item is None or item.kind is Kind.LIST:
            return None
        return Shape(Kind.LIST, non_null, type_, item=item)
    return None


class _NotDone:
    pass


NOT_DONE: Any = _NotDone()


def leaf_value(shape: Shape, value: Any, is_awaitable: Callable[[Any], bool]) -> Any:
    """A leaf's serialised value, or ``NOT_DONE`` when the stock path must say why not."""
    if type(value) is shape.passthrough:
        return value
    if isinstance(value, Exception) or is_awaitable(value):
        return NOT_DONE
    assert shape.coerce is not None
    try:
        coerced = shape.coerce(value)
    except Exception:
        return NOT_DONE  # the stock completion raises it again, located
    if coerced is None or coerced is Undefined:
        return NOT_DONE
    return coerced


def _passthrough(leaf: GraphQLLeafType) -> type | None:
    if not isinstance(leaf, GraphQLScalarType):
        return None
    if leaf.coerce_output_value in (serialize_string, serialize_id):
        return str
    if leaf.coerce_output_value is serialize_boolean:
        return bool
    return None


def _getter(field: StrawberryField, resolve: object) -> Callable[[Any], Any] | None:
    if field.extensions or field.arguments:
        return None
    resolver = field.base_resolver
    if resolver is None:
        if not getattr(resolve, "_is_default", False) or field.default_resolver is not getattr:
            return None
        read: Callable[[Any], Any] = operator.attrgetter(field.python_name)
        return read
    if (
        resolver.is_async
        or resolver.self_parameter is None
        or resolver.info_parameter is not None
        or resolver.root_parameter is not None
        or resolver.parent_parameter is not None
        or len(resolver.signature.parameters) != 1
        or not callable(resolver.wrapped_func)
    ):
        return None
    method: Callable[[Any], Any] = resolver.wrapped_func
    return method


def plan_typename(field_def: GraphQLField, parent_type: GraphQLObjectType) -> FieldPlan | None:
    """``__typename`` on an object type: its name, as graphql-core's resolver answers."""
    shape = shape_of(field_def.type)
    if shape is None:
        return None
    name = parent_type.name

    def read(_source: Any) -> str:
        return name

    return FieldPlan(field_def, read, shape)


def plan_field(field_def: GraphQLField) -> FieldPlan | None:
    """The fast plan for ``field_def``, or ``None`` when the stock executor runs it."""
    if field_def.args or field_def.subscribe is not None:
        return None
    field = (field_def.extensions or {}).get(GraphQLCoreConverter.DEFINITION_BACKREF)
    if not isinstance(field, StrawberryField):
        return None
    get = _getter(field, field_def.resolve)
    shape = shape_of(field_def.type)
    if get is None or shape is None:
        return None
    return FieldPlan(field_def, get, shape)
