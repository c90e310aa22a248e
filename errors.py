"""The exceptions every adapter raises, whatever its backend.

Adapters translate their SDK's exceptions at the boundary (``raise X(...) from exc``)
so nothing above them ever sees a redis, kubernetes, httpx or google exception::

    InspectorError
    ├── BackendError                 a backend call did not give a usable answer
    │   ├── BackendUnavailable       refused, reset, DNS, closed, auth failure
    │   ├── BackendTimeout           the call's own timeout ran out
    │   ├── BackendProtocolError     the answer could not be understood
    │   ├── BackendNotConfigured     this inspector was started without that backend
    │   └── SchemaVersionError       the data is newer than this reader understands
    ├── NotFound                     a looked-up id does not exist
    ├── BadRecord                    one stored record cannot be read; its siblings stand
    └── InvalidInput                 a caller's argument was refused before any call

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
