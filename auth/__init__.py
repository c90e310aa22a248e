"""Authentication: each HTTP request becomes a ``Principal`` or a 401.

Three modes (``AuthSettings.mode``, env ``OPENRL_INSPECT_AUTH_MODE``):

- ``none``: everyone is the anonymous operator; only on a loopback address unless
  ``OPENRL_INSPECT_AUTH_ALLOW_UNAUTHENTICATED_NON_LOOPBACK`` opts in (``check_listen``);
- ``tokens``: ``Authorization: Bearer <token>`` checked against a file of SHA-256
  digests (``TokenAuthenticator``; ``openrl-inspect hash-token`` issues them);
- ``jwt``: an authenticating proxy's signed assertion (IAP's by default), verified with
  a JWKS from a file or URL (``JwtAuthenticator`` over ``FileKeys`` / ``UrlKeys``).

``AuthGate`` is the ASGI middleware that applies an ``Authenticator`` to each request.
Scoping what a principal sees is not done here: loaders and resolvers ask
``ctx.principal``. See docs/security.md.

Private modules::

    _settings  AuthSettings, the loopback rule
    _files     Watched: a small file re-read when it changes
    _entries   the tokens-file / principals-file line format
    _tokens    bearer tokens against hashed entries
    _keys      JWKS from a file or a URL, cached
    _jwt       assertions from a proxy
    _gate      the middleware, Anonymous
    _cli       serve's flags and wiring, Redis secrets
    _issue     the hash-token command
"""

from __future__ import annotations

from openrl_inspect.auth._cli import (
    Served,
    add_flags,
    argv_password,
    build,
    for_serve,
    load_settings,
    redis_secrets,
)
from openrl_inspect.auth._entries import Entry, parse_entries, token_digest
from openrl_inspect.auth._gate import REALM, Anonymous, Authenticator, AuthGate
from openrl_inspect.auth._issue import add_command as add_hash_token_command
from openrl_inspect.auth._issue import run as hash_token
from openrl_inspect.auth._jwt import JwtAuthenticator
from openrl_inspect.auth._keys import FileKeys, KeySource, UrlKeys, parse_jwks
from openrl_inspect.auth._settings import (
    IAP_HEADER,
    AuthSettings,
    check_listen,
    is_loopback,
)
from openrl_inspect.auth._tokens import TokenAuthenticator, bearer

__all__ = [
    "IAP_HEADER",
    "REALM",
    "Anonymous",
    "AuthGate",
    "AuthSettings",
    "Authenticator",
    "Entry",
    "FileKeys",
    "JwtAuthenticator",
    "KeySource",
    "Served",
    "TokenAuthenticator",
    "UrlKeys",
    "add_flags",
    "add_hash_token_command",
    "argv_password",
    "bearer",
    "build",
    "check_listen",
    "for_serve",
    "hash_token",
    "is_loopback",
    "load_settings",
    "parse_entries",
    "parse_jwks",
    "redis_secrets",
    "token_digest",
]
