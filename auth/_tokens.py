"""Bearer tokens checked against a file of their SHA-256 digests.

The presented token is hashed and compared with every entry's digest by
``hmac.compare_digest``, without stopping at a match, so the time taken says nothing
about which entry (if any) came close. The file is re-read when it changes, so a token
added, removed or rotated takes effect within ``reload_interval_s`` without a restart.
"""

from __future__ import annotations

import hmac
import re
import time
from collections.abc import Callable

from openrl_inspect.auth._entries import Entry, parse_entries, token_digest
from openrl_inspect.auth._files import Watched
from openrl_inspect.core.errors import Unauthenticated
from openrl_inspect.core.principal import Principal
from starlette.datastructures import Headers

MISSING = "Authentication required: send the header 'Authorization: Bearer <token>'."
REJECTED = "The credential was not accepted."
MAX_TOKEN = 4096
# RFC 6750's b64token.
TOKEN_SYNTAX = re.compile(r"[A-Za-z0-9\-._~+/]+=*")


def bearer(headers: Headers, header: str = "authorization") -> str:
    """The token of ``Authorization: Bearer <token>``; never echoed in an error."""
    raw = headers.get(header)
    if raw is None or not raw.strip():
        raise Unauthenticated(MISSING, "missing")
    scheme, _, token = raw.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        raise Unauthenticated(REJECTED, "not_bearer")
    if len(token) > MAX_TOKEN or not TOKEN_SYNTAX.fullmatch(token):
        raise Unauthenticated(REJECTED, "malformed")
    return token


class TokenAuthenticator:
    def __init__(
        self,
        path: str,
        interval_s: float = 1.0,
        wall_clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.file: Watched[tuple[Entry, ...]] = Watched(
            path,
            "tokens file",
            lambda data: parse_entries(data, "tokens file", hashed=True),
            (),
            interval_s,
            monotonic,
        )
        self._now = wall_clock

    def start(self) -> None:
        """Read the file once now, so a missing one stops the server at start-up."""
        self.file.load()

    async def authenticate(self, headers: Headers) -> Principal:
        digest = token_digest(bearer(headers))
        found: Entry | None = None
        for entry in self.file.get():
            assert entry.digest is not None
            if hmac.compare_digest(entry.digest, digest) and found is None:
                found = entry
        if found is None:
            raise Unauthenticated(REJECTED, "unknown_token")
        if found.expires is not None and found.expires <= self._now():
            raise Unauthenticated(REJECTED, "expired")
        return found.principal

    async def aclose(self) -> None:
        return None
