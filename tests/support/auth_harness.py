"""Credentials for the authentication tests: signing keys and their JWKS, tokens files,
and the app behind a given authenticator.

Keys are generated with ``cryptography``; tokens are signed with PyJWT the way IAP signs
its assertions (ES256, a ``kid`` header, ``aud``/``iss``/``iat``/``exp``/``email``).
"""

from __future__ import annotations

import json
import logging
import secrets
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import fakeredis
import httpx
import jwt
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm
from openrl_inspect.adapters.prometheus import RawQuerySettings
from openrl_inspect.adapters.prometheus.memory import InMemoryMetricsSource
from openrl_inspect.adapters.redis import RedisStateStore
from openrl_inspect.auth import Authenticator, token_digest
from openrl_inspect.core.settings import Settings
from openrl_inspect.resolvers.context import Backends
from openrl_inspect.telemetry.jsonlog import JsonLines
from openrl_inspect.web.app import create_app
from openrl_inspect.web.health import HealthSettings
from openrl_inspect.web.identity import Identity

IAP_ISSUER = "https://cloud.google.com/iap"
IAP_AUDIENCE = "/projects/123456789012/global/backendServices/4567890123456789"


@dataclass(frozen=True)
class SigningKey:
    kid: str
    alg: str
    private: Any

    @classmethod
    def es256(cls, kid: str = "iap-es256-1") -> SigningKey:
        return cls(kid, "ES256", ec.generate_private_key(ec.SECP256R1()))

    @classmethod
    def rs256(cls, kid: str = "oidc-rs256-1") -> SigningKey:
        return cls(kid, "RS256", rsa.generate_private_key(public_exponent=65537, key_size=2048))

    def jwk(self) -> dict[str, Any]:
        tool = ECAlgorithm if self.alg.startswith("ES") else RSAAlgorithm
        key: dict[str, Any] = tool.to_jwk(self.private.public_key(), as_dict=True)
        # As IAP's public_key-jwk lists them: kid, alg and use beside the key material.
        return {**key, "kid": self.kid, "alg": self.alg, "use": "sig"}

    def sign(self, claims: dict[str, Any], kid: str | None = "", **header: Any) -> str:
        headers = {"kid": self.kid if kid == "" else kid, **header}
        if headers["kid"] is None:
            del headers["kid"]
        return jwt.encode(claims, self.private, algorithm=self.alg, headers=headers)


def jwks(*keys: SigningKey) -> bytes:
    return json.dumps({"keys": [k.jwk() for k in keys]}).encode()


def iap_claims(email: str = "alice@example.com", **over: Any) -> dict[str, Any]:
    now = int(time.time())
    claims: dict[str, Any] = {
        "aud": IAP_AUDIENCE,
        "iss": IAP_ISSUER,
        "iat": now - 5,
        "exp": now + 600,
        "sub": "accounts.google.com:112233445566778899000",
        "email": email,
        "hd": "example.com",
        "google": {"access_levels": []},
    }
    claims.update(over)
    return {k: v for k, v in claims.items() if v is not None}


def tamper(token: str) -> str:
    """The same token with one signature character changed."""
    head, payload, sig = token.split(".")
    flipped = "A" if sig[10] != "A" else "B"
    return ".".join([head, payload, sig[:10] + flipped + sig[11:]])


def token_line(token: str, name: str, role: str = "viewer", **extra: Any) -> str:
    entry = {"sha256": token_digest(token).hex(), "name": name, "role": role, **extra}
    return json.dumps(entry)


def new_token() -> str:
    return secrets.token_urlsafe(32)


def write_lines(path: Path, *lines: str) -> None:
    """Write a new file renamed over the old, as hash-token and Kubernetes do."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
    tmp.replace(path)


@asynccontextmanager
async def auth_client(
    authenticator: Authenticator | None,
    graphiql_on: bool = True,
    limits: Settings | None = None,
    identity: Identity | None = None,
    **others: Any,
) -> AsyncIterator[httpx.AsyncClient]:
    """The app behind ``authenticator``, over an empty fakeredis and a raw-query-enabled
    in-memory Prometheus (so ``prometheusQuery`` answers an operator)."""
    store = RedisStateStore.in_memory(fakeredis.FakeServer())
    source = InMemoryMetricsSource()

    @asynccontextmanager
    async def backends() -> AsyncIterator[Backends]:
        raw = RawQuerySettings(raw_query=True)
        yield Backends(state=store, prometheus=source, raw_query=raw, **others)

    health = HealthSettings(interval_s=0)
    app = create_app(backends, limits, None, health, authenticator, graphiql_on, identity)
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://inspector") as client,
    ):
        yield client


def log_text(records: list[logging.LogRecord]) -> str:
    """The records as the server writes them (JSON lines, every field)."""
    formatter = JsonLines()
    return "\n".join(formatter.format(r) for r in records)


@contextmanager
def serve_bytes(body: bytes, status: int = 200) -> Iterator[tuple[str, list[str]]]:
    """A loopback HTTP server answering every GET with ``body``; yields (url, paths seen)."""
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.path)
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/iap/verify/public_key-jwk", seen
    finally:
        server.shutdown()
        server.server_close()
