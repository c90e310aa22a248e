"""An operation compiled into a plan: per object type, the fields to answer, each with how
it is reached (``fields.Access``), how its value completes (``fields.Shape``) and its own
sub-selection, planned the same way.

Fields are collected as the specification's CollectFields does (and graphql-core with
it): in document order, grouped by response key, through inline fragments and fragment
spreads whose type condition applies (each fragment once per selection), leaving out
what ``@skip``/``@include`` exclude under the run's variables. A plan therefore depends
on the document, its operation and the values of the variables its directives read, and
is kept by exactly those (``executor.Plans``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from graphql import (
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLField,
    GraphQLIncludeDirective,
    GraphQLObjectType,
    GraphQLSchema,
    GraphQLSkipDirective,
    InlineFragmentNode,
    OperationDefinitionNode,
    SelectionSetNode,
    TypeNameMetaFieldDef,
    VariableNode,
    is_abstract_type,
    type_from_ast,
)
from graphql.execution import VariableValues, get_directive_values
from openrl_inspect.execution.plan.fields import Access, Kind, Shape, access, shape_of, typename
from strawberry.schema.config import StrawberryConfig


@dataclass(frozen=True, slots=True)
class Field:
    """One response key of a selection: a schema field and the nodes that ask for it."""

    key: str
    nodes: list[FieldNode]
    field_def: GraphQLField
    label: str  # "Type.field", as errors and statistics name it
    access: Access
    shape: Shape
    child: Selection | None  # the sub-selection, for an object or a list of objects
    has_arguments: bool


@dataclass(frozen=True, slots=True)
class Selection:
    type: GraphQLObjectType
    fields: list[Field]
    keys: tuple[str, ...]  # the answer's keys, in order


@dataclass(frozen=True)
class Planner:
    """Compiles operations of one schema (its config says how Strawberry names arguments)."""

    schema: GraphQLSchema
    config: StrawberryConfig

    def selection(
        self,
        type_: GraphQLObjectType,
        sets: Iterable[SelectionSetNode],
        fragments: dict[str, FragmentDefinitionNode],
        variables: VariableValues,
    ) -> Selection:
        grouped: dict[str, list[FieldNode]] = {}
        visited: set[str] = set()
        for selection_set in sets:
            self._collect(type_, selection_set, fragments, variables, grouped, visited)
        fields: list[Field] = []
        for key, nodes in grouped.items():
            name = nodes[0].name.value
            field_def = self.schema.get_field(type_, name)
            if field_def is None:
                continue  # not in the schema: left out, as graphql-core does
            fields.append(self._field(type_, key, nodes, field_def, fragments, variables))
        return Selection(type_, fields, tuple(f.key for f in fields))

    def _field(
        self,
        type_: GraphQLObjectType,
        key: str,
        nodes: list[FieldNode],
        field_def: GraphQLField,
        fragments: dict[str, FragmentDefinitionNode],
        variables: VariableValues,
    ) -> Field:
        shape = shape_of(field_def.type)
        how = (
            typename(type_.name)
            if field_def is TypeNameMetaFieldDef
            else access(field_def, self.config)
        )
        inner = shape
        while inner.kind is Kind.LIST:
            assert inner.item is not None
            inner = inner.item
        child = None
        if inner.kind is Kind.OBJECT:
            assert inner.object_type is not None
            sets = [n.selection_set for n in nodes if n.selection_set is not None]
            child = self.selection(inner.object_type, sets, fragments, variables)
        return Field(
            key,
            nodes,
            field_def,
            f"{type_.name}.{nodes[0].name.value}",
            how,
            shape,
            child,
            bool(field_def.args or nodes[0].arguments),
        )

    def _collect(
        self,
        type_: GraphQLObjectType,
        selection_set: SelectionSetNode,
        fragments: dict[str, FragmentDefinitionNode],
        variables: VariableValues,
        grouped: dict[str, list[FieldNode]],
        visited: set[str],
    ) -> None:
        for node in selection_set.selections:
            if isinstance(node, FieldNode):
                if _included(node, variables):
                    key = node.alias.value if node.alias else node.name.value
                    grouped.setdefault(key, []).append(node)
            elif isinstance(node, InlineFragmentNode):
                if _included(node, variables) and self._applies(node, type_):
                    self._collect(type_, node.selection_set, fragments, variables, grouped, visited)
            elif isinstance(node, FragmentSpreadNode):
                name = node.name.value
                if name in visited or not _included(node, variables):
                    continue
                visited.add(name)
                fragment = fragments.get(name)
                if fragment is not None and self._applies(fragment, type_):
                    self._collect(
                        type_, fragment.selection_set, fragments, variables, grouped, visited
                    )

    def _applies(
        self, fragment: InlineFragmentNode | FragmentDefinitionNode, type_: GraphQLObjectType
    ) -> bool:
        condition = fragment.type_condition
        if condition is None:
            return True
        named = type_from_ast(self.schema, condition)
        if named is type_:
            return True
        return is_abstract_type(named) and self.schema.is_sub_type(named, type_)


def _included(
    node: FieldNode | InlineFragmentNode | FragmentSpreadNode, variables: VariableValues
) -> bool:
    """The specification's rule: ``@skip(if: true)`` or ``@include(if: false)`` excludes."""
    if not node.directives:
        return True
    skip = get_directive_values(GraphQLSkipDirective, node, variables)
    if skip is not None and skip["if"] is True:
        return False
    include = get_directive_values(GraphQLIncludeDirective, node, variables)
    return not (include is not None and include["if"] is False)


def directive_variables(
    operation: OperationDefinitionNode, fragments: dict[str, FragmentDefinitionNode]
) -> tuple[str, ...]:
    """The variables ``@skip`` and ``@include`` read anywhere in the operation and its
    fragments: a plan holds for every run that gives them the same values."""
    names: set[str] = set()
    pending: list[SelectionSetNode] = [operation.selection_set]
    pending += [f.selection_set for f in fragments.values()]
    while pending:
        for node in pending.pop().selections:
            for directive in node.directives or ():
                if directive.name.value in ("skip", "include"):
                    for argument in directive.arguments or ():
                        if isinstance(argument.value, VariableNode):
                            names.add(argument.value.name.value)
            selection_set = getattr(node, "selection_set", None)
            if selection_set is not None:
                pending.append(selection_set)
    return tuple(sorted(names))
