"""An executor that reads plain fields itself and leaves the rest to graphql-core.

Stock execution costs, per plain field, a ``GraphQLResolveInfo``, two Strawberry
wrappers and graphql-core's generic completion. Here a level's fields are classified
once (``plan``); a planned field is read straight off its source and a leaf is
serialised at once, an object or list of objects recurses through graphql-core's own
sub-selection machinery, so collection, ``@skip``/``@include``, fragments and error
propagation stay graphql-core's. Whatever is unusual about a value (an exception, an
awaitable, null where the type forbids it, a value a scalar refuses) is completed by
the stock code with the value already read, so errors, paths and messages are exactly
the stock ones. Fields the plan does not cover run through the stock ``execute_field``
and are counted in ``ExecutionStats.fallbacks``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from graphql import (
    GraphQLField,
    GraphQLObjectType,
    GraphQLOutputType,
    GraphQLResolveInfo,
    TypeNameMetaFieldDef,
    Undefined,
)
from graphql.execution.collect_fields import FieldDetailsList, GroupedFieldSet
from graphql.execution.executor import to_nodes
from graphql.pyutils import AwaitableOrValue, Path, gather_with_cancel
from openrl_inspect.execution.fast.calls import CallPlan, execute_call, plan_call
from openrl_inspect.execution.fast.lists import complete_list
from openrl_inspect.execution.fast.plan import (
    NOT_DONE,
    FieldPlan,
    Kind,
    Shape,
    leaf_value,
    plan_field,
    plan_typename,
)
from strawberry.schema.config import StrawberryConfig
from strawberry.schema.schema import StrawberryGraphQLCoreExecutionContext
from strawberry.types.info import Info

MIDDLEWARE = "(every field: schema middleware)"
_Level = list[tuple[str, FieldDetailsList, FieldPlan | CallPlan | None]]


@dataclass
class ExecutionStats:
    """What the fast path answered, and what it left to the stock executor (by field)."""

    fast_fields: int = 0
    # Resolvers of ours called without Strawberry's wrappers (``calls``).
    direct_calls: int = 0
    fallbacks: Counter[str] = field(default_factory=Counter)


class FastExecutor(StrawberryGraphQLCoreExecutionContext):
    """Set per schema by ``executor_class``: the schema's stats and plans."""

    stats: ClassVar[ExecutionStats]
    plans: ClassVar[dict[tuple[str, str], FieldPlan | CallPlan | None]]  # (type, field)
    exception_handlers: ClassVar[bool]
    config: ClassVar[StrawberryConfig]
    info_class: ClassVar[type[Info[Any, Any]]]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # id(grouped field set) -> (the set, kept alive so its id is not reused; plan)
        self._levels: dict[int, tuple[GroupedFieldSet, _Level]] = {}
        manager = self.middleware_manager
        # An extension resolving fields (middleware) must see every field: the whole
        # operation then runs on the stock path, counted once.
        self._fast = manager is None or not manager.middlewares
        if not self._fast:
            self.stats.fallbacks[MIDDLEWARE] += 1

    def _level(self, parent_type: GraphQLObjectType, fields: GroupedFieldSet) -> _Level:
        known = self._levels.get(id(fields))
        if known is not None and known[0] is fields:
            return known[1]
        level: _Level = []
        for name, details in fields.items():
            field_name = details[0].node.name.value
            field_def = self.schema.get_field(parent_type, field_name)
            plan = None
            if field_def is not None and details[0].fragment_variable_values is None:
                key = (parent_type.name, field_name)
                if key not in self.plans:
                    self.plans[key] = self._plan(field_def, parent_type)
                plan = self.plans[key]
            level.append((name, details, plan))
        self._levels[id(fields)] = (fields, level)
        return level

    def _plan(
        self, field_def: GraphQLField, parent_type: GraphQLObjectType
    ) -> FieldPlan | CallPlan | None:
        if field_def is TypeNameMetaFieldDef:
            return plan_typename(field_def, parent_type)
        if self.exception_handlers:
            return None
        return plan_field(field_def) or plan_call(field_def, self.config)

    # One loop run once per field: its cases stay inline rather than in calls (C901).
    # size: graphql-core's execute_fields with the planned fields answered inline
    def execute_fields(  # noqa: C901
        self,
        parent_type: GraphQLObjectType,
        source_value: Any,
        path: Path | None,
        grouped_field_set: GroupedFieldSet,
        position_context: Any,
    ) -> AwaitableOrValue[dict[str, Any]]:
        if not self._fast or position_context is not None:
            return super().execute_fields(
                parent_type, source_value, path, grouped_field_set, position_context
            )
        level = self._level(parent_type, grouped_field_set)
        results: dict[str, Any] = {}
        is_awaitable = self.is_awaitable
        pending: list[str] = []
        fast = calls = 0
        try:
            for name, details, plan in level:
                if plan is None:
                    self.stats.fallbacks[f"{parent_type.name}.{details[0].node.name.value}"] += 1
                    result = self.execute_field(
                        parent_type,
                        source_value,
                        details,
                        Path(path, name, parent_type.name),
                        position_context,
                    )
                    if result is Undefined:
                        continue
                elif type(plan) is CallPlan:
                    calls += 1
                    path_ = Path(path, name, parent_type.name)
                    result = execute_call(self, plan, parent_type, source_value, details, path_)
                else:
                    assert type(plan) is FieldPlan
                    fast += 1
                    shape = plan.shape
                    try:
                        value = plan.get(source_value)
                    except Exception as raw:
                        self.handle_field_error(
                            raw, shape.type, details, Path(path, name, parent_type.name)
                        )
                        results[name] = None
                        continue
                    if value is None:
                        if not shape.non_null:
                            results[name] = None
                            continue
                    elif shape.kind is Kind.LEAF:
                        if type(value) is shape.passthrough:
                            results[name] = value
                            continue
                        done = leaf_value(shape, value, is_awaitable)
                        if done is not NOT_DONE:
                            results[name] = done
                            continue
                    result = self.complete_planned(
                        plan, parent_type, details, Path(path, name, parent_type.name), value
                    )
                results[name] = result
                if is_awaitable(result):
                    pending.append(name)
        except Exception:
            if pending:
                self.settle_in_background([results[name] for name in pending])
            raise
        finally:
            self.stats.fast_fields += fast
            self.stats.direct_calls += calls
        if not pending:
            return results
        return self._gather_fields(results, pending)

    async def _gather_fields(self, results: dict[str, Any], pending: list[str]) -> dict[str, Any]:
        # As graphql-core does: one await for one field, a cancelling gather otherwise.
        if len(pending) == 1:
            results[pending[0]] = await results[pending[0]]
        else:
            values = await gather_with_cancel(*(results[name] for name in pending))
            results.update(zip(pending, values, strict=True))
        return results

    def complete_planned(
        self,
        plan: FieldPlan,
        parent_type: GraphQLObjectType,
        details: FieldDetailsList,
        path: Path,
        value: Any,
    ) -> AwaitableOrValue[Any]:
        """A planned field's value completed, with the field's own error handling."""
        shape = plan.shape
        if value is not None and not isinstance(value, Exception) and not self.is_awaitable(value):
            try:
                if shape.kind is Kind.OBJECT:
                    assert shape.object_type is not None
                    completed = self.collect_and_execute_subfields(
                        shape.object_type, details, path, value, None
                    )
                    return self.guarded(completed, shape.type, details, path)
                if shape.kind is Kind.LIST and type(value) is list:
                    items = complete_list(self, plan, parent_type, details, path, value)
                    return self.guarded(items, shape.type, details, path)
            except Exception as raw:
                self.handle_field_error(raw, shape.type, details, path)
                return None
        return self.complete_stock(plan.field_def, shape, parent_type, details, path, value)

    def complete_stock(
        self,
        field_def: GraphQLField,
        shape: Shape,
        parent_type: GraphQLObjectType,
        details: FieldDetailsList,
        path: Path,
        value: Any,
    ) -> AwaitableOrValue[Any]:
        """graphql-core's completion of a resolved value (the tail of ``execute_field``)."""
        info = self.info(field_def, parent_type, details, path)
        try:
            if self.is_awaitable(value):
                return self.complete_awaitable_value(shape.type, details, info, path, value, None)
            completed = self.complete_value(shape.type, details, info, path, value, None)
        except Exception as raw:
            self.handle_field_error(raw, shape.type, details, path)
            return None
        return self.guarded(completed, shape.type, details, path)

    def info(
        self,
        field_def: GraphQLField,
        parent_type: GraphQLObjectType,
        details: FieldDetailsList,
        path: Path,
    ) -> GraphQLResolveInfo[Any]:
        return self.build_resolve_info(field_def, to_nodes(details), parent_type, path)

    def guarded(
        self, completed: Any, type_: GraphQLOutputType, details: FieldDetailsList, path: Path
    ) -> AwaitableOrValue[Any]:
        """``completed``, or when it is awaitable, awaited with the field's error handling."""
        if not self.is_awaitable(completed):
            return completed
        return self.await_guarded(completed, type_, details, path)

    async def await_guarded(
        self,
        completed: Awaitable[Any],
        type_: GraphQLOutputType,
        details: FieldDetailsList,
        path: Path,
    ) -> Any:
        try:
            return await completed
        except Exception as raw:
            self.handle_field_error(raw, type_, details, path)
            return None


def executor_class(
    stats: ExecutionStats, exception_handlers: bool, config: StrawberryConfig
) -> type[FastExecutor]:
    """A ``FastExecutor`` for one schema, counting into ``stats``."""
    attrs = {
        "stats": stats,
        "plans": {},
        "exception_handlers": exception_handlers,
        "config": config,
        "info_class": config.info_class,
    }
    return type("SchemaFastExecutor", (FastExecutor,), attrs)
