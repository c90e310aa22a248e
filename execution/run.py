"""The one way a document runs: ``/graphql``, the REST routes, the MCP tools and the
terminal summary all call ``Runner.run``.

A run, in order, each step refusing before the next costs anything:

1. the persisted lookup (a registered document by its hash) and, with
   ``registered_only``, the refusal of any other text;
2. one parse, bounded in tokens, kept by the text with whether it validated
   (``execution.documents``); the parsed document is handed to the execution, which
   never parses it again nor validates it again (``execution.schema.ParsedOnce``);
3. the operation to run: exactly one query;
4. the cost of what it could return (``execution.cost``), before validation, kept by
   document, operation, variables and limits;
5. identical concurrent queries of one principal joined into one execution
   (``single_flight``), each caller waiting under its own deadline;
6. a slot, for an expensive query, one principal's share at most (``admission``);
7. validation and execution by the schema (``execution.schema``), with the
   per-request ``Context`` for the caller's principal.

An ``Answer`` says whether execution began (``ran``): an answer that did not run is a
request error and has no ``data`` entry, as GraphQL over HTTP asks.
"""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import Hashable
from dataclasses import dataclass, field, replace
from typing import Any

import orjson
import strawberry
from graphql import (
    GraphQLError,
    GraphQLSchema,
    OperationType,
    build_schema,
    get_operation_ast,
)
from openrl_inspect.core.codes import error
from openrl_inspect.core.cursor import Sealer, process_sealer
from openrl_inspect.core.errors import (
    BadRequest,
    DeadlineExceeded,
    InspectorError,
    InvalidDocument,
    QueryTooCostly,
    RequestRefused,
)
from openrl_inspect.core.principal import Principal
from openrl_inspect.core.settings import Settings
from openrl_inspect.execution.admission import LIMIT_TEXT, Slots, cost_limits
from openrl_inspect.execution.cost import Cost, CostLimits, query_cost
from openrl_inspect.execution.documents import MAX_COSTS, Compiled, Documents, Lru
from openrl_inspect.execution.errors import formatted
from openrl_inspect.execution.persisted import resolve
from openrl_inspect.execution.registry import Registry, registry
from openrl_inspect.execution.schema import parsed_once
from openrl_inspect.execution.single_flight import Flights
from openrl_inspect.resolvers.context import Backends, Context


@dataclass(frozen=True)
class Request:
    """A GraphQL request as every entry receives it."""

    query: str | None
    variables: dict[str, Any] | None = None
    operation_name: str | None = None
    extensions: dict[str, Any] | None = None


@dataclass(frozen=True)
class Answer:
    """What a run answered: ``data`` and coded ``errors``; ``ran`` is false for a request
    refused before execution (its answer has no ``data`` entry)."""

    data: dict[str, Any] | None
    errors: list[dict[str, Any]] = field(default_factory=list)
    ran: bool = True

    @property
    def codes(self) -> list[str]:
        return [str((e.get("extensions") or {}).get("code", "INTERNAL")) for e in self.errors]

    @functools.cached_property
    def encoded(self) -> bytes:
        """The body as JSON, serialised once: an answer shared by identical polls
        (single flight, the freshness window) is encoded for the first of them only."""
        return orjson.dumps(self.body())

    def body(self) -> dict[str, Any]:
        out: dict[str, Any] = {"data": self.data} if self.ran else {}
        if self.errors:
            out["errors"] = self.errors
        return out

    @classmethod
    def refused(cls, exc: InspectorError) -> Answer:
        return cls(None, [error(exc.message, exc.code, **exc.extensions())], ran=False)


