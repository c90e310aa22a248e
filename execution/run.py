"""Running a document for a principal: the schema, ``Context``, limits and codes of
``/graphql``.

An answer is what ``/graphql`` would have sent (``data``, ``errors`` with
``extensions.code``); the entries map the codes to their own statuses. A caller may
tighten the node cost for one run (the MCP GraphQL tool does): the document is costed
as the admission check costs it and refused ``QUERY_TOO_COSTLY`` past that.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import strawberry
from graphql import GraphQLError, parse
from openrl_inspect.core.principal import Principal
from openrl_inspect.core.settings import Limits
from openrl_inspect.execution.admission import cost_limits
from openrl_inspect.execution.cost import query_cost
from openrl_inspect.execution.registry import Document, Registry, registry
from openrl_inspect.resolvers.context import Backends, Context
from strawberry.exceptions import MissingQueryError
from strawberry.schema.exceptions import CannotGetOperationTypeError, InvalidOperationTypeError

#: Apollo's codes for a persisted query the server does not hold, and for a text that
#: is not one of the registered documents when only those may run.
PERSISTED_QUERY_NOT_FOUND = "PERSISTED_QUERY_NOT_FOUND"
NOT_REGISTERED = "PERSISTED_QUERY_NOT_IN_LIST"


def error(message: str, code: str, **extensions: Any) -> dict[str, Any]:
    """A GraphQL error as the API formats it."""
    return {"message": message, "extensions": {"code": code, **extensions}}


@dataclass(frozen=True)
class Answer:
    data: dict[str, Any] | None
    errors: list[dict[str, Any]] = field(default_factory=list)

    @property
    def codes(self) -> list[str]:
        return [str((e.get("extensions") or {}).get("code", "INTERNAL")) for e in self.errors]

    def body(self) -> dict[str, Any]:
        out: dict[str, Any] = {"data": self.data}
        if self.errors:
            out["errors"] = self.errors
        return out


def _copied(value: Any) -> Any:
    if type(value) is dict:
        return {k: _copied(v) for k, v in value.items()}
    if type(value) is list:
        return [_copied(v) for v in value]
    return value


class Engine:
    """Runs documents through ``schema`` (the one ``/graphql`` serves)."""

    def __init__(
        self,
        schema: strawberry.Schema,
        limits: Limits,
        documents: Registry | None = None,
    ) -> None:
        self.schema = schema
        self.limits = limits
        self.documents = documents or registry()

    async def run(
        self,
        backends: Backends,
        principal: Principal,
        document: Document | str,
        variables: dict[str, Any] | None = None,
        *,
        max_nodes: int | None = None,
    ) -> Answer:
        """A registered document (by object or name), or free text when ``document``
        is a ``Document`` made by the caller (the GraphQL tool's)."""
        if isinstance(document, str):
            document = self.documents[document]
        elif self.limits.registered_only and not self.documents.holds(document.text):
            return Answer(None, [error("Only registered documents may run here.", NOT_REGISTERED)])
        if max_nodes is not None:
            refused = self._over(document.text, variables, max_nodes)
            if refused is not None:
                return Answer(None, [refused])
        context = Context.build(backends, self.limits, principal)
        try:
            result = await self.schema.execute(
                document.text, variable_values=variables, context_value=context
            )
        except (MissingQueryError, CannotGetOperationTypeError, InvalidOperationTypeError):
            # No query operation to run (empty text, several unnamed operations, a
            # mutation): what /graphql answers 400.
            refusal = "The document has no single query operation to run."
            return Answer(None, [error(refusal, "BAD_REQUEST")])
        errors = [dict(e.formatted) for e in result.errors or ()]
        # A copy: identical concurrent runs share one result (``single_flight``) and
        # the entries narrow their answer in place (``narrow``).
        return Answer(_copied(result.data), errors)

    def _over(
        self, text: str, variables: dict[str, Any] | None, max_nodes: int
    ) -> dict[str, Any] | None:
        try:
            parsed = parse(text)
        except GraphQLError:
            return None  # the run itself answers the syntax error, coded
        bounds = replace(cost_limits(self.limits), max_nodes=max_nodes)
        cost = query_cost(self.schema._schema, parsed, None, variables, bounds)
        if cost.exceeded is None:
            return None
        limit = max_nodes if cost.exceeded == "nodes" else getattr(bounds, f"max_{cost.exceeded}")
        return error(
            f"This query asks for more than {limit} {cost.exceeded} here. Ask for smaller "
            "pages (first), fewer nested lists or fewer aliases.",
            "QUERY_TOO_COSTLY",
        )
