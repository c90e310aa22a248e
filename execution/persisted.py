"""Apollo-style persisted queries on ``/graphql``: a request may name a registered
document by ``extensions.persistedQuery.sha256Hash``, with or without its text.

- the hash alone: the registered document runs; an unknown hash is answered as Apollo
  answers it (``PersistedQueryNotFound``, code ``PERSISTED_QUERY_NOT_FOUND``), so an
  Apollo client falls back to sending the text;
- the hash and the text: they must agree (``BAD_REQUEST`` otherwise);
- with ``registered_only`` on, a text whose hash is not registered is refused
  (``PERSISTED_QUERY_NOT_IN_LIST``, as Apollo's safelisting names it).
"""

from __future__ import annotations

from typing import Any

from openrl_inspect.core.errors import BadRequest, NotRegistered, PersistedQueryNotFound
from openrl_inspect.execution.registry import Registry, sha256


def resolve(
    query: str | None, extensions: dict[str, Any] | None, documents: Registry, registered_only: bool
) -> str | None:
    """The text to run for a request's ``query`` and ``extensions``; refusals raise."""
    persisted = (extensions or {}).get("persistedQuery")
    if persisted is not None:
        digest = persisted.get("sha256Hash") if isinstance(persisted, dict) else None
        if not isinstance(digest, str) or persisted.get("version", 1) != 1:
            raise BadRequest("extensions.persistedQuery needs version 1 and a sha256Hash string.")
        if query is not None:
            if sha256(query) != digest.lower():
                raise BadRequest("provided sha does not match query")
        else:
            found = documents.by_hash(digest)
            if found is None:
                raise PersistedQueryNotFound()
            return found.text
    if registered_only and query is not None and not documents.holds(query):
        raise NotRegistered(
            "This server runs only its registered documents (the dashboard's and the REST "
            "routes'); send one of them, or its extensions.persistedQuery.sha256Hash."
        )
    return query
