"""The keys a proxy's assertions are verified with: a JWKS document, from a file or a URL.

Only public keys whose algorithm is among the accepted ones are kept (a symmetric
``oct`` key or an RS key under an ES256-only setting is dropped), so a token cannot
choose a weaker check by naming another algorithm. A URL's document is cached for
``refresh_s``; a key id not in the cache triggers one early fetch at most every
``min_refetch_s`` (the provider rotated its keys), so a stream of made-up key ids costs
at most one request per interval. A failed fetch keeps the keys already held; with none
held, requests are answered ``AUTH_UNAVAILABLE`` (503) rather than 401.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import httpx
import jwt
import orjson
from cryptography.hazmat.primitives.asymmetric import rsa
from openrl_inspect.auth._files import MAX_FILE_BYTES, Watched
from openrl_inspect.core.errors import AuthUnavailable

log = logging.getLogger("openrl_inspect.auth")

Keys = Mapping[str | None, jwt.PyJWK]
MAX_KEYS = 100
# Seconds between attempts while a due refresh keeps failing.
RETRY_S = 5.0


class KeySource(Protocol):
    async def key(self, kid: str | None) -> jwt.PyJWK | None: ...

    async def aclose(self) -> None: ...


def parse_jwks(data: bytes, algorithms: tuple[str, ...], what: str) -> Keys:
    """The usable keys of a JWKS document, by ``kid``; a bad key spoils only itself."""
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError:
        log.error("not a JWKS document (not JSON)", extra={"file": what})
        return {}
    raw = doc.get("keys") if isinstance(doc, dict) else None
    if not isinstance(raw, list):
        log.error("not a JWKS document (no keys list)", extra={"file": what})
        return {}
    keys: dict[str | None, jwt.PyJWK] = {}
    for index, item in enumerate(raw[:MAX_KEYS]):
        problem = _problem(item, algorithms)
        if problem is None:
            try:
                key = jwt.PyJWK(item)
            except jwt.PyJWTError:
                problem = "not a usable key"
            else:
                problem = _weak(key)
                if problem is None and key.algorithm_name in algorithms:
                    keys[key.key_id] = key
                    continue
                problem = problem or "algorithm not accepted"
        log.warning("JWKS key skipped", extra={"file": what, "index": index, "problem": problem})
    if len(raw) > MAX_KEYS:
        log.warning("JWKS keys past the limit ignored", extra={"file": what, "limit": MAX_KEYS})
    return keys


def _problem(item: Any, algorithms: tuple[str, ...]) -> str | None:
    if not isinstance(item, dict):
        return "not an object"
    if item.get("kty") not in ("EC", "RSA", "OKP"):
        return "not a public-key type"
    if "d" in item:
        return "a private key"
    alg = item.get("alg")
    if alg is not None and alg not in algorithms:
        return "algorithm not accepted"
    return None


# RSA keys below these are refused: a 1024-bit modulus is within reach of a well-funded
# factoring effort, and a tiny exponent (3) invites signature forgeries on lax verifiers.
MIN_RSA_BITS = 2048
MIN_RSA_EXPONENT = 65537


def _weak(key: jwt.PyJWK) -> str | None:
    public = key.key
    if isinstance(public, rsa.RSAPublicKey):
        if public.key_size < MIN_RSA_BITS:
            return f"RSA key under {MIN_RSA_BITS} bits"
        if public.public_numbers().e < MIN_RSA_EXPONENT:
            return f"RSA public exponent under {MIN_RSA_EXPONENT}"
    return None


def pick(keys: Keys, kid: str | None) -> jwt.PyJWK | None:
    """The key named ``kid``; a token without one may use the only key there is."""
    if kid is None and len(keys) == 1:
        return next(iter(keys.values()))
    return keys.get(kid)


class FileKeys:
    """A JWKS file, re-read when it changes."""

    def __init__(
        self,
        path: str,
        algorithms: tuple[str, ...],
        interval_s: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.file: Watched[Keys] = Watched(
            path,
            "JWKS file",
            lambda d: parse_jwks(d, algorithms, "JWKS file"),
            {},
            interval_s,
            clock,
        )

    def start(self) -> None:
        if not self.file.load():
            log.warning("the JWKS file holds no usable key", extra={"file": "JWKS file"})

    async def key(self, kid: str | None) -> jwt.PyJWK | None:
        return pick(self.file.get(), kid)

    async def aclose(self) -> None:
        return None


class UrlKeys:
    """A JWKS document at a URL, fetched with httpx and cached."""

    def __init__(
        self,
        url: str,
        algorithms: tuple[str, ...],
        refresh_s: float = 3600.0,
        timeout_s: float = 5.0,
        min_refetch_s: float = 60.0,
        client: httpx.AsyncClient | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.url = url
        self._algorithms = algorithms
        self._refresh_s = refresh_s
        self._timeout_s = timeout_s
        self._min_refetch_s = min_refetch_s
        self._client = client
        self._own_client = client is None
        self._clock = clock
        self._keys: Keys | None = None
        self._fetched_at: float | None = None
        self._tried_at: float | None = None
        self._lock = asyncio.Lock()
        self.fetches = 0

    def start(self) -> None:
        return None

    async def key(self, kid: str | None) -> jwt.PyJWK | None:
        now = self._clock()
        due = self._fetched_at is None or now - self._fetched_at >= self._refresh_s
        if due and (self._tried_at is None or now - self._tried_at >= RETRY_S):
            await self._refresh(stale_before=now)
        if self._keys is None:
            raise AuthUnavailable("The keys to verify the credential with are unavailable.")
        found = pick(self._keys, kid)
        if found is None and self._may_refetch(now):
            await self._refresh(stale_before=now)
            found = pick(self._keys, kid)
        return found

    def _may_refetch(self, now: float) -> bool:
        return self._tried_at is None or now - self._tried_at >= self._min_refetch_s

    async def _refresh(self, stale_before: float) -> None:
        async with self._lock:
            # Another request fetched while this one waited for the lock.
            if self._tried_at is not None and self._tried_at >= stale_before:
                return
            self._tried_at = self._clock()
            self.fetches += 1
            keys = await self._fetch()
            if keys:
                self._keys = keys
                self._fetched_at = self._tried_at
            elif self._keys is not None:
                log.warning("JWKS refresh failed; keeping the keys already held")

    async def _fetch(self) -> Keys:
        if self._client is None:
            self._client = httpx.AsyncClient(follow_redirects=False)
        try:
            response = await self._client.get(self.url, timeout=self._timeout_s)
        except httpx.HTTPError as exc:
            log.warning("JWKS fetch failed", extra={"error": type(exc).__name__})
            return {}
        if response.status_code != 200:
            log.warning("JWKS fetch failed", extra={"status": response.status_code})
            return {}
        if len(response.content) > MAX_FILE_BYTES:
            log.warning("JWKS document too large", extra={"bytes": len(response.content)})
            return {}
        return parse_jwks(response.content, self._algorithms, "JWKS URL")

    async def aclose(self) -> None:
        if self._own_client and self._client is not None:
            await self._client.aclose()
            self._client = None
