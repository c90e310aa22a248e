"""One engine under every entry that is not the GraphQL endpoint itself: the REST routes,
the MCP tools and the terminal summary run *named GraphQL documents* through the same
Strawberry schema, with a per-request ``Context`` for the caller's principal, so the
limits, the scoping and the error codes are those of ``/graphql``: there is no second
data path.

The documents are ``.graphql`` files (``agents/documents/``, the dashboard's in
``static/ui/queries/``); ``registry`` names them and hashes them for persisted queries.
"""

from openrl_inspect.execution.registry import Document, Registry, registry
from openrl_inspect.execution.run import Answer, Engine, error

__all__ = ["Answer", "Document", "Engine", "Registry", "error", "registry"]
