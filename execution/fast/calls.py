"""Resolvers of ours called directly: the connection fields (``Model.steps(first,
after)``, ``Step.ops``...) and every other resolver taking ``self``, ``info`` and
built-in scalar arguments.

Strawberry reaches such a resolver through two wrappers, an argument conversion that
for a built-in scalar returns the value as it is, and a coroutine around the resolver's
own. Here the arguments graphql-core coerced are renamed to the resolver's parameters
and the resolver is called with a Strawberry ``Info`` over the same resolve info; its
result (a coroutine, or a value) is completed by graphql-core's own code, so completion
and errors are the stock ones. A resolver with any other parameter (``root``, an enum,
an input object, a list, ``Maybe``, a ``GlobalID``), or with field extensions, is left
to Strawberry.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from graphql import GraphQLField, GraphQLNonNull, GraphQLObjectType, GraphQLScalarType
from graphql.execution.collect_fields import FieldDetailsList
from graphql.execution.values import get_argument_values
from graphql.pyutils import AwaitableOrValue, Path
from graphql.type.scalars import specified_scalar_types
from strawberry.schema.config import StrawberryConfig
from strawberry.schema.schema_converter import GraphQLCoreConverter
from strawberry.types.base import StrawberryMaybe
from strawberry.types.field import StrawberryField

if TYPE_CHECKING:
    from openrl_inspect.execution.fast.executor import FastExecutor


@dataclass(frozen=True, slots=True)
class CallPlan:
    field_def: GraphQLField
    field: StrawberryField
    call: Callable[..., Any]
    takes_self: bool
    info_name: str | None
    names: dict[str, str]  # GraphQL argument name -> the resolver's parameter


def _plain_scalar(field_def: GraphQLField, name: str, argument: Any) -> bool:
    """Whether Strawberry would pass this argument on as graphql-core coerced it."""
    arg = field_def.args.get(name)
    if arg is None or isinstance(argument.type, StrawberryMaybe):
        return False
    type_ = arg.type.of_type if isinstance(arg.type, GraphQLNonNull) else arg.type
    return isinstance(type_, GraphQLScalarType) and specified_scalar_types.get(type_.name) is type_


def plan_call(field_def: GraphQLField, config: StrawberryConfig) -> CallPlan | None:
    """The direct call of ``field_def``'s resolver, or ``None`` for Strawberry's path."""
    if field_def.subscribe is not None:
        return None
    field = (field_def.extensions or {}).get(GraphQLCoreConverter.DEFINITION_BACKREF)
    if not isinstance(field, StrawberryField) or field.extensions:
        return None
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
    return CallPlan(
        field_def,
        field,
        resolver.wrapped_func,
        resolver.self_parameter is not None,
        None if info is None else info.name,
        names,
    )


def execute_call(
    executor: FastExecutor,
    plan: CallPlan,
    parent_type: GraphQLObjectType,
    source: Any,
    details: FieldDetailsList,
    path: Path,
) -> AwaitableOrValue[Any]:
    """graphql-core's ``execute_field`` with Strawberry's wrappers left out."""
    field_def = plan.field_def
    return_type = field_def.type
    info = executor.info(field_def, parent_type, details, path)
    try:
        first = details[0]
        args = (
            get_argument_values(
                field_def,
                first.node,
                executor.variable_values,
                first.fragment_variable_values,
                executor.hide_suggestions,
            )
            if field_def.args or first.node.arguments
            else {}
        )
        names = plan.names
        kwargs = {names[name]: value for name, value in args.items()}
        if plan.info_name is not None:
            kwargs[plan.info_name] = executor.info_class(_raw_info=info, _field=plan.field)
        result = plan.call(source, **kwargs) if plan.takes_self else plan.call(**kwargs)
        if executor.is_awaitable(result):
            return executor.complete_awaitable_value(return_type, details, info, path, result, None)
        completed = executor.complete_value(return_type, details, info, path, result, None)
    except Exception as raw:
        executor.handle_field_error(raw, return_type, details, path)
        return None
    return executor.guarded(completed, return_type, details, path)
