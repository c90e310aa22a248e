"""Starting ``serve``: no authentication off loopback without the opt-in, settings
errors before anything listens, hash-token, and what authentication turns off."""

from __future__ import annotations

import io
import json
import logging
from pathlib import Path
from typing import Any

import pytest
from openrl_inspect.auth import (
    AuthSettings,
    TokenAuthenticator,
    check_listen,
    for_serve,
    is_loopback,
    token_digest,
)
from openrl_inspect.cli.main import main, parser
from openrl_inspect.core.errors import SettingsError
from openrl_inspect.core.principal import Role
from openrl_inspect.core.settings import Settings, Switches
from openrl_inspect.telemetry import jsonlog
from openrl_inspect.web import server
from starlette.datastructures import Headers

pytestmark = pytest.mark.anyio


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Calls to ``server.serve``: nothing listens in these tests, and logging stays as
    pytest set it."""
    calls: list[dict[str, Any]] = []

    def fake_serve(
        app: Any, host: str, port: int, log_level: str, http: Any, gc_settings: Any = None
    ) -> None:
        calls.append({"app": app, "host": host, "gc": gc_settings})

    monkeypatch.setattr(server, "serve", fake_serve)
    monkeypatch.setattr(jsonlog, "configure", lambda level: None)
    return calls


@pytest.mark.parametrize("host", ["127.0.0.1", "127.8.9.10", "::1", "[::1]", "localhost"])
def test_loopback_addresses(host: str) -> None:
    assert is_loopback(host)
    assert check_listen(AuthSettings(), host) is None


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "10.1.2.3", "inspector.example.com", ""])
def test_no_authentication_off_loopback_needs_the_opt_in(host: str) -> None:
    assert not is_loopback(host)
    with pytest.raises(SettingsError, match="ALLOW_UNAUTHENTICATED_NON_LOOPBACK"):
        check_listen(AuthSettings(), host)
    warning = check_listen(AuthSettings(allow_unauthenticated_non_loopback=True), host)
    assert warning is not None and "OFF" in warning


def test_serve_refuses_to_start_unauthenticated_on_a_wildcard_address(
    served: list[dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["serve", "--host", "0.0.0.0"], {}) == 2
    err = capsys.readouterr().err
    assert "refusing to serve without authentication" in err and "--auth-mode" in err
    assert served == []
    env = {"OPENRL_INSPECT_AUTH_ALLOW_UNAUTHENTICATED_NON_LOOPBACK": "true"}
    assert main(["serve", "--host", "0.0.0.0"], env) == 0
    assert [c["host"] for c in served] == ["0.0.0.0"]


@pytest.mark.parametrize(
    ("argv", "env", "message"),
    [
        (["--auth-mode", "tokens"], {}, "TOKENS_FILE"),
        (["--auth-mode", "tokens", "--auth-tokens-file", "/nonexistent/t"], {}, "cannot be read"),
        (["--auth-mode", "jwt", "--auth-jwks-url", "https://k.example/j"], {}, "AUDIENCE"),
        (["--auth-mode", "jwt", "--auth-audience", "a"], {}, "JWKS_FILE or"),
        (
            ["--auth-mode", "jwt", "--auth-audience", "a", "--auth-jwks-url", "http://k.example"],
            {},
            "https",
        ),
        ([], {"OPENRL_INSPECT_AUTH_MODE": "ldap"}, "expected one of none, tokens, jwt"),
        (
            [],
            {
                "OPENRL_INSPECT_AUTH_MODE": "jwt",
                "OPENRL_INSPECT_AUTH_JWKS_URL": "https://k.example/j",
                "OPENRL_INSPECT_AUTH_AUDIENCE": "a",
                "OPENRL_INSPECT_AUTH_ALGORITHMS": "ES256,HS256",
            },
            "public-key algorithms only",
        ),
        ([], {"OPENRL_INSPECT_REDIS_PASSWORD_FILE": "/nonexistent/pw"}, "password file"),
    ],
)
def test_bad_authentication_settings_stop_serve_before_it_listens(
    served: list[dict[str, Any]],
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    env: dict[str, str],
    message: str,
) -> None:
    assert main(["serve", *argv], env) == 2
    assert message in capsys.readouterr().err
    assert served == []


def test_authentication_turns_graphiql_and_introspection_off_by_default(
    tmp_path: Path,
) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text("")
    argv = ["serve", "--auth-mode", "tokens", "--auth-tokens-file", str(tokens)]
    on = for_serve(parser().parse_args(argv), {}, "0.0.0.0", Settings())
    assert (on.settings.switches.introspection, on.graphiql, on.warnings) == (False, False, [])
    asked = parser().parse_args([*argv, "--introspection", "--graphiql"])
    chosen = for_serve(asked, {}, "0.0.0.0", Settings(switches=Switches(introspection=True)))
    assert (chosen.settings.switches.introspection, chosen.graphiql) == (True, True)
    env = {"OPENRL_INSPECT_INTROSPECTION": "true"}
    assert for_serve(
        parser().parse_args(argv), env, "::", Settings()
    ).settings.switches.introspection
    off = for_serve(parser().parse_args(["serve"]), {}, "127.0.0.1", Settings())
    assert (off.settings.switches.introspection, off.graphiql) == (True, True)


async def test_hash_token_adds_an_entry_and_prints_the_token_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "tokens.jsonl"
    argv = ["hash-token", "--name", "alice", "--owner", "rl-team", "--tokens-file", str(path)]
    assert main(argv, {}) == 0
    first = capsys.readouterr().out.strip()
    assert (
        main(
            ["hash-token", "--name", "ops", "--role", "operator"],
            {"OPENRL_INSPECT_AUTH_TOKENS_FILE": str(path)},
        )
        == 0
    )
    ops = capsys.readouterr().out.strip()
    text = path.read_text()
    assert first not in text and ops not in text
    assert token_digest(first).hex() in text
    assert path.stat().st_mode & 0o777 == 0o600
    auth = TokenAuthenticator(str(path), interval_s=0)
    auth.start()
    alice = await auth.authenticate(Headers({"authorization": f"Bearer {first}"}))
    assert (alice.name, alice.role, alice.owners) == ("alice", Role.VIEWER, frozenset({"rl-team"}))
    assert (await auth.authenticate(Headers({"authorization": f"Bearer {ops}"}))).operator
    # Rotation: a new token for alice replaces the old one in one step.
    assert main([*argv, "--replace"], {}) == 0
    second = capsys.readouterr().out.strip()
    assert (await auth.authenticate(Headers({"authorization": f"Bearer {second}"}))).name == "alice"
    assert len(path.read_text().splitlines()) == 2


def test_hash_token_without_a_file_prints_the_entry_and_reads_stdin(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("my-existing-token\n"))
    assert (
        main(["hash-token", "--name", "ci", "--stdin", "--expires", "2030-01-01T00:00:00Z"], {})
        == 0
    )
    out = capsys.readouterr()
    entry = json.loads(out.out)
    assert entry["sha256"] == token_digest("my-existing-token").hex()
    assert entry["expires"] == "2030-01-01T00:00:00Z"
    assert "my-existing-token" not in out.out + out.err
    assert main(["hash-token", "--name", "x", "--expires", "next week"], {}) == 2
    monkeypatch.setattr("sys.stdin", io.StringIO("has spaces in it\n"))
    assert main(["hash-token", "--name", "x", "--stdin"], {}) == 2
    assert main(["hash-token", "--name", "x", "--tokens-file", "/nonexistent/dir/t"], {}) == 2
    assert "the tokens file" in capsys.readouterr().err


def test_a_password_in_the_redis_url_argument_is_warned_about(
    served: list[dict[str, Any]], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, "openrl_inspect.auth")
    assert main(["serve", "--redis-url", "redis://:hunter2-planted@10.0.0.5:6379/0"], {}) == 0
    warned = [r.getMessage() for r in caplog.records if r.name == "openrl_inspect.auth"]
    assert any("--redis-url carries a password" in w for w in warned)
    assert all("hunter2-planted" not in w for w in warned)
    caplog.clear()
    env = {"OPENRL_INSPECT_REDIS_URL": "redis://:hunter2-planted@10.0.0.5:6379/0"}
    assert main(["serve"], env) == 0
    assert not [r for r in caplog.records if r.name == "openrl_inspect.auth"]
