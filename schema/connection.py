"""Relay-style connections, as GitHub's API has them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

import strawberry
from openrl_inspect.resolvers.paging import Paged

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


@strawberry.type(description="A page of a list. `truncated` is true when items exist past it.")
class Connection(Generic[T]):
    edges: list[Edge[T]]
    page_info: PageInfo
    total_count: int = strawberry.field(description="Items in the whole list, not the page.")
    truncated: bool = strawberry.field(
        description="True when this page does not hold every item after the cursor."
    )

    @strawberry.field(description="The nodes of `edges`, without cursors.")
    def nodes(self) -> list[T]:
        return [edge.node for edge in self.edges]

    @classmethod
    def of(cls, page: Paged[R], make: Callable[[R], T]) -> Connection[T]:
        edges = [Edge(cursor=cursor, node=make(rec)) for cursor, rec in page.items]
        return cls(
            edges=edges,
            page_info=PageInfo(
                has_next_page=page.has_next,
                has_previous_page=page.has_previous,
                start_cursor=edges[0].cursor if edges else None,
                end_cursor=edges[-1].cursor if edges else None,
            ),
            total_count=page.total,
            truncated=page.has_next,
        )
