"""The exceptions every adapter raises, whatever its backend.

Adapters translate their SDK's exceptions at the boundary (``raise X(...) from exc``)
so nothing above them ever sees a redis, kubernetes, httpx or google exception::

    InspectorError
    ├── BackendError                 a backend call did not give a usable answer
    │   ├── BackendUnavailable       refused, reset, DNS, closed, auth failure
    │   ├── BackendBusy              healthy, but every pooled connection stayed in use
    │   ├── BackendTimeout           the call's own timeout ran out
    │   ├── BackendProtocolError     the answer could not be understood
    │   ├── BackendNotConfigured     this inspector was started without that backend
    │   └── SchemaVersionError       the data is newer than this reader understands
    ├── NotFound                     a looked-up id does not exist
    ├── BadRecord                    one stored record cannot be read; its siblings stand
    ├── InvalidInput                 a caller's argument was refused before any call
    ├── Forbidden                    the principal's role may not read this field
    └── RequestRefused               the request itself was refused before any backend call
        ├── BadRequest               a body that is not a GraphQL request (HTTP 400)
        ├── BodyTooLarge             a body past the size limit (HTTP 413)
        ├── RequestTimeout           a body that arrived too slowly (HTTP 408)
        ├── QueryTooCostly           a query that could return too many nodes
        ├── Busy                     every slot for expensive queries stayed taken (HTTP 429)
        ├── DeadlineExceeded         the request ran past its deadline and was cancelled
        ├── Unauthenticated          no credential, or one not accepted (HTTP 401)
        └── AuthUnavailable          the keys to check credentials with are unreachable (503)

Messages are safe to show: they name the backend, never a host, key, query or trace.
The GraphQL layer maps each class to an ``extensions.code``.
"""

from __future__ import annotations


class InspectorError(Exception):
    """Base of every expected failure; ``code`` is the GraphQL ``extensions.code``."""

    code = "INSPECTOR_ERROR"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class BackendError(InspectorError):
    """A call to ``backend`` failed; the fields that depend on it go null."""

    code = "BACKEND_ERROR"

    def __init__(self, backend: str, message: str) -> None:
        super().__init__(message)
        self.backend = backend


class BackendUnavailable(BackendError):
    code = "BACKEND_UNAVAILABLE"


class BackendBusy(BackendError):
    """The backend answers, but this inspector's connections to it were all in use for
    longer than the pool's wait: a load problem here, not an outage there."""

    code = "BACKEND_BUSY"


class BackendTimeout(BackendError):
    code = "BACKEND_TIMEOUT"


class BackendProtocolError(BackendError):
    code = "BACKEND_PROTOCOL_ERROR"


class BackendNotConfigured(BackendError):
    code = "BACKEND_NOT_CONFIGURED"


class SchemaVersionError(BackendError):
    code = "SCHEMA_VERSION_UNSUPPORTED"


class NotFound(InspectorError):
    code = "NOT_FOUND"

    def __init__(self, kind: str, ident: str) -> None:
        super().__init__(f"{kind} {ident!r} not found")
        self.kind = kind
        self.ident = ident


class InvalidInput(InspectorError):
    code = "BAD_INPUT"


class Forbidden(InspectorError):
    """The principal is known but its role may not see this (the field goes null)."""

    code = "FORBIDDEN"


class RequestRefused(InspectorError):
    """The whole request is refused before it reaches a backend.

    ``http_status`` is what a plain HTTP client sees; a refusal raised during GraphQL
    execution is answered as a GraphQL error with ``code`` (and that status where it
    differs from 200).
    """

    code = "REQUEST_REFUSED"
    http_status = 400


class BadRequest(RequestRefused):
    code = "BAD_REQUEST"


class BodyTooLarge(RequestRefused):
    code = "BODY_TOO_LARGE"
    http_status = 413


class RequestTimeout(RequestRefused):
    code = "REQUEST_TIMEOUT"
    http_status = 408


class QueryTooCostly(RequestRefused):
    code = "QUERY_TOO_COSTLY"
    http_status = 200


class Busy(RequestRefused):
    """Too many expensive queries at once; ``retry_after_s`` is a hint for the client."""

    code = "BUSY"
    http_status = 429

    def __init__(self, message: str, retry_after_s: int) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class DeadlineExceeded(RequestRefused):
    code = "DEADLINE_EXCEEDED"
    http_status = 200


class BadRecord(InspectorError):
    """One stored record cannot be read (wrong type, bad field, unknown state).

    Only that record's item goes null; the list it is in and its siblings stand. The
    message names the kind, the id and what is wrong, never a key or a host.
    """

    code = "BAD_RECORD"

    def __init__(self, kind: str, ident: str, problem: str) -> None:
        super().__init__(f"{kind} {ident[:80]!r} cannot be read: {problem}")
        self.kind = kind
        self.ident = ident


class Unauthenticated(RequestRefused):
    """No credential, or one that was not accepted.

    ``reason`` is for the request log only (``missing``, ``expired``, ``bad_signature``
    ...); the message a client sees never says which check failed, nor echoes the
    credential.
    """

    code = "UNAUTHENTICATED"
    http_status = 401

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


class AuthUnavailable(RequestRefused):
    """Credentials cannot be checked right now (the signing keys could not be fetched):
    the server's trouble, not the caller's, so not a 401."""

    code = "AUTH_UNAVAILABLE"
    http_status = 503