def once_per_backend(errors: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A backend this inspector was started without is said once per answer, at the
    first field that needed it, with how many fields it nulled (``extensions.fields``),
    not once per item of every list."""
    out: list[dict[str, Any]] = []
    first: dict[object, dict[str, Any]] = {}
    for each in errors:
        extensions = each.get("extensions") or {}
        if extensions.get("code") != "BACKEND_NOT_CONFIGURED":
            out.append(each)
            continue
        seen = first.get(extensions.get("backend"))
        if seen is None:
            each = {**each, "extensions": {**extensions, "fields": 1}}
            first[extensions.get("backend")] = each
            out.append(each)
        else:
            seen["extensions"]["fields"] += 1
    return out


def _canonical(value: object) -> str:
    # sort_keys: the same variables in another order are the same request; JSON keeps
    # 1, 1.0 and true apart.
    return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)


def _copied(value: Any) -> Any:
    # Identical concurrent runs share one answer; the entries narrow theirs in place.
    if type(value) is dict:
        return {k: _copied(v) for k, v in value.items()}
    if type(value) is list:
        return [_copied(v) for v in value]
    return value


class Runner:
    """Runs documents through ``schema`` for a principal, under ``settings``."""

    def __init__(
        self,
        schema: strawberry.Schema,
        settings: Settings,
        documents: Registry | None = None,
        cursors: Sealer | None = None,
    ) -> None:
        self.schema = schema
        self.settings = settings
        self.documents = documents or registry()
        self.cursors = cursors or process_sealer()
        # The types as the API publishes them (its SDL), for what is checked before
        # execution: the cost of a document, and the REST routes' OpenAPI document.
        self.types: GraphQLSchema = build_schema(schema.as_str())
        # Parsed and validated once per text (``warm``: the documents the server ships).
        self.compiled = Documents(settings.bounds.max_tokens)
        self.costs: Lru[Hashable, Cost] = Lru(MAX_COSTS)
        bounds = settings.bounds
        self.slots = Slots(
            bounds.max_expensive_requests, bounds.busy_wait_s, bounds.max_expensive_per_principal
        )
        self.flights: Flights[Hashable, Answer] | None = None
        if settings.switches.single_flight:
            self.flights = Flights(
                fresh_for_s=settings.switches.fresh_for_s,
                # A refusal (BUSY, over the deadline) is no answer to hand the next poller.
                keep=lambda answer: answer.ran and answer.data is not None,
                refresh_deadline_s=bounds.request_deadline_s or 30.0,
            )

    def warm(self) -> None:
        """Parse the documents the server ships now (``serve`` at start-up), so that the
        first poll of each does not."""
        self.compiled.warm(d.text for d in self.documents)

    async def run(
        self,
        request: Request,
        backends: Backends,
        principal: Principal,
        *,
        max_nodes: int | None = None,
        read_only: bool = False,
    ) -> Answer:
        """The answer to ``request``; ``max_nodes`` tightens the cost limit for this run
        (the MCP GraphQL tool's). With ``read_only`` the caller promises not to change
        the answer (it only encodes it), and may be handed one shared with others."""
        try:
            compiled = self._document(request)
            document = compiled.document
            operation = get_operation_ast(document, request.operation_name)
            if operation is None:
                raise InvalidDocument("The document has no single operation to run.")
            if operation.operation != OperationType.QUERY:
                raise InvalidDocument("Only queries run here: this API never writes.")
            expensive = self._admit(compiled, request, max_nodes)
        except RequestRefused as exc:
            return Answer.refused(exc)
        except GraphQLError as exc:
            return Answer(None, [formatted(exc, "GRAPHQL_PARSE_FAILED")], ran=False)
        context = Context.build(backends, principal, self.settings, self.cursors)

        def start() -> asyncio.Future[Answer]:
            return asyncio.ensure_future(self._execute(compiled, request, context, expensive))

        key = self._flight_key(principal, compiled.text, request)
        work = start() if key is None or self.flights is None else self.flights.join(key, start)
        deadline = self.settings.bounds.request_deadline_s
        try:
            if deadline <= 0:
                answer = await work
            else:
                async with asyncio.timeout(deadline):
                    answer = await work
        except TimeoutError:
            # The execution was cancelled at its next await (a shared one only when no
            # other caller still waits for it), and with it the batches nobody else needs.
            late = DeadlineExceeded(
                f"The request ran past its {deadline:g} s deadline and was cancelled. "
                "Ask for smaller pages or fewer nested lists."
            )
            return Answer(None, [error(late.message, late.code)])
        if key is None or read_only:
            return answer
        return replace(answer, data=_copied(answer.data))

    def _document(self, request: Request) -> Compiled:
        switches = self.settings.switches
        text = resolve(request.query, request.extensions, self.documents, switches.registered_only)
        if not text:
            raise BadRequest("No GraphQL query found in the request.")
        return self.compiled.get(text)

    def _admit(self, compiled: Compiled, request: Request, max_nodes: int | None) -> bool:
        """Refuses a document past the cost limits; whether it needs a slot."""
        bounds = cost_limits(self.settings.bounds)
        if max_nodes is not None:
            bounds = replace(bounds, max_nodes=min(max_nodes, bounds.max_nodes))
        cost = self._cost(compiled, request, bounds)
        if cost.exceeded is not None:
            limit = getattr(bounds, f"max_{cost.exceeded}")
            raise QueryTooCostly(
                f"This query asks for more than {limit} {LIMIT_TEXT[cost.exceeded]}. Ask for "
                "smaller pages (first), fewer nested lists or fewer aliases."
            )
        return cost.nodes >= self.settings.bounds.expensive_nodes

    def _cost(self, compiled: Compiled, request: Request, bounds: CostLimits) -> Cost:
        """The document's cost, kept by its text, operation, variables and limits."""
        try:
            key: Hashable | None = (
                compiled.text,
                request.operation_name,
                _canonical(request.variables or {}),
                bounds,
            )
            hash(key)
        except (TypeError, ValueError):
            key = None  # variables that are not plain JSON: computed, not kept
        cost = self.costs.get(key) if key is not None else None
        if cost is None:
            cost = query_cost(
                self.types, compiled.document, request.operation_name, request.variables, bounds
            )
            if key is not None:
                self.costs.put(key, cost)
        return cost

    def _flight_key(self, principal: Principal, text: str, request: Request) -> Hashable | None:
        if self.flights is None:
            return None
        try:
            shape = _canonical([request.variables or {}, request.extensions or {}])
        except (TypeError, ValueError):
            return None  # not plain JSON: nothing to compare it by safely
        # The principal whole (name, role, owners): a viewer never sees another's answer.
        return (principal, text, request.operation_name, shape)

    async def _execute(
        self,
        compiled: Compiled,
        request: Request,
        context: Context,
        expensive: bool,
    ) -> Answer:
        if expensive:
            try:
                await self.slots.acquire(context.principal.name)
            except RequestRefused as exc:
                return Answer.refused(exc)
        try:
            with parsed_once(compiled):
                result = await self.schema.execute(
                    compiled.text,
                    variable_values=request.variables,
                    context_value=context,
                    operation_name=request.operation_name,
                )
        finally:
            if expensive:
                self.slots.release(context.principal.name)
        errors = once_per_backend([dict(e.formatted) for e in result.errors or ()])
        # Validation errors are at no path and leave no data: the request did not run.
        ran = result.data is not None or any(e.path is not None for e in result.errors or ())
        return Answer(result.data, errors, ran=ran or not errors)
