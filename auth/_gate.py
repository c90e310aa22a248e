"""The ASGI middleware that turns each request into a principal or a refusal.

It runs inside ``RequestGuard`` (so a refusal gets the request's id and log line, with
``UNAUTHENTICATED`` among its codes and the reason in ``auth_failure``) and puts the
principal where ``graphql_app`` builds the context from (``principal.SCOPE_KEY``).

Paths are of three kinds: open (liveness, static assets: no credential looked at),
optional (readiness: answered to anyone, with details for a principal), and the rest,
which need a principal. A refusal is ``401`` JSON with ``WWW-Authenticate: Bearer``;
an authenticator fault is logged and answered ``503 AUTH_UNAVAILABLE``, never a 500.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Iterable
from typing import Protocol

from openrl_inspect.core.errors import AuthUnavailable, Forbidden, InspectorError, Unauthenticated
from openrl_inspect.core.principal import ANONYMOUS_OPERATOR, SCOPE_KEY, Principal
from openrl_inspect.core.responses import refused
from openrl_inspect.telemetry.records import RECORD, RequestRecord
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

log = logging.getLogger("openrl_inspect.auth")

REALM = 'Bearer realm="openrl-inspect"'


class Authenticator(Protocol):
    """Turns a request's headers into a principal, or raises ``Unauthenticated``."""

    async def authenticate(self, headers: Headers) -> Principal: ...

    async def aclose(self) -> None: ...


class Anonymous:
    """Authentication off: everyone is the anonymous operator (loopback, the demo).

    With ``loopback_only`` (the server listens on loopback) a request must also be
    addressed to a loopback name: a web page the user visits can rebind its own host
    name to 127.0.0.1 and read an unauthenticated loopback API (DNS rebinding); the
    browser still sends the page's host name, which this refuses.
    """

    def __init__(self, loopback_only: bool = False) -> None:
        self.loopback_only = loopback_only

    async def authenticate(self, headers: Headers) -> Principal:
        if self.loopback_only and not loopback_host(headers.get("host", "")):
            raise Forbidden(
                "This inspector runs without authentication on a loopback address and "
                "answers requests addressed to 127.0.0.1, localhost or [::1] only; "
                "open it by one of those names."
            )
        return ANONYMOUS_OPERATOR

    async def aclose(self) -> None:
        return None


def loopback_host(host: str) -> bool:
    """Whether a Host header (``name[:port]``, ``[v6]:port``) names this machine."""
    host = host.strip().lower()
    if host.startswith("["):
        name = host[1 : host.find("]")] if "]" in host else ""
    else:
        name = host.rsplit(":", 1)[0] if host.count(":") == 1 else host
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


class AuthGate:
    def __init__(
        self,
        app: ASGIApp,
        authenticator: Authenticator,
        open_paths: Iterable[str] = (),
        open_prefixes: Iterable[str] = (),
        optional_paths: Iterable[str] = (),
    ) -> None:
        self.app = app
        self.authenticator = authenticator
        self.open_paths = frozenset(open_paths)
        self.open_prefixes = tuple(open_prefixes)
        self.optional_paths = frozenset(optional_paths)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        if path in self.open_paths or path.startswith(self.open_prefixes):
            await self.app(scope, receive, send)
            return
        record = scope.get(RECORD)
        try:
            principal = await self.authenticator.authenticate(Headers(scope=scope))
        except Unauthenticated as exc:
            if exc.reason == "missing" and path in self.optional_paths:
                await self.app(scope, receive, send)
                return
            await self._refuse(scope, receive, send, exc, exc.reason)
            return
        except Forbidden as exc:
            await self._refuse(scope, receive, send, exc, "forbidden")
            return
        except AuthUnavailable as exc:
            await self._refuse(scope, receive, send, exc, "unavailable")
            return
        except Exception:
            log.exception("authentication failed unexpectedly")
            fault = AuthUnavailable("Credentials cannot be checked right now.")
            await self._refuse(scope, receive, send, fault, "internal")
            return
        scope[SCOPE_KEY] = principal
        if isinstance(record, RequestRecord):
            record.principal = principal.name
        await self.app(scope, receive, send)

    async def _refuse(
        self, scope: Scope, receive: Receive, send: Send, exc: InspectorError, reason: str
    ) -> None:
        record = scope.get(RECORD)
        if isinstance(record, RequestRecord):
            record.codes.append(exc.code)
            record.auth_failure = reason
        if scope["type"] == "websocket":
            # Closing before accepting answers the handshake with 403.
            await send({"type": "websocket.close", "code": 1008})
            return
        headers = {"cache-control": "no-store"}
        if isinstance(exc, Unauthenticated):
            invalid = "" if reason == "missing" else ', error="invalid_token"'
            headers["www-authenticate"] = REALM + invalid
        if isinstance(exc, AuthUnavailable):
            headers["retry-after"] = "5"
        await refused(exc, headers)(scope, receive, send)
