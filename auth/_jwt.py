"""Identity from an authenticating proxy: a signed JWT in a request header.

Google's Identity-Aware Proxy puts an ES256 assertion in ``x-goog-iap-jwt-assertion``
(keys at https://www.gstatic.com/iap/verify/public_key-jwk, ``iss``
``https://cloud.google.com/iap``, ``aud`` ``/projects/NUMBER/global/backendServices/ID``)
and strips any such header a client sent; other proxies (oauth2-proxy, Envoy's JWT
filter, Pomerium) can be pointed at their own header, keys and audience.

The signature is checked with a key from the configured set chosen by the token's
``kid``, under the configured algorithms only; then ``exp``, ``iat`` (required) and
``nbf`` with ``leeway_s``, ``aud`` (required, one of ``audience``) and ``iss`` when
configured. ``exp``, ``iat`` and ``nbf`` must be numbers (not strings), and the token
may live at most ``max_lifetime_s``. A request with the assertion header twice is
refused (which one the proxy set cannot be known).

The principal's name is the ``name_claim``, compared exactly after one normalisation,
Unicode NFC; a name with surrounding white space or control characters is refused, never
trimmed (``"ops@example.com "`` is not the operator ``ops@example.com``). Its role and
owners come from the principals file, then the operator list, else it is a viewer of its
own name (or of the ``owners_claim``).
"""

from __future__ import annotations

import time
import unicodedata
from collections.abc import Mapping
from typing import Any

import jwt
from openrl_inspect.auth._entries import parse_entries
from openrl_inspect.auth._files import Watched
from openrl_inspect.auth._keys import KeySource
from openrl_inspect.auth._settings import AuthSettings
from openrl_inspect.auth._tokens import REJECTED, bearer
from openrl_inspect.core.errors import Forbidden, Unauthenticated
from openrl_inspect.core.principal import Principal, Role
from starlette.datastructures import Headers

MAX_JWT = 16384
MAX_OWNERS = 1000

# Most specific first: ExpiredSignatureError is an InvalidTokenError too.
_REASONS: tuple[tuple[type[jwt.PyJWTError], str], ...] = (
    (jwt.ExpiredSignatureError, "expired"),
    (jwt.ImmatureSignatureError, "not_yet_valid"),
    (jwt.InvalidAudienceError, "bad_audience"),
    (jwt.InvalidIssuerError, "bad_issuer"),
    (jwt.InvalidIssuedAtError, "bad_iat"),
    (jwt.MissingRequiredClaimError, "missing_claim"),
    (jwt.InvalidSignatureError, "bad_signature"),
    (jwt.InvalidAlgorithmError, "bad_algorithm"),
    (jwt.DecodeError, "malformed"),
)


def _by_name(data: bytes) -> Mapping[str, Principal]:
    entries = parse_entries(data, "principals file", hashed=False)
    return {_normal(e.principal.name): e.principal for e in entries}


def _normal(name: str) -> str:
    """The one normalisation before names are compared (module docstring)."""
    return unicodedata.normalize("NFC", name)


def _reason(exc: jwt.PyJWTError) -> str:
    for kind, reason in _REASONS:
        if isinstance(exc, kind):
            return reason
    return "invalid"


class JwtAuthenticator:
    def __init__(self, settings: AuthSettings, keys: KeySource) -> None:
        self.settings = settings
        self.keys = keys
        self.header = settings.jwt_header.lower()
        self.principals: Watched[Mapping[str, Principal]] | None = None
        if settings.principals_file:
            self.principals = Watched(
                settings.principals_file,
                "principals file",
                _by_name,
                {},
                settings.reload_interval_s,
            )
        self._require = ["exp", "iat", "aud"] + (["iss"] if settings.issuer else [])

    def start(self) -> None:
        if self.principals is not None:
            self.principals.load()

    async def authenticate(self, headers: Headers) -> Principal:
        return self.principal(await self.claims(headers))

    async def claims(self, headers: Headers) -> Mapping[str, Any]:
        token = self._token(headers)
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            raise Unauthenticated(REJECTED, "malformed") from None
        if header.get("alg") not in self.settings.algorithms:
            raise Unauthenticated(REJECTED, "bad_algorithm")
        kid = header.get("kid")
        key = await self.keys.key(kid if isinstance(kid, str) else None)
        if key is None:
            raise Unauthenticated(REJECTED, "unknown_key")
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key,
                algorithms=list(self.settings.algorithms),
                audience=list(self.settings.audience),
                issuer=self.settings.issuer,
                leeway=self.settings.leeway_s,
                options={"require": self._require},
            )
        except jwt.PyJWTError as exc:
            raise Unauthenticated(REJECTED, _reason(exc)) from None
        self._check_times(claims)
        return claims

    def _check_times(self, claims: Mapping[str, Any]) -> None:
        for name in ("exp", "iat", "nbf"):
            value = claims.get(name)
            if name in claims and (isinstance(value, bool) or not isinstance(value, int | float)):
                raise Unauthenticated(REJECTED, "bad_claim")
        limit = self.settings.max_lifetime_s + self.settings.leeway_s
        exp, iat = claims["exp"], claims["iat"]
        if exp - iat > limit or exp - time.time() > limit:
            raise Unauthenticated(REJECTED, "too_long")

    def _token(self, headers: Headers) -> str:
        if len(headers.getlist(self.header)) > 1:
            raise Unauthenticated(REJECTED, "duplicate_header")
        if self.header == "authorization":
            return bearer(headers)
        raw = headers.get(self.header)
        if raw is None or not raw.strip():
            raise Unauthenticated(
                f"Authentication required: the request carries no '{self.header}' header.",
                "missing",
            )
        if len(raw) > MAX_JWT:
            raise Unauthenticated(REJECTED, "malformed")
        return raw.strip()

    def principal(self, claims: Mapping[str, Any]) -> Principal:
        s = self.settings
        name = claims.get(s.name_claim)
        if not isinstance(name, str) or not name.strip() or len(name) > 256:
            raise Unauthenticated(REJECTED, "no_name")
        if name != name.strip() or not name.isprintable():
            raise Unauthenticated(REJECTED, "bad_name")
        name = _normal(name)
        listed = self.principals.get().get(name) if self.principals is not None else None
        if listed is not None:
            return listed
        if name in {_normal(o) for o in s.operators}:
            return Principal(name, Role.OPERATOR)
        if not s.admit_unlisted:
            raise Forbidden("This principal is not allowed to use the inspector.")
        return Principal(name, Role.VIEWER, self._owners(name, claims))

    def _owners(self, name: str, claims: Mapping[str, Any]) -> frozenset[str]:
        claim = self.settings.owners_claim
        if claim:
            value = claims.get(claim)
            if isinstance(value, str):
                value = [value]
            if not isinstance(value, list):
                return frozenset()
            return frozenset(o for o in value[:MAX_OWNERS] if isinstance(o, str) and o)
        if self.settings.owner_local_part and "@" in name:
            return frozenset({name.split("@", 1)[0]})
        return frozenset({name})

    async def aclose(self) -> None:
        await self.keys.aclose()
