"""Every exception the product raises, and the one table of what each code means on the wire.

Adapters translate their SDK's exceptions at the boundary (``raise X(...) from exc``)
so nothing above them ever sees a redis, kubernetes, httpx or google exception::

    InspectorError
    ├── BackendError                 a backend call did not give a usable answer
    │   ├── BackendUnavailable       refused, reset, DNS, closed, auth failure
    │   ├── BackendBusy              healthy, but every pooled connection stayed in use
    │   ├── BackendTimeout           the call's own timeout ran out
    │   ├── BackendProtocolError     the answer could not be understood
    │   ├── BackendNotConfigured     this inspector was started without that backend
    │   ├── SchemaVersionError       the data is newer than this reader understands
    │   ├── IndexesNotBuilt          data predates the model indexes: ``reindex`` first
    │   └── ApiVersionUnsupported    an API group served only at versions this reader
    │                                does not know (Kubernetes discovery)
    ├── NotFound                     a looked-up id does not exist
    ├── BadRecord                    one stored record cannot be read; its siblings stand
    │   └── DecodeError              one stored field cannot be decoded (before the record
    │                                is named: the reader re-raises it as BadRecord)
    ├── InvalidInput                 a caller's argument was refused before any call
    │   └── FilterSyntaxError        a log filter outside the subset this API writes
    ├── Forbidden                    the principal's role may not read this field
    │   └── RawQueryDisabled         the operators' raw PromQL field is off
    ├── ClientDisconnected           the client went away before its answer was ready
    ├── SettingsError                a setting, file or flag given at start-up is unusable
    └── RequestRefused               the request itself was refused before any backend call
        ├── BadRequest               a body that is not a GraphQL request
        ├── UnsupportedMediaType     a body in a format the endpoint does not take
        ├── InvalidDocument          a document with no single query operation to run
        ├── MethodNotAllowed         a method the path does not answer
        ├── BodyTooLarge             a body past the size limit
        ├── RequestTimeout           a body that arrived too slowly
        ├── QueryTooCostly           a query that could return too many nodes
        ├── Busy                     every slot for expensive queries stayed taken
        ├── DeadlineExceeded         the request ran past its deadline and was cancelled
        ├── PersistedQueryNotFound   a persisted query's hash is not registered
        ├── NotRegistered            only registered documents may run, and this is not one
        ├── Unauthenticated          no credential, or one not accepted
        └── AuthUnavailable          the keys to check credentials with are unreachable

Messages are safe to show: they name the backend, never a host, key, query or trace.

What each code means on the wire is ``core.codes``'s one table.
"""

from __future__ import annotations

from typing import Any

from openrl_inspect.core.codes import code_of, error


def body(*errors: InspectorError) -> dict[str, Any]:
    """The body of an answer that is only errors (no ``data``: nothing ran)."""
    return {"errors": [error(e.message, e.code, **e.extensions()) for e in errors]}


class InspectorError(Exception):
    """Base of every expected failure; ``code`` names its row in ``CODES``."""

    code = "INTERNAL"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def extensions(self) -> dict[str, Any]:
        """What the error adds to ``extensions`` beside its code."""
        retry = code_of(self.code).retry_after_s
        return {} if retry is None else {"retryAfterSeconds": retry}

    @property
    def status(self) -> int:
        return code_of(self.code).status


class BackendError(InspectorError):
    """A call to ``backend`` failed; the fields that depend on it go null."""

    code = "BACKEND_UNAVAILABLE"

    def __init__(self, backend: str, message: str) -> None:
        super().__init__(message)
        self.backend = backend

    def extensions(self) -> dict[str, Any]:
        return {"backend": self.backend, **super().extensions()}


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


class IndexesNotBuilt(BackendError):
    """The store holds data written before the model indexes (docs/redis-schema.md,
    "Model indexes") and ``openrl-inspect reindex`` has not run: a list read from them
    would be short, so it is refused instead."""

    code = "INDEXES_NOT_BUILT"


class ApiVersionUnsupported(BackendError):
    """The cluster serves ``resource`` of ``group`` only at versions (``seen``) none of
    which this inspector reads (``understood``): its objects exist but cannot be read,
    which is never the same as "there are none"."""

    code = "API_VERSION_UNSUPPORTED"

    def __init__(
        self,
        backend: str,
        group: str,
        resource: str,
        seen: tuple[str, ...],
        understood: tuple[str, ...],
    ) -> None:
        super().__init__(
            backend,
            f"{group} serves {resource} at {', '.join(seen)} only; this inspector reads "
            f"{', '.join(understood)}",
        )
        self.group = group
        self.resource = resource
        self.seen = seen
        self.understood = understood

    def extensions(self) -> dict[str, Any]:
        return {
            **super().extensions(),
            "group": self.group,
            "resource": self.resource,
            "versionsSeen": list(self.seen),
            "versionsUnderstood": list(self.understood),
        }


