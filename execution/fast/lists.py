"""Completing a planned list field whose items are already values.

graphql-core's ``complete_iterable_value`` item by item, minus its per-item generic
dispatch: a leaf item is serialised at once, an object item goes straight to its
sub-selection. An item that is unusual (an exception, an awaitable, null where the
type forbids it, a value its scalar refuses) is completed by graphql-core's own item
completion, with the info object built once for the list, so its error and path are
the stock ones.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from graphql import GraphQLObjectType, GraphQLResolveInfo
from graphql.execution.collect_fields import FieldDetailsList
from graphql.pyutils import AwaitableOrValue, Path, gather_with_cancel
from openrl_inspect.execution.fast.plan import NOT_DONE, FieldPlan, Kind, Shape, leaf_value

if TYPE_CHECKING:
    from openrl_inspect.execution.fast.executor import FastExecutor


# size: graphql-core's complete_iterable_value with the item dispatch inlined
def complete_list(
    executor: FastExecutor,
    plan: FieldPlan,
    parent_type: GraphQLObjectType,
    details: FieldDetailsList,
    path: Path,
    items: list[Any],
) -> AwaitableOrValue[list[Any]]:
    shape = plan.shape.item
    assert shape is not None
    item_type = shape.type
    is_awaitable = executor.is_awaitable
    info: GraphQLResolveInfo[Any] | None = None
    results: list[Any] = []
    append = results.append
    pending: list[int] = []
    leaf = shape.kind is Kind.LEAF
    object_type = shape.object_type
    try:
        for index, item in enumerate(items):
            if item is None:
                if not shape.non_null:
                    append(None)
                    continue
            elif not isinstance(item, Exception) and not is_awaitable(item):
                if leaf:
                    done = leaf_value(shape, item, is_awaitable)
                    if done is not NOT_DONE:
                        append(done)
                        continue
                else:
                    assert object_type is not None
                    if _object_item(
                        executor, shape, object_type, details, path, index, item, results
                    ):
                        pending.append(index)
                    continue
            # The stock item completion, for what the fast path does not answer.
            if info is None:
                info = executor.info(plan.field_def, parent_type, details, path)
            item_path = path.add_key(index, None)
            if is_awaitable(item):
                append(
                    executor.complete_awaitable_list_item_value(
                        item, item_type, details, info, item_path, None
                    )
                )
                pending.append(index)
            elif executor.complete_list_item_value(
                item, results, item_type, details, info, item_path, None
            ):
                pending.append(index)
    except Exception:
        if pending:
            executor.settle_in_background([results[i] for i in pending])
        raise
    if not pending:
        return results
    return _gather_items(results, pending)


def _object_item(
    executor: FastExecutor,
    shape: Shape,
    object_type: GraphQLObjectType,
    details: FieldDetailsList,
    path: Path,
    index: int,
    item: Any,
    results: list[Any],
) -> bool:
    """Append an object item's completion; whether it is still to be awaited."""
    item_path = path.add_key(index, None)
    try:
        completed = executor.collect_and_execute_subfields(
            object_type, details, item_path, item, None
        )
    except Exception as raw:
        executor.handle_field_error(raw, shape.type, details, item_path)
        results.append(None)
        return False
    if executor.is_awaitable(completed):
        results.append(executor.await_guarded(completed, shape.type, details, item_path))
        return True
    results.append(completed)
    return False


async def _gather_items(results: list[Any], pending: list[int]) -> list[Any]:
    if len(pending) == 1:
        results[pending[0]] = await results[pending[0]]
    else:
        values = await gather_with_cancel(*(results[i] for i in pending))
        for index, value in zip(pending, values, strict=True):
            results[index] = value
    return results
