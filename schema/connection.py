"""Relay-style connections, as GitHub's API has them.

As in GitHub's API, an edge's node and the items of ``nodes`` are nullable: a record
that cannot be read goes null with its own coded error (BAD_RECORD) at its own path,
and the list and its other items stand.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Generic, TypeVar, cast

import strawberry
from openrl_inspect.core.errors import BadRecord
from openrl_inspect.resolvers.paging import Cursor, Paged

T = TypeVar("T")
R = TypeVar("R")

# The paging arguments of every connection field (``resolvers.paging.page_size``).
First = Annotated[
    int | None,
    strawberry.argument(
        description="Items per page, 0 to OPENRL_INSPECT_LIMITS_MAX_PAGE_SIZE (100 unless "
        "set); default OPENRL_INSPECT_LIMITS_DEFAULT_PAGE_SIZE (20)."
    ),
]
After = Annotated[
    str | None,
    strawberry.argument(
        description="Start after this cursor (an opaque `pageInfo.endCursor` or edge "
        "`cursor` of the same list); default: from the start."
    ),
]


@strawberry.type(description="Where a page sits in its list, and the cursors to go on.")
class PageInfo:
    has_next_page: bool = strawberry.field(
        description="True when items follow this page: pass `endCursor` as `after`."
    )
    has_previous_page: bool = strawberry.field(
        description="True when this page was asked for with `after` (items precede it)."
    )
    start_cursor: str | None = strawberry.field(
        description="The cursor of the page's first item; null for an empty page."
    )
    end_cursor: str | None = strawberry.field(
        description="The cursor to pass as `after` for the next page; null when none follows."
    )


@strawberry.type(description="One item of a page with the cursor that resumes after it.")
class Edge(Generic[T]):
    _cursor: strawberry.Private[str | Cursor]  # encoded when selected (``Cursor``)
    _node: strawberry.Private[object]  # a T

    @strawberry.field(description="Pass as `after` to resume after this item.")
    def cursor(self) -> str:
        return str(self._cursor)

    @strawberry.field(description="The item.")
    def node(self) -> T:
        return cast(T, self._node)


@strawberry.type(
    name="Edge",
    description="One item of a page with the cursor that resumes after it; the item goes "
    "null with a BAD_RECORD error when its stored record cannot be read.",
)
class RecordEdge(Generic[T]):
    """An edge of a stored record: its node goes null with its own error when bad."""

    _cursor: strawberry.Private[str | Cursor]  # encoded when selected (``Cursor``)
    _node: strawberry.Private[object]  # a T, or the BadRecord it could not be read as

    @strawberry.field(description="Pass as `after` to resume after this item.")
    def cursor(self) -> str:
        return str(self._cursor)

    @strawberry.field(description="The item; null (with a BAD_RECORD error) when unreadable.")
    def node(self) -> T | None:
        if isinstance(self._node, BadRecord):
            raise self._node
        return cast(T, self._node)


@strawberry.type(description="A page of a list. `truncated` is true when items exist past it.")
class Connection(Generic[T]):
    edges: list[RecordEdge[T]] = strawberry.field(description="The page's items with cursors.")
    page_info: PageInfo = strawberry.field(description="Where the page sits; cursors to go on.")
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
