"""What one request's log line and metrics say about it, filled in as it passes through
the middleware, the authentication gate and the GraphQL view (ASGI scope ``RECORD``)."""

from __future__ import annotations

from dataclasses import dataclass, field

#: Where the request guard leaves the request's record (ASGI scope key).
RECORD = "openrl_inspect.request"
#: The code of a request whose client left before its answer (``disconnect``); its log
#: line and metrics say 499 (nginx's "client closed request"), not a server fault.
CLIENT_DISCONNECTED = "CLIENT_DISCONNECTED"


@dataclass
class RequestRecord:
    """What one request's log line says; the GraphQL view fills operation and codes."""

    id: str
    operation: str | None = None
    codes: list[str] = field(default_factory=list)
    # Set by the authentication middleware: who asked, or why nobody was admitted
    # (``missing``, ``expired``, ``bad_signature`` ...; never the credential).
    principal: str | None = None
    auth_failure: str | None = None


def unanswered(record: object) -> int:
    """The status of a request that sent no response: 499 when its client left, else 500."""
    gone = isinstance(record, RequestRecord) and CLIENT_DISCONNECTED in record.codes
    return 499 if gone else 500
