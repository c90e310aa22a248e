"""The plan executor: an operation compiled once into a plan (``compile``), run level by
level (``walk``).

It is graphql-core's public extension point, an ``Executor`` subclass passed as
``executor_class``, overriding only the public ``execute_operation``: parsing,
validation, variable coercion and Strawberry's extensions stay where they are, and the
answer (data, errors at their paths) is the stock executor's. What the plan does not
cover runs on the stock path, whole and counted: an operation with field middleware or
an abort signal, one that is not a query, one executed synchronously (no event loop
runs), a schema with exception handlers, an interface or a union in the selection
(``PlanStats.stock``). A field it does not answer itself
runs its own resolver inside the plan (``PlanStats.resolved``).
"""

from __future__ import annotations

import asyncio
import threading
from collections import Counter, OrderedDict
from dataclasses import dataclass, field
from typing import Any, ClassVar

from graphql import (
    ExecutionResult,
    FieldNode,
    GraphQLObjectType,
    GraphQLResolveInfo,
    OperationType,
)
from graphql.pyutils import Path
from openrl_inspect.execution.plan.compile import (
    Field,
    Planner,
    Selection,
    directive_variables,
)
from openrl_inspect.execution.plan.fields import Unplannable
from openrl_inspect.execution.plan.walk import Walk
from strawberry.schema.config import StrawberryConfig
from strawberry.schema.schema import StrawberryGraphQLCoreExecutionContext

# Plans kept per schema: the documents the server ships, and then some.
MAX_PLANS = 512


@dataclass
class PlanStats:
    """What the plan executor did, over the schema's life."""

    planned: int = 0  # operations run by a plan
    compiled: int = 0  # plans compiled (the rest were found compiled)
    read: int = 0  # values the plan read itself
    called: int = 0  # resolvers of ours called directly
    # Fields run by their own resolver inside a plan, by "Type.field".
    resolved: Counter[str] = field(default_factory=Counter)
    # Operations run whole on the stock path, by reason.
    stock: Counter[str] = field(default_factory=Counter)


@dataclass
class _Plan:
    operation: Any  # kept so that its id is not reused while the plan is
    selection: Selection | None
    unplannable: str | None = None


class Plans:
    """Compiled plans by operation and the values its directives' variables take."""

    def __init__(self, size: int = MAX_PLANS) -> None:
        self.size = size
        # The app's loop and the terminal's own (``cli``) may share a schema.
        self._lock = threading.Lock()
        self._plans: OrderedDict[tuple[int, tuple[Any, ...]], _Plan] = OrderedDict()
        self._variables: OrderedDict[int, tuple[Any, tuple[str, ...]]] = OrderedDict()

    def directive_variables(self, operation: Any, fragments: dict[str, Any]) -> tuple[str, ...]:
        with self._lock:
            known = self._variables.get(id(operation))
            if known is not None and known[0] is operation:
                return known[1]
        names = directive_variables(operation, fragments)
        with self._lock:
            self._variables[id(operation)] = (operation, names)
            if len(self._variables) > self.size:
                self._variables.popitem(last=False)
        return names

    def get(self, key: tuple[int, tuple[Any, ...]], operation: Any) -> _Plan | None:
        with self._lock:
            plan = self._plans.get(key)
            if plan is None or plan.operation is not operation:
                return None
            self._plans.move_to_end(key)
            return plan

    def put(self, key: tuple[int, tuple[Any, ...]], plan: _Plan) -> None:
        with self._lock:
            self._plans[key] = plan
            if len(self._plans) > self.size:
                self._plans.popitem(last=False)


class PlanExecutor(StrawberryGraphQLCoreExecutionContext):
    """Set per schema by ``executor_class``."""

    stats: ClassVar[PlanStats]
    plans: ClassVar[Plans]
    config: ClassVar[StrawberryConfig]
    info_class: ClassVar[type[Any]]
    exception_handlers: ClassVar[bool]

    def execute_operation(self, serially: bool | None = None) -> Any:
        reason = self._stock_reason(serially)
        if reason is None:
            plan = self._plan()
            if plan.selection is not None:
                return self._run(plan.selection)
            reason = f"unplannable type {plan.unplannable}"
        self.stats.stock[reason] += 1
        return super().execute_operation(serially)

    def _stock_reason(self, serially: bool | None) -> str | None:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            # Strawberry's execute_sync: a plan always answers through a coroutine.
            return "synchronous execution"
        if self.middleware_manager is not None and self.middleware_manager.middlewares:
            return "field middleware"
        if self.abort_signal is not None:
            return "abort signal"
        if self.operation.operation is not OperationType.QUERY or serially:
            return "not a query"
        if self.exception_handlers:
            return "exception handlers"
        return None

    def _plan(self) -> _Plan:
        operation = self.operation
        fragments = self.fragment_definitions
        names = self.plans.directive_variables(operation, fragments)
        coerced = self.variable_values.coerced
        key = (id(operation), tuple(coerced.get(name) for name in names))
        plan = self.plans.get(key, operation)
        if plan is None:
            root = self.schema.query_type
            assert root is not None
            try:
                planner = Planner(self.schema, self.config)
                selection = planner.selection(
                    root, [operation.selection_set], fragments, self.variable_values
                )
                plan = _Plan(operation, selection)
            except Unplannable as exc:
                plan = _Plan(operation, None, str(exc))
            self.stats.compiled += 1
            self.plans.put(key, plan)
        return plan

    async def _run(self, selection: Selection) -> ExecutionResult:
        walk = Walk(
            variables=self.variable_values,
            root_value=self.root_value,
            is_awaitable=self.is_awaitable,
            field_resolver=self.field_resolver,
            info_class=self.info_class,
            make_info=self._info,
            hide_suggestions=self.hide_suggestions,
        )
        try:
            data = await walk.run(selection)
        finally:
            stats = self.stats
            stats.planned += 1
            stats.read += walk.counts.read
            stats.called += walk.counts.called
            stats.resolved.update(walk.counts.resolved)
        return ExecutionResult(data, walk.errors.errors or None)

    def _info(
        self, f: Field, parent: GraphQLObjectType, path: Path | None
    ) -> GraphQLResolveInfo[Any]:
        # As Strawberry builds it: resolvers see the coerced variables as a plain dict.
        nodes: list[FieldNode] = f.nodes
        return GraphQLResolveInfo(
            f.nodes[0].name.value,
            nodes,
            f.field_def.type,
            parent,
            path,  # type: ignore[arg-type]
            self.schema,
            self.fragment_definitions,
            self.root_value,
            self.operation,
            self.variable_values.coerced,  # type: ignore[arg-type]
            self.context_value,
            self.is_awaitable,
            self.abort_signal,
            self.async_helpers,
        )


def executor_class(
    stats: PlanStats, exception_handlers: bool, config: StrawberryConfig
) -> type[PlanExecutor]:
    """A ``PlanExecutor`` for one schema, counting into ``stats``."""
    attrs = {
        "stats": stats,
        "plans": Plans(),
        "config": config,
        "exception_handlers": exception_handlers,
        "info_class": config.info_class,
    }
    return type("SchemaPlanExecutor", (PlanExecutor,), attrs)
