"""Where each value of a plan's answer sits, and what a failure nulls.

A failure in a nullable position nulls that position and is recorded at once. One in a
non-null position nulls the nearest nullable position above it (``data`` at the top)
once its level is settled (``walk``). As graphql-core's ``CollectedErrors`` does, an
error raised under a position already nulled is dropped.
"""

from __future__ import annotations

from typing import Any

from graphql import FieldNode, GraphQLError, located_error
from graphql.pyutils import Path


class Pos:
    """Where a value sits in the answer (``container[key]``), whether null may stand there,
    and the position that goes null in its place when not (``up``)."""

    __slots__ = ("_path", "container", "key", "nullable", "typename", "up")

    def __init__(
        self,
        container: Any,
        key: str | int,
        nullable: bool,
        up: Pos | None,
        typename: str | None,
    ) -> None:
        self.container = container
        self.key = key
        self.nullable = nullable
        self.up = up
        self.typename = typename
        self._path: Path | None = None

    @property
    def path(self) -> Path | None:
        # Built only for an error or a resolver's info: most values never need one.
        if self.up is None:
            return None
        if self._path is None:
            self._path = Path(self.up.path, self.key, self.typename)
        return self._path


class Obj:
    """An object being answered: its source value, its answer, its position."""

    __slots__ = ("out", "pos", "source")

    def __init__(self, source: Any, out: dict[str, Any], pos: Pos) -> None:
        self.source = source
        self.out = out
        self.pos = pos


class _Failed:
    pass


FAILED: Any = _Failed()


class Errors:
    """The errors of one run, and the positions their failures nulled."""

    def __init__(self) -> None:
        self.errors: list[GraphQLError] = []
        self._nulled: set[Path | None] = set()

    def fail(
        self,
        raw: Exception,
        nodes: list[FieldNode],
        pos: Pos,
        deferred: list[tuple[GraphQLError, Pos]],
    ) -> Any:
        """Records ``raw`` at ``pos``, or defers it to the end of the level when null may
        not stand there."""
        path = pos.path
        assert path is not None
        error = located_error(raw, nodes, path.as_list())
        if pos.nullable:
            pos.container[pos.key] = None
            self.record(error, path)
        else:
            deferred.append((error, pos))
        return FAILED

    def null(self, error: GraphQLError, pos: Pos) -> None:
        """Nulls the nearest nullable position at or above ``pos`` (``data`` at the top)
        and records ``error`` there."""
        at: Pos | None = pos
        while at is not None and not at.nullable:
            at = at.up
        assert at is not None  # the top position, ``data``, is nullable
        at.container[at.key] = None
        self.record(error, at.path)

    def record(self, error: GraphQLError, nulled: Path | None) -> None:
        # As graphql-core's CollectedErrors: none under a position already nulled.
        if not self._under_nulled(nulled):
            self._nulled.add(nulled)
            self.errors.append(error)

    def dead(self, obj: Obj) -> bool:
        return self._under_nulled(obj.pos.path)

    def _under_nulled(self, path: Path | None) -> bool:
        nulled = self._nulled
        while path is not None:
            if path in nulled:
                return True
            path = path.prev
        return None in nulled
