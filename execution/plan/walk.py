"""A plan run level by level: every parent of a selection at once.

For each field of a selection, its values are reached for all the level's parents in one
loop (a read, a call of a resolver of ours, or the field's own resolver), the
awaitables among them awaited together, and the values completed: a leaf serialised into
its parent's answer, an object or a list of objects gathered as the parents of the
field's sub-selection, which then runs the same way. A relation thus costs one loader
batch and one await per level, not one per item, and a plain field no resolver call.

Errors are graphql-core's, at the same paths with the same messages: a value that is an
exception, null where the type forbids it, a leaf its type refuses, a list that is no
list. A failure in a non-null position nulls the nearest nullable position above it (the
whole ``data`` at the top), and, as graphql-core's ``CollectedErrors`` does, an error
raised under a position already nulled is dropped.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from graphql import (
    GraphQLError,
    GraphQLObjectType,
    GraphQLResolveInfo,
    Undefined,
)
from graphql.execution import VariableValues, get_argument_values
from graphql.pyutils import inspect
from openrl_inspect.execution.plan.compile import Field, Selection
from openrl_inspect.execution.plan.fields import How, Kind, Shape
from openrl_inspect.execution.plan.positions import FAILED, Errors, Obj, Pos


@dataclass
class Counts:
    read: int = 0  # values read by the plan itself
    called: int = 0  # resolvers of ours called directly
    resolved: dict[str, int] = field(default_factory=dict)  # fields' own resolvers, by field


def _iterable(value: Any) -> bool:
    # graphql-core's is_iterable: any iterable but a string, bytes or mapping.
    return isinstance(value, Iterable) and not isinstance(value, str | bytes | bytearray | Mapping)


@dataclass
class Walk:
    """One run of a plan."""

    variables: VariableValues
    root_value: Any
    is_awaitable: Callable[[Any], bool]
    field_resolver: Callable[..., Any]
    info_class: Callable[..., Any]
    make_info: Callable[..., GraphQLResolveInfo[Any]]
    hide_suggestions: bool
    counts: Counts = field(default_factory=Counts)
    errors: Errors = field(default_factory=Errors)
    _arguments: dict[int, dict[str, Any] | Exception] = field(default_factory=dict)

    async def run(self, root: Selection) -> dict[str, Any] | None:
        holder: dict[str, Any] = {"data": None}
        out = dict.fromkeys(root.keys)
        holder["data"] = out
        top = Pos(holder, "data", True, None, None)
        await self.level(root, [Obj(self.root_value, out, top)])
        data: dict[str, Any] | None = holder["data"]
        return data

    # -- a level -----------------------------------------------------------------------

    async def level(self, selection: Selection, objs: list[Obj]) -> None:
        """One selection for all its parents: every field's values reached (the
        awaitables among them awaited together), then completed in field order, then the
        sub-selections, all at once."""
        parent = selection.type
        fields = selection.fields
        values_of: list[list[Any]] = []
        waiting: list[int] = []
        for index, f in enumerate(fields):
            if f.access.how is How.READ:
                values = self._read(f, objs)
            else:
                values = self._invoke(f, parent, objs)
            values_of.append(values)
            if any(self._pending(f.shape, v) for v in values):
                waiting.append(index)
        if len(waiting) == 1:
            index = waiting[0]
            values_of[index] = await self._resolved(fields[index].shape, values_of[index])
        elif waiting:
            done = await asyncio.gather(
                *(self._resolved(fields[i].shape, values_of[i]) for i in waiting)
            )
            for index, values in zip(waiting, done, strict=True):
                values_of[index] = values
        deferred: list[tuple[GraphQLError, Pos]] = []
        below: list[tuple[Selection, list[Obj]]] = []
        for f, values in zip(fields, values_of, strict=True):
            children = self._settle(f, parent, objs, values, deferred)
            if children:
                assert f.child is not None
                below.append((f.child, children))
        if deferred:
            # A failure in a non-null position nulls its nearest nullable ancestor once
            # the level's other fields are settled, as graphql-core records it when it
            # reaches that ancestor; what it nulled is not answered further.
            for error, pos in deferred:
                self.errors.null(error, pos)
            below = [(sel, [o for o in objs_ if not self.errors.dead(o)]) for sel, objs_ in below]
        if len(below) == 1:
            await self.level(*below[0])
        elif below:
            await asyncio.gather(*(self.level(sel, objs_) for sel, objs_ in below if objs_))

    def _pending(self, shape: Shape, value: Any) -> bool:
        if self.is_awaitable(value):
            return True
        # A list of awaitables (graphql-core awaits each item).
        return (
            shape.kind is Kind.LIST
            and type(value) is list
            and any(self.is_awaitable(item) for item in value)
        )

    async def _resolved(self, shape: Shape, values: list[Any]) -> list[Any]:
        values = await self._await_all(values)
        if shape.kind is Kind.LIST:
            values = [await self._await_all(v) if type(v) is list else v for v in values]
        return values

    async def _await_all(self, values: list[Any]) -> list[Any]:
        waiting = [i for i, v in enumerate(values) if self.is_awaitable(v)]
        if not waiting:
            return values
        if len(values) == 1:
            # One parent (a root field, a single object): awaited as graphql-core awaits
            # a field, so that fields failing together are recorded in the same order.
            try:
                return [await values[0]]
            except Exception as raw:
                return [raw]
        done = await asyncio.gather(*(values[i] for i in waiting), return_exceptions=True)
        values = list(values)
        for i, value in zip(waiting, done, strict=True):
            if isinstance(value, BaseException) and not isinstance(value, Exception):
                raise value  # a cancellation is the run's, not the field's
            values[i] = value
        return values

    # -- reaching values ---------------------------------------------------------------

    def _read(self, f: Field, objs: list[Obj]) -> list[Any]:
        read = f.access.read
        assert read is not None
        self.counts.read += len(objs)
        values: list[Any] = []
        append = values.append
        for obj in objs:
            try:
                append(read(obj.source))
            except Exception as raw:
                append(raw)
        return values

    def _args(self, f: Field) -> dict[str, Any] | Exception:
        """The field's arguments, coerced once per run (they depend on the variables
        alone), or the error coercing them raised (each parent's field then fails)."""
        if not f.has_arguments:
            return {}
        known = self._arguments.get(id(f))
        if known is None:
            try:
                known = get_argument_values(
                    f.field_def, f.nodes[0], self.variables, None, self.hide_suggestions
                )
            except Exception as raw:
                known = raw
            self._arguments[id(f)] = known
        return known

    def _invoke(self, f: Field, parent: GraphQLObjectType, objs: list[Obj]) -> list[Any]:
        args = self._args(f)
        if isinstance(args, Exception):
            return [args] * len(objs)
        access = f.access
        values: list[Any] = []
        append = values.append
        if access.how is How.CALL:
            call = access.call
            assert call is not None
            kwargs = {param: args[name] for name, param in access.names if name in args}
            self.counts.called += len(objs)
            for obj in objs:
                try:
                    if access.info_name is not None:
                        raw = self.make_info(f, parent, self._field_pos(f, obj, parent).path)
                        kwargs[access.info_name] = self.info_class(
                            _raw_info=raw, _field=access.field
                        )
                    append(call(obj.source, **kwargs) if access.takes_self else call(**kwargs))
                except Exception as raw_error:
                    append(raw_error)
            return values
        resolve = f.field_def.resolve or self.field_resolver
        resolved = self.counts.resolved
        resolved[f.label] = resolved.get(f.label, 0) + len(objs)
        for obj in objs:
            try:
                info = self.make_info(f, parent, self._field_pos(f, obj, parent).path)
                append(resolve(obj.source, info, **args))
            except Exception as raw_error:
                append(raw_error)
        return values

    # -- completing values -------------------------------------------------------------

    @staticmethod
    def _field_pos(f: Field, obj: Obj, parent: GraphQLObjectType) -> Pos:
        return Pos(obj.out, f.key, f.shape.nullable, obj.pos, parent.name)

    def _settle(
        self,
        f: Field,
        parent: GraphQLObjectType,
        objs: list[Obj],
        values: list[Any],
        deferred: list[tuple[GraphQLError, Pos]],
    ) -> list[Obj]:
        """Each parent's value completed into its answer; the objects to go on with."""
        shape = f.shape
        key = f.key
        children: list[Obj] = []
        passthrough = shape.passthrough
        coerce = shape.coerce
        nullable = shape.nullable
        typename = parent.name
        for obj, value in zip(objs, values, strict=True):
            if shape.kind is Kind.LEAF:
                # The common case inline: a plain leaf that is its own serialisation, or
                # one its type serialises.
                if type(value) is passthrough:
                    obj.out[key] = value
                    continue
                if value is None:
                    if nullable:
                        continue
                elif not isinstance(value, Exception):
                    assert coerce is not None
                    try:
                        coerced = coerce(value)
                    except Exception:
                        coerced = None  # raised again, located, by ``complete``
                    if coerced is not None and coerced is not Undefined:
                        obj.out[key] = coerced
                        continue
            pos = Pos(obj.out, key, nullable, obj.pos, typename)
            done = self.complete(f, shape, value, pos, children, deferred)
            if done is not FAILED:
                obj.out[key] = done
        return children

    def complete(
        self,
        f: Field,
        shape: Shape,
        value: Any,
        pos: Pos,
        children: list[Obj],
        deferred: list[tuple[GraphQLError, Pos]],
    ) -> Any:
        """``value`` completed for ``pos`` (an object queued in ``children``), or
        ``FAILED`` once its error is recorded (or, in a non-null position, ``deferred``)."""
        if isinstance(value, Exception):
            return self.errors.fail(value, f.nodes, pos, deferred)
        if value is None or value is Undefined:
            if shape.nullable:
                return None
            return self.errors.fail(
                TypeError(f"Cannot return null for non-nullable field {f.label}."),
                f.nodes,
                pos,
                deferred,
            )
        if shape.kind is Kind.LEAF:
            if type(value) is shape.passthrough:
                return value
            assert shape.coerce is not None
            try:
                coerced = shape.coerce(value)
            except Exception as raw:
                return self.errors.fail(raw, f.nodes, pos, deferred)
            if coerced is None or coerced is Undefined:
                return self.errors.fail(
                    TypeError(_refused(f, value, coerced)), f.nodes, pos, deferred
                )
            return coerced
        if shape.kind is Kind.OBJECT:
            assert f.child is not None
            out = dict.fromkeys(f.child.keys)
            children.append(Obj(value, out, pos))
            return out
        if not _iterable(value):
            message = f"Expected Iterable, but did not find one for field '{f.label}'."
            return self.errors.fail(GraphQLError(message), f.nodes, pos, deferred)
        item = shape.item
        assert item is not None
        items: list[Any] = []
        for index, each in enumerate(value):
            items.append(None)
            at = Pos(items, index, item.nullable, pos, None)
            done = self.complete(f, item, each, at, children, deferred)
            if done is FAILED:
                if not item.nullable:
                    return FAILED  # the null is in place above the list
                continue
            items[index] = done
        return items


def _refused(f: Field, value: Any, coerced: Any) -> str:
    inner = f.field_def.type
    while hasattr(inner, "of_type"):
        inner = inner.of_type
    return (
        f"Expected `{inspect(inner)}.coerce_output_value({inspect(value)})` to return "
        f"non-nullable value, returned: {inspect(coerced)}"
    )
