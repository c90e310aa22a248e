"""A validation rule that refuses queries asking for too many nodes at once.

The cost of a query is the number of nodes its connections could return: each field
with a ``first`` argument multiplies the nodes below it, as GitHub counts. A ``first``
given by a variable counts as the maximum page size, an absent one as the default:
the rule runs before execution, without variable values.
"""

from __future__ import annotations

from typing import Any

from graphql import (
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    GraphQLNamedType,
    GraphQLObjectType,
    InlineFragmentNode,
    IntValueNode,
    OperationDefinitionNode,
    SelectionSetNode,
    ValidationContext,
    ValidationRule,
    get_named_type,
)


def node_cost_rule(max_nodes: int, default_page: int, max_page: int) -> type[ValidationRule]:
    class NodeCost(ValidationRule):
        def __init__(self, context: ValidationContext) -> None:
            super().__init__(context)
            self.fragments: dict[str, FragmentDefinitionNode] = {
                d.name.value: d
                for d in context.document.definitions
                if isinstance(d, FragmentDefinitionNode)
            }

        def enter_operation_definition(self, node: OperationDefinitionNode, *_: Any) -> None:
            schema = self.context.schema
            root = schema.get_root_type(node.operation)
            cost = self._cost(node.selection_set, root, 1, frozenset())
            if cost > max_nodes:
                self.report_error(
                    GraphQLError(
                        f"This query could return up to {cost} nodes; the limit is "
                        f"{max_nodes}. Ask for smaller pages (first) or fewer nested lists.",
                        node,
                        extensions={"code": "QUERY_TOO_COSTLY"},
                    )
                )

        def _cost(
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
                        total += self._cost(item.selection_set, child, mult, seen)
                    else:
                        below = self._cost(item.selection_set, child, mult * size, seen)
                        total += mult * size + below
                elif isinstance(item, InlineFragmentNode):
                    cond = item.type_condition
                    typ = self.context.schema.get_type(cond.name.value) if cond else parent
                    total += self._cost(item.selection_set, typ, mult, seen)
                elif isinstance(item, FragmentSpreadNode):
                    name = item.name.value
                    frag = self.fragments.get(name)
                    if frag is not None and name not in seen:
                        typ = self.context.schema.get_type(frag.type_condition.name.value)
                        total += self._cost(frag.selection_set, typ, mult, seen | {name})
            return total

        def _field(
            self, parent: GraphQLNamedType | None, field: FieldNode
        ) -> tuple[GraphQLNamedType | None, int | None]:
            """The field's named type, and its page size if it is a list with ``first``."""
            if not isinstance(parent, GraphQLObjectType):
                return None, None
            definition = parent.fields.get(field.name.value)
            if definition is None:
                return None, None  # unknown fields are reported by other rules
            child = get_named_type(definition.type)
            if "first" not in definition.args:
                return child, None
            for arg in field.arguments or ():
                if arg.name.value == "first":
                    if isinstance(arg.value, IntValueNode):
                        return child, max(0, int(arg.value.value))
                    return child, max_page
            return child, default_page

    return NodeCost
