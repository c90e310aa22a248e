"""How the plan reaches one schema field's value and completes it, decided once per field.

A field is answered in one of three ways:

- ``READ``: what Strawberry would do is only a read of the source (an attribute with no
  resolver of ours, or a synchronous method taking ``self`` alone, with no arguments and
  no field extensions): the plan reads it itself, for all parents of a level in one loop;
- ``CALL``: a resolver of ours taking ``self``, ``info`` and built-in scalar arguments:
  called directly with a Strawberry ``Info``, Strawberry's two wrappers left out (for a
  built-in scalar they pass the coerced value on as it is);
- ``RESOLVE``: anything else (enum or input arguments, permissions, graphql-core's own
  introspection fields): the field's own ``resolve`` function, as the stock executor
  calls it, counted in the plan's statistics.

A value is completed by its ``Shape``, built once per output type: a leaf is serialised
by its type's ``coerce_output_value`` (a ``str`` for String and ID, a ``bool`` for
Boolean, is its own serialisation), an object gets its sub-selection, a list its items.
"""

from __future__ import annotations

import enum
import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from graphql import (
    GraphQLBoolean,
    GraphQLField,
    GraphQLID,
    GraphQLLeafType,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLOutputType,
    GraphQLScalarType,
    GraphQLString,
    specified_scalar_types,
)
from strawberry.schema.config import StrawberryConfig
from strawberry.schema.schema_converter import GraphQLCoreConverter
from strawberry.types.base import StrawberryMaybe
from strawberry.types.field import StrawberryField


class Kind(enum.Enum):
    LEAF = "leaf"
    OBJECT = "object"
    LIST = "list"


class Unplannable(Exception):
    """A type the plan does not complete (an interface or a union): the whole operation
    runs on the stock path."""


@dataclass(frozen=True, slots=True)
class Shape:
    """How a value of one output type is completed."""

    kind: Kind
    nullable: bool
    coerce: Callable[[Any], Any] | None = None  # leaves
    # A leaf value of exactly this type is its own serialisation.
    passthrough: type | None = None
    object_type: GraphQLObjectType | None = None  # objects
    item: Shape | None = None  # lists


def shape_of(type_: GraphQLOutputType) -> Shape:
    nullable = not isinstance(type_, GraphQLNonNull)
    inner = type_.of_type if isinstance(type_, GraphQLNonNull) else type_
    if isinstance(inner, GraphQLLeafType):
        return Shape(Kind.LEAF, nullable, inner.coerce_output_value, _passthrough(inner))
    if isinstance(inner, GraphQLObjectType):
        # is_type_of is set by Strawberry only on types with interfaces; none here, and
        # it needs an info object per value: such a type runs on the stock path.
        if inner.is_type_of is not None:
            raise Unplannable(inner.name)
        return Shape(Kind.OBJECT, nullable, object_type=inner)
    if isinstance(inner, GraphQLList):
        return Shape(Kind.LIST, nullable, item=shape_of(inner.of_type))
    raise Unplannable(str(inner))


def _passthrough(leaf: GraphQLLeafType) -> type | None:
    if leaf is GraphQLString or leaf is GraphQLID:
        return str
    if leaf is GraphQLBoolean:
        return bool
    return None


class How(enum.Enum):
    READ = "read"
    CALL = "call"
    RESOLVE = "resolve"


@dataclass(frozen=True, slots=True)
class Access:
    """How one schema field's value is reached."""

    how: How
    read: Callable[[Any], Any] | None = None  # READ
    call: Callable[..., Any] | None = None  # CALL: the resolver of ours
    field: StrawberryField | None = None  # CALL: for its Info
    takes_self: bool = False  # CALL
    info_name: str | None = None  # CALL
    names: tuple[tuple[str, str], ...] = ()  # CALL: GraphQL argument -> parameter


RESOLVE = Access(How.RESOLVE)


def access(field_def: GraphQLField, config: StrawberryConfig) -> Access:
    """How ``field_def`` is answered (``READ``, ``CALL`` or ``RESOLVE``)."""
    field = (field_def.extensions or {}).get(GraphQLCoreConverter.DEFINITION_BACKREF)
    if not isinstance(field, StrawberryField) or field.extensions:
        return RESOLVE
    read = _read(field, field_def)
    if read is not None:
        return Access(How.READ, read=read)
    return _call(field, field_def, config) or RESOLVE


def typename(name: str) -> Access:
    """``__typename`` on an object type: its name."""

    def read(_source: Any) -> str:
        return name

    return Access(How.READ, read=read)


def _read(field: StrawberryField, field_def: GraphQLField) -> Callable[[Any], Any] | None:
    if field_def.args or field.arguments:
        return None
    resolver = field.base_resolver
    if resolver is None:
        # Strawberry's own attribute read (a plain field, its default resolver getattr).
        if field.default_resolver is not getattr:
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


def _plain_scalar(field_def: GraphQLField, name: str, argument: Any) -> bool:
    """Whether Strawberry would pass this argument on as graphql-core coerced it."""
    arg = field_def.args.get(name)
    if arg is None or isinstance(argument.type, StrawberryMaybe):
        return False
    type_ = arg.type.of_type if isinstance(arg.type, GraphQLNonNull) else arg.type
    return isinstance(type_, GraphQLScalarType) and specified_scalar_types.get(type_.name) is type_


def _call(
    field: StrawberryField, field_def: GraphQLField, config: StrawberryConfig
) -> Access | None:
    resolver = field.base_resolver
    if resolver is None or resolver.root_parameter or resolver.parent_parameter:
        return None
    if not callable(resolver.wrapped_func):
        return None
    names: dict[str, str] = {}
    for argument in field.arguments:
        name = config.name_converter.from_argument(argument)
        if not _plain_scalar(field_def, name, argument):
            return None
        names[name] = argument.python_name
    if set(names) != set(field_def.args):
        return None
    reserved = {p.name for p in (resolver.self_parameter, resolver.info_parameter) if p}
    if len(resolver.signature.parameters) != len(reserved) + len(names):
        return None
    info = resolver.info_parameter
    return Access(
        How.CALL,
        call=resolver.wrapped_func,
        field=field,
        takes_self=resolver.self_parameter is not None,
        info_name=None if info is None else info.name,
        names=tuple(names.items()),
    )
