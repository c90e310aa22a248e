"""The port: a bad value is one line and exit 2; a port taken by an inspector is reused
by the demo (and left running), by anything else is one line naming it."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from openrl_inspect.cli.main import main
from support.dashboard import demo_server
from support.ports import free_port

HEALTHZ = "/api/v1/inspect/healthz"


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "openrl_inspect.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "OPENRL_INSPECT_OPEN_BROWSER": "false"},
    )


@pytest.mark.parametrize(
    ("argv", "env", "says"),
    [
        (["--port", "99999"], {}, "--port: 99999 is not a port number (1-65535)"),
        (["--port", "0"], {}, "--port: 0 is not a port number"),
        (["--port", "abc"], {}, "--port: expected a port number 1-65535, got 'abc'"),
        (["--port", "8080.5"], {}, "got '8080.5'"),
        ([], {"OPENRL_INSPECT_PORT": "70000"}, "OPENRL_INSPECT_PORT: 70000 is not a port"),
        ([], {"OPENRL_INSPECT_PORT": "http"}, "OPENRL_INSPECT_PORT: expected a number"),
    ],
)
def test_a_bad_port_is_one_line(
    argv: list[str], env: dict[str, str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["demo", *argv], env) == 2
    out = capsys.readouterr()
    assert says in out.err and out.err.count("\n") == 1 and out.out == ""


def test_a_negative_port_is_one_line_from_the_real_command() -> None:
    done = run_cli("demo", "--port", "-1")
    assert done.returncode == 2
    assert done.stderr == "openrl-inspect: --port: -1 is not a port number (1-65535)\n"
    assert done.stdout == ""


@contextmanager
def http_answering(status: int, body: bytes) -> Iterator[int]:
    """Something else on a port: an HTTP server answering every GET alike."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize(
    "body",
    [
        b'{"ok": true}',
        # Another service's health answer that only resembles ours.
        b'{"ok": true, "service": "openrl-inspect", "api": "openrl-inspect/v0"}',
        b"<html>hello</html>",
    ],
    ids=["other-health", "other-api", "html"],
)
def test_a_port_taken_by_something_else_is_one_line_naming_it(body: bytes) -> None:
    with http_answering(200, body) as port:
        done = run_cli("demo", "--port", str(port))
    assert done.returncode == 1, done.stderr
    assert done.stderr == (
        f"openrl-inspect: port {port} is in use by something that is not an OpenRL "
        "inspector; choose another with --port\n"
    )
    assert "dashboard" not in done.stdout


def test_a_port_taken_by_a_silent_listener_is_one_line() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()  # accepts into the backlog, never answers: the ask times out
        port = sock.getsockname()[1]
        done = run_cli("demo", "--port", str(port))
    assert done.returncode == 1
    assert f"port {port} is in use by something that is not an OpenRL" in done.stderr
    assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1


def healthz(base: str) -> dict[str, object]:
    with urllib.request.urlopen(base + HEALTHZ, timeout=10) as resp:
        body: dict[str, object] = json.loads(resp.read())
    return body


def test_the_demo_reuses_an_inspector_already_serving_and_leaves_it_running() -> None:
    with demo_server() as base:
        port = base.rsplit(":", 1)[1]
        first = healthz(base)
        reused = run_cli("demo", "--port", port)
        serving = run_cli("serve", "--port", port)
        after = healthz(base)
    assert reused.returncode == 0, reused.stderr
    lines = reused.stdout.splitlines()
    assert (
        lines[0]
        == f"An OpenRL Inspector (demo, version {first['version']}) already serves port {port}: using it."
    )
    assert lines[1] == f"OpenRL Inspector (demo) dashboard: {base}/api/v1/inspect/ui/"
    # The same process still answers: it was neither stopped nor replaced.
    assert after["instance"] == first["instance"] and after["mode"] == "demo"
    assert serving.returncode == 1
    assert serving.stderr == (
        f"openrl-inspect: port {port} is in use by another OpenRL inspector "
        f"(demo, version {first['version']}); choose another with --port\n"
    )


def test_an_address_not_on_this_machine_is_one_line() -> None:
    # 192.0.2.0/24 is TEST-NET-1: never assigned to this machine.
    done = run_cli(
        "demo", "--host", "192.0.2.1", "--port", str(free_port()),
        "--allow-unauthenticated-non-loopback",
    )  # fmt: skip
    assert done.returncode == 2
    warning, refusal = done.stderr.splitlines()
    assert warning.startswith("WARNING: the demo serves '192.0.2.1' without authentication")
    assert refusal.startswith("openrl-inspect: cannot listen on 192.0.2.1:")
