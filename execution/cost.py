"""What a query could cost, computed before it runs, from what will actually run.

The cost of a query is the number of nodes its connections could return: each field
with a ``first`` argument multiplies the nodes below it, as GitHub counts; a list field
without ``first`` counts its default page. Variables are coerced as the executor will
coerce them (a variable the request leaves out takes the default written in the
document), and fields are collected as the executor collects them (``@skip`` and
``@include`` applied, fragments expanded, same-named fields merged), so the figure is
about the query that runs, not about the document's text.

A field that computes over more than its own record declares its weight in ``WEIGHTS``:
the nodes its work is worth for each parent (a summary the models it judges, ``attention``
what it scans, a metrics field its series, a log field its sources), multiplied through
the selection like a page. ``tests/scope/test_cost_counts_work.py`` runs a document
generated for every field and holds the measured work (records read, models judged)
within a fixed factor of this cost, so a new field that forgets its weight fails.

The walk also counts aliases, field selections and depth through the fragments, and
stops as soon as any count passes its limit: checking a hostile query costs no more than
checking the largest allowed one. It runs before graphql-core's validation (so a refused
query costs no validation either) and so takes nothing for granted: unknown fields and
fragments are skipped, and fragment cycles end at the depth limit. (Strawberry's own
depth and alias limiters walk every fragment spread anew, which is exponential in a
document of fragments that each spread the next twice: 20 of them took 13 s.)
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLIncludeDirective,
    GraphQLObjectType,
    GraphQLSchema,
    GraphQLSkipDirective,
    InlineFragmentNode,
    OperationDefinitionNode,
    SelectionSetNode,
    get_argument_values,
    get_directive_values,
    get_named_type,
    get_variable_values,
)
from graphql.execution.values import VariableValues


@dataclass(frozen=True)
class CostLimits:
    """The bounds one operation is held to (from ``context.Limits``)."""

    max_nodes: int = 250_000
    max_aliases: int = 30
    max_depth: int = 12
    # Field selections once fragments are expanded: bounds the work of a small document
    # that spreads the same fragments under many fields.
    max_fields: int = 2_000
    default_page: int = 20
    max_page: int = 100


# What judging one model is worth, in nodes: it reads the model's rollup (its recent
# steps and their ops in one record), its open ops, workers and placements, and runs the
# diagnosis.
JUDGED_MODEL = 10
# One metrics series read for a parent (the loaders batch the series of a level into one
# backend query, so a series costs what a record does).
SERIES = 1
# One log source queried for a parent: each is a query of its own.
LOG_QUERY = 5
# The states ``attention`` scans (``resolvers.summary.rollup.SEARCHED_STATES``).
ATTENTION_STATES = 4

Weigh = Callable[[Mapping[str, Any], CostLimits], int]


def _listed(args: Mapping[str, Any], name: str, limits: CostLimits) -> int:
    value = args.get(name)
    return min(len(value), limits.max_page) if isinstance(value, list) else limits.max_page


# The work of a computed field for one parent, beyond the nodes its page counts.
WEIGHTS: dict[str, Weigh] = {
    # Every model of one page of the session, judged.
    "Session.summary": lambda a, lim: lim.max_page * JUDGED_MODEL,
    "Model.summary": lambda a, lim: JUDGED_MODEL,
    # Every live model is looked at; the quiet and recently failed ones are judged, read
    # from the live index (a page of each state is the usual share).
    "Query.attention": lambda a, lim: ATTENTION_STATES * lim.max_page * JUDGED_MODEL,
    # A timeline reads its four sources (Redis, Kubernetes or the events log, Prometheus,
    # Cloud Logging); a session's merges its newest ten models'.
    "Model.timeline": lambda a, lim: 4 * LOG_QUERY,
    "Session.timeline": lambda a, lim: 10 * 4 * LOG_QUERY,
    # A session's GPU activity reads one page of its models and their GPUs' series.
    "Session.gpuActivity": lambda a, lim: lim.max_page * SERIES,
    "Model.gpuActivity": lambda a, lim: SERIES,
    "Model.sampling": lambda a, lim: SERIES,
    "Model.samplerBatchStats": lambda a, lim: SERIES,
    # The log fields merge their sources (worker, client, events), each a query.
    "Session.logs": lambda a, lim: 3 * LOG_QUERY,
    "Model.logs": lambda a, lim: 3 * LOG_QUERY,
    "Pod.logs": lambda a, lim: LOG_QUERY,
    "GPU.duty": lambda a, lim: SERIES,
    "GPU.series": lambda a, lim: SERIES,
    "Node.duty": lambda a, lim: SERIES,
    "Placement.gpuDuty": lambda a, lim: SERIES,
    "Worker.gpuDuty": lambda a, lim: SERIES,
    "Worker.vllm": lambda a, lim: SERIES,
    "Query.gpuDuty": lambda a, lim: _listed(a, "uuids", lim) * SERIES,
    "Query.nodeDuty": lambda a, lim: _listed(a, "nodes", lim) * SERIES,
    "Query.gpuSeries": lambda a, lim: SERIES,
    # A raw query returns up to a page of series (its own cap), unbatched.
    "Query.prometheusQuery": lambda a, lim: lim.max_page * SERIES + LOG_QUERY,
}


@dataclass
class Cost:
    """What the walk counted; ``exceeded`` names the first limit passed, if any."""

    nodes: int = 0
    aliases: int = 0
    fields: int = 0
    exceeded: str | None = None


class _Exceeded(Exception):
    pass


class _Walk:
    def __init__(
        self,
        schema: GraphQLSchema,
        fragments: Mapping[str, FragmentDefinitionNode],
        variables: VariableValues,
        limits: CostLimits,
    ) -> None:
        self.schema = schema
        self.fragments = fragments
        self.variables = variables
        self.limits = limits
        self.cost = Cost()

    def _included(self, node: FieldNode | FragmentSpreadNode | InlineFragmentNode) -> bool:
        skip = get_directive_values(GraphQLSkipDirective, node, self.variables)
        if skip is not None and skip.get("if") is True:
            return False
        include = get_directive_values(GraphQLIncludeDirective, node, self.variables)
        return not (include is not None and include.get("if") is False)

    def _applies(self, type_name: str | None, parent: GraphQLObjectType) -> bool:
        if type_name is None:
            return True
        condition = self.schema.get_type(type_name)
        return condition is parent or (
            condition is not None and self.schema.is_sub_type(condition, parent)  # type: ignore[arg-type]
        )

    def group(
        self, parent: GraphQLObjectType, sets: Iterable[SelectionSetNode]
    ) -> dict[str, list[FieldNode]]:
        """The fields that run under ``parent``, by response key, as the executor groups them."""
        grouped: dict[str, list[FieldNode]] = {}
        visited: set[str] = set()
        pending = list(sets)
        while pending:
            for item in pending.pop(0).selections:
                if not self._included(item):  # type: ignore[arg-type]
                    continue
                if isinstance(item, FieldNode):
                    key = (item.alias or item.name).value
                    grouped.setdefault(key, []).append(item)
                elif isinstance(item, InlineFragmentNode):
                    cond = item.type_condition
                    if self._applies(cond.name.value if cond else None, parent):
                        pending.append(item.selection_set)
                elif isinstance(item, FragmentSpreadNode):
                    name = item.name.value
                    frag = self.fragments.get(name)
                    if name in visited or frag is None:
                        continue
                    visited.add(name)
                    if self._applies(frag.type_condition.name.value, parent):
                        pending.append(frag.selection_set)
        return grouped

    def _args(self, definition: Any, node: FieldNode) -> dict[str, Any]:
        try:
            return get_argument_values(definition, node, self.variables)
        except Exception:
            return {}  # validation refuses it before anything runs

    def _page(self, definition: Any, args: Mapping[str, Any]) -> int | None:
        if "first" not in definition.args:
            return None
        value = args.get("first")
        if not isinstance(value, int) or isinstance(value, bool):
            return self.limits.default_page
        # Out-of-range sizes are refused by the resolvers; count what could run.
        return min(max(0, value), self.limits.max_page)

    def walk(
        self, parent: GraphQLObjectType, sets: Iterable[SelectionSetNode], mult: int, depth: int
    ) -> None:
        cost, limits = self.cost, self.limits
        for key, nodes in self.group(parent, sets).items():
            if depth > limits.max_depth:
                cost.exceeded = "depth"
                raise _Exceeded
            cost.fields += 1
            if key != nodes[0].name.value:
                cost.aliases += 1
            definition = parent.fields.get(nodes[0].name.value)
            child_mult = mult
            if definition is not None:
                args = self._args(definition, nodes[0])
                size = self._page(definition, args)
                if size is not None:
                    cost.nodes += mult * size
                    child_mult = mult * size
                weigh = WEIGHTS.get(f"{parent.name}.{nodes[0].name.value}")
                if weigh is not None:
                    cost.nodes += mult * weigh(args, limits)
            # Checked for every selection, ``__typename`` and unknown fields included:
            # a document of aliased ``__typename`` alone is still held to the limits.
            for name, count, limit in (
                ("aliases", cost.aliases, limits.max_aliases),
                ("fields", cost.fields, limits.max_fields),
                ("nodes", cost.nodes, limits.max_nodes),
            ):
                if count > limit:
                    cost.exceeded = name
                    raise _Exceeded
            if definition is None:
                continue  # __typename, or unknown (validation refuses it)
            child = get_named_type(definition.type)
            subsets = [n.selection_set for n in nodes if n.selection_set is not None]
            if subsets and isinstance(child, GraphQLObjectType):
                self.walk(child, subsets, child_mult, depth + 1)


def _operation(document: DocumentNode, name: str | None) -> OperationDefinitionNode | None:
    ops = [d for d in document.definitions if isinstance(d, OperationDefinitionNode)]
    if name is not None:
        ops = [op for op in ops if op.name and op.name.value == name]
    return ops[0] if len(ops) == 1 else None


def query_cost(
    schema: GraphQLSchema,
    document: DocumentNode,
    operation_name: str | None,
    variables: Mapping[str, Any] | None,
    limits: CostLimits,
) -> Cost:
    """What the operation could cost, at most; stops at the first limit passed.

    Variables that cannot be coerced cost nothing here: validation or the executor refuses
    them before any resolver runs.
    """
    op = _operation(document, operation_name)
    if op is None:
        return Cost()  # graphql-core reports the ambiguity itself
    try:
        coerced = get_variable_values(schema, op.variable_definitions or (), dict(variables or {}))
    except Exception:
        return Cost()
    if isinstance(coerced, list):
        return Cost()
    root = schema.get_root_type(op.operation)
    if root is None:
        return Cost()
    fragments = {
        d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)
    }
    walk = _Walk(schema, fragments, coerced, limits)
    with contextlib.suppress(_Exceeded):
        walk.walk(root, [op.selection_set], 1, 0)
    return walk.cost
