"""Documents compiled once: the parse, the validation and the cost of a document are
kept by its text (and, for the cost, its operation and variables), so a dashboard's
poll of a document it sent before pays none of them again.

Validation of a page's document took longer than executing it (the overview's: tens of
milliseconds, docs/benchmarks.md "Overview"); it depends on the text alone. Only a
document that validated cleanly is remembered as such: one with errors is validated
again on every request (its errors are fresh objects each time, and it is rare).
Both caches are bounded, least recently used out first, so unique texts cannot grow
them; the documents the server ships are parsed when the runner starts.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from typing import Generic, TypeVar

from graphql import DocumentNode, parse

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

# Distinct document texts kept (the shipped ones are a few dozen).
MAX_DOCUMENTS = 512
# Distinct (document, operation, variables) costs kept.
MAX_COSTS = 2048


class Lru(Generic[K, V]):
    """A bounded mapping, least recently used out first."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K) -> V | None:
        found = self._items.get(key)
        if found is not None:
            self._items.move_to_end(key)
        return found

    def put(self, key: K, value: V) -> None:
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > self.size:
            self._items.popitem(last=False)

    def __len__(self) -> int:
        return len(self._items)


@dataclass
class Compiled:
    """A parsed document; ``valid`` once it has validated without errors."""

    text: str
    document: DocumentNode
    valid: bool = False


class Documents:
    """Compiled documents by text; counts what was compiled and what was found."""

    def __init__(self, max_tokens: int, size: int = MAX_DOCUMENTS) -> None:
        self.max_tokens = max_tokens
        self.size = size
        self._kept: Lru[str, Compiled] = Lru(size)
        self.compiled = 0
        self.found = 0

    def get(self, text: str) -> Compiled:
        """``text`` compiled (a parse error raises ``GraphQLError``, and is not kept)."""
        kept = self._kept.get(text)
        if kept is not None:
            self.found += 1
            return kept
        compiled = Compiled(text, parse(text, max_tokens=self.max_tokens))
        self._kept.put(text, compiled)
        self.compiled += 1
        return compiled

    def warm(self, texts: Iterable[str]) -> None:
        for text in texts:
            self.get(text)
