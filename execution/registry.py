"""The named documents, and the registry of every document this server ships.

A document's name is its file's stem; its hash is the SHA-256 of its text exactly as
stored (the dashboard sends the file's text, so its hash matches). The registry holds
the routes' and tools' documents and the dashboard's: what an Apollo-style persisted
query may name by ``sha256Hash``, and all a server set to registered documents only runs.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

# The package root (this file is execution/registry.py).
PACKAGE = Path(__file__).resolve().parents[1]
ROUTES = PACKAGE / "agents" / "documents"
DASHBOARD = PACKAGE / "static" / "ui" / "queries"


@dataclass(frozen=True)
class Document:
    name: str
    text: str

    @property
    def sha256(self) -> str:
        return sha256(self.text)


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class Registry:
    """Documents by name and by hash."""

    def __init__(self, documents: list[Document]) -> None:
        self._by_name = {d.name: d for d in documents}
        self._by_hash = {d.sha256: d for d in documents}
        if len(self._by_name) != len(documents):
            raise ValueError("two documents share a name")

    def __getitem__(self, name: str) -> Document:
        return self._by_name[name]

    def __iter__(self) -> Iterator[Document]:
        return iter(self._by_name.values())

    def by_hash(self, digest: str) -> Document | None:
        return self._by_hash.get(digest.lower())

    def holds(self, text: str) -> bool:
        return sha256(text) in self._by_hash


def _load(folder: Path, prefix: str) -> list[Document]:
    return [
        Document(prefix + path.stem, path.read_text(encoding="utf-8"))
        for path in sorted(folder.glob("*.graphql"))
    ]


@cache
def registry() -> Registry:
    """The routes' and tools' documents by their names, the dashboard's as ``ui/<page>``."""
    return Registry(_load(ROUTES, "") + _load(DASHBOARD, "ui/"))