class NotFound(InspectorError):
    code = "NOT_FOUND"

    def __init__(self, kind: str, ident: str) -> None:
        super().__init__(f"{kind} {ident!r} not found")
        self.kind = kind
        self.ident = ident


class InvalidInput(InspectorError):
    """An argument the caller gave cannot be used; ``parameter`` names it when known."""

    code = "BAD_INPUT"

    def __init__(self, message: str, parameter: str | None = None) -> None:
        super().__init__(message)
        self.parameter = parameter

    def extensions(self) -> dict[str, Any]:
        return {} if self.parameter is None else {"parameter": self.parameter}


class FilterSyntaxError(InvalidInput):
    """A log filter's text is not in the subset of the query language this API writes."""


class Forbidden(InspectorError):
    """The principal is known but its role may not see this (the field goes null)."""

    code = "FORBIDDEN"


class RawQueryDisabled(Forbidden):
    """The raw query field is off (``OPENRL_INSPECT_PROMETHEUS_RAW_QUERY`` is not true)."""

    code = "RAW_QUERY_DISABLED"

    def __init__(self) -> None:
        super().__init__(
            "raw Prometheus queries are disabled; an operator can enable them with "
            "OPENRL_INSPECT_PROMETHEUS_RAW_QUERY=true"
        )


class ClientDisconnected(InspectorError):
    """The client disconnected before its answer was ready; nothing is to be sent."""

    code = "CLIENT_DISCONNECTED"

    def __init__(self) -> None:
        super().__init__("The client went away before its answer was ready.")


class SettingsError(InspectorError):
    """A setting, flag or file given at start-up cannot be used; the message names it
    (the variable, flag or file's role) and what it accepts, never a secret."""

    code = "BAD_SETTING"


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


class DecodeError(BadRecord, ValueError):
    """A stored field could not be decoded; the message names the field, not the key.
    Raised below the record's reader, which names the record (``BadRecord``); still a
    ``ValueError`` for the readers that treat any unparsable value alike."""

    def __init__(self, problem: str) -> None:
        InspectorError.__init__(self, problem)
        self.kind = "field"
        self.ident = ""


class RequestRefused(InspectorError):
    """The whole request is refused before it reaches a backend."""

    code = "BAD_REQUEST"


class BadRequest(RequestRefused):
    """A GraphQL request whose body or parameters cannot be used (no query, a query that is
    not a string, JSON that does not parse...)."""

    code = "BAD_REQUEST"


class MethodNotAllowed(RequestRefused):
    """A path that exists, asked with a method it does not answer (``Allow`` says which)."""

    code = "METHOD_NOT_ALLOWED"


class InvalidDocument(RequestRefused):
    """A document that parses but cannot run here: no single operation to run, or not a
    query (this API never writes)."""

    code = "GRAPHQL_VALIDATION_FAILED"


class UnsupportedMediaType(RequestRefused):
    """A POST body in a format the endpoint does not take (it takes JSON)."""

    code = "UNSUPPORTED_MEDIA_TYPE"


class BodyTooLarge(RequestRefused):
    code = "BODY_TOO_LARGE"


class RequestTimeout(RequestRefused):
    code = "REQUEST_TIMEOUT"


class QueryTooCostly(RequestRefused):
    code = "QUERY_TOO_COSTLY"


class Busy(RequestRefused):
    """Too many expensive queries at once; ``retry_after_s`` is a hint for the client."""

    code = "BUSY"

    def __init__(self, message: str, retry_after_s: int) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s

    def extensions(self) -> dict[str, Any]:
        return {"retryAfterSeconds": self.retry_after_s}


class DeadlineExceeded(RequestRefused):
    code = "DEADLINE_EXCEEDED"


class PersistedQueryNotFound(RequestRefused):
    """Apollo's answer to a hash the server does not hold (its clients send the text next)."""

    code = "PERSISTED_QUERY_NOT_FOUND"

    def __init__(self) -> None:
        super().__init__("PersistedQueryNotFound")


class NotRegistered(RequestRefused):
    """Only the registered documents may run here (Apollo's safelisting code)."""

    code = "PERSISTED_QUERY_NOT_IN_LIST"


class Unauthenticated(RequestRefused):
    """No credential, or one that was not accepted.

    ``reason`` is for the request log only (``missing``, ``expired``, ``bad_signature``
    ...); the message a client sees never says which check failed, nor echoes the
    credential.
    """

    code = "UNAUTHENTICATED"

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


class AuthUnavailable(RequestRefused):
    """Credentials cannot be checked right now (the signing keys could not be fetched):
    the server's trouble, not the caller's, so not a 401."""

    code = "AUTH_UNAVAILABLE"
