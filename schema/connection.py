"""Relay-style connections, as GitHub's API has them.

As in GitHub's API, an edge's node and the items of ``nodes`` are nullable: a record
that cannot be read goes null with its own coded error (BAD_RECORD) at its own path,
and the list and its other items stand.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar, cast

import strawberry
from openrl_inspect.core.errors import BadRecord
from openrl_inspect.resolvers.paging import Cursor, Paged

T = TypeVar("T")
R = TypeVar("R")


@strawberry.type
class PageInfo:
    has_next_page: bool
    has_previous_page: bool
    start_cursor: str | None
    end_cursor: str | None


@strawberry.type
class Edge(Generic[T]):
    cursor: str
    node: T


@strawberry.type(name="Edge")
class RecordEdge(Generic[T]):
    """An edge of a stored record: its node goes null with its own error when bad."""

    _cursor: strawberry.Private[str | Cursor]  # encoded when selected (``Cursor``)
    _node: strawberry.Private[object]  # a T, or the BadRecord it could not be read as

    @strawberry.field
    def cursor(self) -> str:
        return str(self._cursor)

    @strawberry.field
    def node(self) -> T | None:
        if isinstance(self._node, BadRecord):
            raise self._node
        return cast(T, self._node)


@strawberry.type(description="A page of a list. `truncated` is true when items exist past it.")
class Connection(Generic[T]):
    edges: list[RecordEdge[T]]
    page_info: PageInfo
    total_count: int = strawberry.field(description="Items in the whole list, not the page.")
    truncated: bool = strawberry.field(
        description="True when this page does not hold every item after the cursor."
    )

    @strawberry.field(description="The nodes of `edges`, without cursors.")
    def nodes(self) -> list[T | None]:
        # graphql-core raises an item that is an exception at that item's own path.
        return [cast(T, edge._node) for edge in self.edges]

    @classmethod
    def of(cls, page: Paged[R], make: Callable[[R], T]) -> Connection[T]:
        edges: list[RecordEdge[T]] = [
            RecordEdge(_cursor=cursor, _node=rec if isinstance(rec, BadRecord) else make(rec))
            for cursor, rec in page.items
        ]
        return cls(
            edges=edges,
            page_info=PageInfo(
                has_next_page=page.has_next,
                has_previous_page=page.has_previous,
                start_cursor=str(edges[0]._cursor) if edges else None,
                end_cursor=page.end_cursor,
            ),
            total_count=page.total,
            truncated=page.has_next,
        )
