"""Running a GraphQL document, the one way every entry does it (``run.Runner``): the
persisted lookup, one parse, the cost check, shared executions, the deadline, and the
schema's validation and execution.

The registered documents are ``.graphql`` files (the REST routes' and MCP tools' in
``agents/documents/``, the dashboard's in ``static/ui/queries/``); ``registry`` names
them and hashes them for persisted queries.
"""

from openrl_inspect.execution.registry import Document, Registry, registry
from openrl_inspect.execution.run import Answer, Request, Runner
from openrl_inspect.execution.schema import InspectorSchema, build_schema

__all__ = [
    "Answer",
    "Document",
    "InspectorSchema",
    "Registry",
    "Request",
    "Runner",
    "build_schema",
    "registry",
]
