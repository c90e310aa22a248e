"""Authentication settings, and the rule that keeps ``none`` off the network."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from urllib.parse import urlsplit

from openrl_inspect.core.errors import SettingsError

ENV_PREFIX = "OPENRL_INSPECT_AUTH_"
MODES = ("none", "tokens", "jwt")
#: The header Google's Identity-Aware Proxy signs its assertion into.
IAP_HEADER = "x-goog-iap-jwt-assertion"


@dataclass(frozen=True)
class AuthSettings:
    """Who may ask. Env prefix ``OPENRL_INSPECT_AUTH_``."""

    # none: everyone is the anonymous operator (loopback only, unless opted in below);
    # tokens: bearer tokens from ``tokens_file``; jwt: a proxy's signed assertion.
    mode: str = "none"
    # Loudly named on purpose: ``none`` on a non-loopback address exposes everything.
    allow_unauthenticated_non_loopback: bool = False
    # The GraphiQL page (and Strawberry's IDE on GET); default: on only with mode none.
    graphiql: bool | None = None
    # Seconds between checks (one stat) of whether a watched file changed; 0: every request.
    reload_interval_s: float = 1.0
    # tokens: JSON lines of {"sha256", "name", "role", "owners"} (see docs/security.md).
    tokens_file: str | None = None
    # jwt: where the assertion is; "authorization" takes it from "Bearer <jwt>".
    jwt_header: str = IAP_HEADER
    # jwt: the verifying keys, a JWKS document in a file or at a URL (https or loopback).
    jwks_file: str | None = None
    jwks_url: str | None = None
    jwks_refresh_s: float = 3600.0
    jwks_timeout_s: float = 5.0
    # jwt: at most one fetch this often for a key id not in the cached set (rotation).
    jwks_min_refetch_s: float = 60.0
    # jwt: accepted ``aud`` values (at least one) and ``iss`` (checked when set).
    audience: tuple[str, ...] = ()
    issuer: str | None = None
    algorithms: tuple[str, ...] = ("ES256",)
    leeway_s: float = 30.0
    # jwt: the longest a token may live (``exp`` after ``iat``, and after now); IAP's
    # assertions live 10 minutes, an OIDC ID token an hour.
    max_lifetime_s: float = 86_400.0
    # jwt: the claim naming the principal; IAP's ``email`` is the plain address.
    name_claim: str = "email"
    # jwt: a claim (string or list) holding a viewer's owners; unset: the name itself.
    owners_claim: str | None = None
    # jwt: a viewer's default owner is the part of the name before "@".
    owner_local_part: bool = False
    # jwt: principals by name, JSON lines of {"name", "role", "owners"}.
    principals_file: str | None = None
    # jwt: names that are operators (besides those the principals file makes operators).
    operators: tuple[str, ...] = ()
    # jwt: a name neither listed nor an operator is a viewer; false refuses it (403).
    admit_unlisted: bool = True

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise SettingsError(
                f"{ENV_PREFIX}MODE: expected one of {', '.join(MODES)}, got {self.mode!r}"
            )
        if self.mode == "tokens" and not self.tokens_file:
            raise SettingsError(f"mode tokens needs {ENV_PREFIX}TOKENS_FILE (--auth-tokens-file)")
        if self.mode == "jwt":
            self._check_jwt()

    def _check_jwt(self) -> None:
        if bool(self.jwks_file) == bool(self.jwks_url):
            raise SettingsError(
                f"mode jwt needs one of {ENV_PREFIX}JWKS_FILE or {ENV_PREFIX}JWKS_URL"
            )
        if not self.audience:
            raise SettingsError(
                f"mode jwt needs {ENV_PREFIX}AUDIENCE: a token for another audience "
                "must not be accepted here"
            )
        if not self.algorithms or any(a.upper().startswith("HS") for a in self.algorithms):
            raise SettingsError(
                f"{ENV_PREFIX}ALGORITHMS: public-key algorithms only (ES256, RS256 ...)"
            )
        if self.jwks_url and not _safe_url(self.jwks_url):
            raise SettingsError(
                f"{ENV_PREFIX}JWKS_URL: must be https:// (http:// only on loopback)"
            )

    @property
    def graphiql_on(self) -> bool:
        return self.mode == "none" if self.graphiql is None else self.graphiql


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a listen address) is reachable from this machine only."""
    host = host.strip().strip("[]")
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_listen(settings: AuthSettings, host: str) -> str | None:
    """Refuse ``none`` on a non-loopback address; the warning to log when opted in."""
    if settings.mode != "none" or is_loopback(host):
        return None
    if not settings.allow_unauthenticated_non_loopback:
        raise SettingsError(
            f"refusing to serve without authentication on {host!r}, which is not a "
            "loopback address: set --auth-mode tokens or jwt (OPENRL_INSPECT_AUTH_MODE), "
            "listen on 127.0.0.1, or set "
            f"{ENV_PREFIX}ALLOW_UNAUTHENTICATED_NON_LOOPBACK=true to accept that anyone "
            "who reaches this address sees everything"
        )
    return (
        f"authentication is OFF on the non-loopback address {host!r} "
        f"({ENV_PREFIX}ALLOW_UNAUTHENTICATED_NON_LOOPBACK): anyone who reaches it is an "
        "operator and sees everything"
    )


def _safe_url(url: str) -> bool:
    parts = urlsplit(url)
    if parts.scheme == "https":
        return bool(parts.hostname)
    return parts.scheme == "http" and is_loopback(parts.hostname or "")
