"""What ``serve`` needs from authentication: flags, settings, the authenticator, and what
the API exposes (GraphiQL, introspection) once a principal is required."""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from openrl_inspect.auth._files import FileError
from openrl_inspect.auth._gate import Anonymous, Authenticator
from openrl_inspect.auth._jwt import JwtAuthenticator
from openrl_inspect.auth._keys import FileKeys, KeySource, UrlKeys
from openrl_inspect.auth._settings import MODES, AuthSettings, check_listen, is_loopback
from openrl_inspect.auth._tokens import TokenAuthenticator
from openrl_inspect.core import settings
from openrl_inspect.core.errors import SettingsError

if TYPE_CHECKING:
    from openrl_inspect.adapters.redis import RedisSettings
    from openrl_inspect.core.settings import Settings


def add_flags(p: argparse.ArgumentParser) -> None:
    """``serve``'s authentication flags; the rest are environment variables."""
    p.add_argument("--auth-mode", choices=MODES, help="none (default), tokens or jwt")
    p.add_argument("--auth-tokens-file", help="tokens file (mode tokens)")
    p.add_argument("--auth-jwks-url", help="URL of the JWKS to verify assertions (mode jwt)")
    p.add_argument("--auth-jwks-file", help="file holding that JWKS instead (mode jwt)")
    p.add_argument(
        "--auth-audience", action="append", help="an accepted aud claim (mode jwt; repeat)"
    )
    p.add_argument("--auth-issuer", help="the required iss claim (mode jwt)")
    p.add_argument("--auth-jwt-header", help="header holding the assertion (mode jwt)")
    p.add_argument("--auth-principals-file", help="roles and owners by name (mode jwt)")
    p.add_argument(
        "--allow-unauthenticated-non-loopback",
        action="store_true",
        default=None,
        help="serve mode none on a non-loopback address: anyone who reaches it sees all",
    )
    p.add_argument(
        "--graphiql",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="the GraphiQL page (default: on only without authentication)",
    )


def load_settings(args: argparse.Namespace, env: Mapping[str, str]) -> AuthSettings:
    audience = tuple(args.auth_audience) if getattr(args, "auth_audience", None) else None
    flags = {
        "mode": getattr(args, "auth_mode", None),
        "tokens_file": getattr(args, "auth_tokens_file", None),
        "jwks_url": getattr(args, "auth_jwks_url", None),
        "jwks_file": getattr(args, "auth_jwks_file", None),
        "audience": audience,
        "issuer": getattr(args, "auth_issuer", None),
        "jwt_header": getattr(args, "auth_jwt_header", None),
        "principals_file": getattr(args, "auth_principals_file", None),
        "allow_unauthenticated_non_loopback": getattr(
            args, "allow_unauthenticated_non_loopback", None
        ),
        "graphiql": getattr(args, "graphiql", None),
    }
    return settings.load(AuthSettings, "OPENRL_INSPECT_AUTH_", env, flags)


def build(s: AuthSettings, host: str = "127.0.0.1") -> Authenticator:
    """The authenticator for ``s``, its files read once now (a missing one stops start-up)."""
    try:
        if s.mode == "tokens":
            assert s.tokens_file is not None
            tokens = TokenAuthenticator(s.tokens_file, s.reload_interval_s)
            tokens.start()
            return tokens
        if s.mode == "jwt":
            keys: KeySource
            if s.jwks_file:
                files = FileKeys(s.jwks_file, s.algorithms, s.reload_interval_s)
                files.start()
                keys = files
            else:
                assert s.jwks_url is not None
                keys = UrlKeys(
                    s.jwks_url,
                    s.algorithms,
                    s.jwks_refresh_s,
                    s.jwks_timeout_s,
                    s.jwks_min_refetch_s,
                )
            verifier = JwtAuthenticator(s, keys)
            verifier.start()
            return verifier
    except FileError as exc:
        raise SettingsError(str(exc)) from None
    return Anonymous(loopback_only=is_loopback(host))


@dataclass
class Served:
    """How ``serve`` runs: who may ask, what is exposed, and what to warn about."""

    authenticator: Authenticator
    settings: Settings
    graphiql: bool
    warnings: list[str] = field(default_factory=list)


def for_serve(
    args: argparse.Namespace, env: Mapping[str, str], host: str, inspector: Settings
) -> Served:
    s = load_settings(args, env)
    warnings = [w for w in [check_listen(s, host)] if w]
    explicit = (
        getattr(args, "introspection", None) is not None or "OPENRL_INSPECT_INTROSPECTION" in env
    )
    if s.mode != "none" and not explicit:
        # A principal is required: do not hand every viewer the schema by default.
        switches = dataclasses.replace(inspector.switches, introspection=False)
        inspector = dataclasses.replace(inspector, switches=switches)
    return Served(build(s, host), inspector, s.graphiql_on, warnings)


def redis_secrets(redis: RedisSettings, flag_url: str | None) -> list[str]:
    """Check the Redis password file is readable; warn about a password in argv."""
    try:
        redis.secret()
    except ValueError as exc:
        raise SettingsError(str(exc)) from None
    return [w for w in [argv_password(flag_url, "--redis-url")] if w]


def argv_password(value: str | None, flag: str) -> str | None:
    """A warning when a URL given on the command line carries a password (never quoted)."""
    if not value:
        return None
    try:
        has_password = bool(urlsplit(value).password)
    except ValueError:
        return None
    if not has_password:
        return None
    return (
        f"{flag} carries a password, which anyone who can list this machine's processes "
        "can read: give it in OPENRL_INSPECT_REDIS_PASSWORD_FILE (or the environment) "
        "instead"
    )
