"""Refusing queries that ask for too many nodes at once, before they run.

The cost of a query is the number of nodes its connections could return: each field
with a ``first`` argument multiplies the nodes below it, as GitHub counts; a list field
without ``first`` counts its default page. The check runs just before execution, when
the variables are known, and answers ``QUERY_TOO_COSTLY`` without touching a backend.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from graphql import (
    DocumentNode,
    ExecutionResult,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    GraphQLNamedType,
    GraphQLObjectType,
    GraphQLSchema,
    InlineFragmentNode,
    IntValueNode,
    OperationDefinitionNode,
    SelectionSetNode,
    VariableNode,
    get_named_type,
)
from strawberry.extensions import SchemaExtension


class _Cost:
    def __init__(
        self,
        schema: GraphQLSchema,
        document: DocumentNode,
        variables: Mapping[str, Any],
        default_page: int,
        max_page: int,
    ) -> None:
        self.schema = schema
        self.variables = variables
        self.default_page = default_page
        self.max_page = max_page
        self.fragments = {
            d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)
        }

    def of(
        self,
        sel: SelectionSetNode | None,
        parent: GraphQLNamedType | None,
        mult: int,
        seen: frozenset[str],
    ) -> int:
        if sel is None:
            return 0
        total = 0
        for item in sel.selections:
            if isinstance(item, FieldNode):
                child, size = self._field(parent, item)
                if size is None:
                    total += self.of(item.selection_set, child, mult, seen)
                else:
                    total += mult * size + self.of(item.selection_set, child, mult * size, seen)
            elif isinstance(item, InlineFragmentNode):
                cond = item.type_condition
                typ = self.schema.get_type(cond.name.value) if cond else parent
                total += self.of(item.selection_set, typ, mult, seen)
            elif isinstance(item, FragmentSpreadNode):
                name = item.name.value
                frag = self.fragments.get(name)
                if frag is not None and name not in seen:
                    typ = self.schema.get_type(frag.type_condition.name.value)
                    total += self.of(frag.selection_set, typ, mult, seen | {name})
        return total

    def _field(
        self, parent: GraphQLNamedType | None, field: FieldNode
    ) -> tuple[GraphQLNamedType | None, int | None]:
        """The field's named type, and its page size when it is a paged list."""
        if not isinstance(parent, GraphQLObjectType):
            return None, None
        definition = parent.fields.get(field.name.value)
        if definition is None:
            return None, None
        child = get_named_type(definition.type)
        if "first" not in definition.args:
            return child, None
        for arg in field.arguments or ():
            if arg.name.value != "first":
                continue
            value: Any = None
            if isinstance(arg.value, IntValueNode):
                value = int(arg.value.value)
            elif isinstance(arg.value, VariableNode):
                value = self.variables.get(arg.value.name.value)
            if not isinstance(value, int) or isinstance(value, bool):
                # A wrongly typed variable: graphql-core refuses it with a clear error.
                return child, self.default_page
            # Out-of-range sizes are refused by the resolvers; count what could run.
            return child, min(max(0, value), self.max_page)
        return child, self.default_page


def query_cost(
    schema: GraphQLSchema,
    document: DocumentNode,
    operation_name: str | None,
    variables: Mapping[str, Any] | None,
    default_page: int,
    max_page: int,
) -> int:
    """How many nodes the operation's connections could return, at most."""
    ops = [d for d in document.definitions if isinstance(d, OperationDefinitionNode)]
    if operation_name is not None:
        ops = [op for op in ops if op.name and op.name.value == operation_name]
    if len(ops) != 1:
        return 0  # graphql-core reports the ambiguity itself
    op = ops[0]
    root = schema.get_root_type(op.operation)
    cost = _Cost(schema, document, variables or {}, default_page, max_page)
    return cost.of(op.selection_set, root, 1, frozenset())


def node_cost_limiter(max_nodes: int, default_page: int, max_page: int) -> type[SchemaExtension]:
    class NodeCostLimiter(SchemaExtension):
        def on_execute(self) -> Iterator[None]:
            ctx = self.execution_context
            document = ctx.graphql_document
            if document is not None and ctx.result is None:
                cost = query_cost(
                    ctx.schema._schema,
                    document,
                    ctx.operation_name,
                    ctx.variables,
                    default_page,
                    max_page,
                )
                if cost > max_nodes:
                    ctx.result = ExecutionResult(
                        data=None,
                        errors=[
                            GraphQLError(
                                f"This query could return up to {cost} nodes; the limit is "
                                f"{max_nodes}. Ask for smaller pages (first) or fewer "
                                "nested lists.",
                                extensions={"code": "QUERY_TOO_COSTLY"},
                            )
                        ],
                    )
            yield

    return NodeCostLimiter
