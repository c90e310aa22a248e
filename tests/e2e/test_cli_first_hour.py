"""The command line as a new user meets it: a bad setting is one line naming it before
anything else is printed, the flag wins over the environment, Ctrl+C and a closed pipe
end quietly with the shell's statuses, the demo asks before serving off loopback, and a
missing token file is named."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time
from typing import Any

import pytest
from openrl_inspect.cli import demo
from openrl_inspect.cli.launch import listen_settings
from openrl_inspect.cli.main import BROKEN_PIPE, INTERRUPTED, main, parser
from openrl_inspect.cli.summary import ClientSettings
from openrl_inspect.core.errors import SettingsError
from support.ports import free_port


@pytest.mark.parametrize(
    ("argv", "env", "says"),
    [
        (["serve", "--redis-url", "notaurl"], {}, "--redis-url: expected a URL starting redis://"),
        (["serve", "--redis-url", "http://cache:6379"], {}, "got 'http://cache:6379'"),
        (
            ["serve"],
            {"OPENRL_INSPECT_REDIS_URL": "cache:6379"},
            "OPENRL_INSPECT_REDIS_URL: expected a URL starting redis://",
        ),
        (["serve", "--prometheus-url", "ftp://prom"], {}, "--prometheus-url: expected a URL"),
        (["serve", "--redis-timeout", "-1"], {}, "--redis-timeout: expected a number of at"),
        (["demo", "--request-deadline", "-2"], {}, "--request-deadline: expected a number"),
        (["serve"], {"OPENRL_INSPECT_LIMITS_MAX_NODES": "-5"}, "OPENRL_INSPECT_LIMITS_MAX_NODES"),
        (["serve"], {"OPENRL_INSPECT_EXECUTION": "quick"}, "OPENRL_INSPECT_EXECUTION: expected"),
    ],
)
def test_a_bad_setting_is_one_line_before_any_url(
    argv: list[str], env: dict[str, str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        main([*argv, "--port", str(free_port())], {**env, "OPENRL_INSPECT_OPEN_BROWSER": "0"}) == 2
    )
    out = capsys.readouterr()
    assert out.out == ""  # no dashboard URL printed as if serving
    assert out.err.startswith("openrl-inspect: ") and says in out.err
    assert out.err.count("\n") == 1 and "Traceback" not in out.err


def test_the_flag_wins_over_a_variable_it_overrides() -> None:
    args = parser().parse_args(["serve", "--port", "8081"])
    assert listen_settings(args, {"OPENRL_INSPECT_PORT": "abc"}).port == 8081


def test_a_missing_token_file_is_named() -> None:
    client = ClientSettings(url="http://127.0.0.1:1", token_file="/nonexistent/oi-token")
    with pytest.raises(SettingsError, match="/nonexistent/oi-token"):
        client.bearer()


def test_the_demo_asks_before_serving_off_loopback(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert main(["demo", "--host", "0.0.0.0", "--port", str(free_port())], {}) == 2
    refused = capsys.readouterr().err
    assert "not a loopback address" in refused and "--allow-unauthenticated" in refused
    launched: list[Any] = []

    def launch(*args: Any) -> int:
        launched.append(args)
        return 0

    monkeypatch.setattr(demo, "launch", launch)
    argv = ["demo", "--host", "0.0.0.0", "--allow-unauthenticated-non-loopback"]
    assert main(argv, {}) == 0 and launched
    assert capsys.readouterr().err.startswith("WARNING: the demo serves '0.0.0.0' without")


def test_a_closed_pipe_ends_quietly() -> None:
    # The reader is gone before anything is written: the first write fails whatever the
    # timing (the SDL is far larger than a pipe's buffer).
    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "openrl_inspect.cli", "export-schema"],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    finally:
        os.close(write)
    assert done.returncode == BROKEN_PIPE
    assert done.stderr == ""


@pytest.mark.slow
def test_ctrl_c_in_a_terminal_stops_the_demo_quietly() -> None:
    port = free_port()
    argv = [sys.executable, "-m", "openrl_inspect.cli", "demo", "--port", str(port)]
    env = {**os.environ, "OPENRL_INSPECT_OPEN_BROWSER": "false"}
    pid, fd = pty.fork()
    if pid == 0:  # the child: the demo, on the terminal
        os.execve(sys.executable, argv, env)
    out = _read_until(fd, b"Uvicorn running", 90.0)
    assert b"Uvicorn running" in out, out[-2000:]
    # Before it serves, the ids to try first, as links (the seed is fixed).
    ui = f"http://127.0.0.1:{port}/api/v1/inspect/ui/"
    assert f"a failed model   {ui}#/model/model-7-00798".encode() in out, out[-3000:]
    os.write(fd, b"\x03")  # Ctrl+C, as the terminal sends it (SIGINT to the group)
    out += _read_until(fd, b"\x00never", 60.0)
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    assert os.waitstatus_to_exitcode(status) == INTERRUPTED
    assert b"Traceback" not in out and b"KeyboardInterrupt" not in out
    assert b"Finished server process" in out


def _read_until(fd: int, marker: bytes, timeout_s: float) -> bytes:
    """What the terminal shows until ``marker``, the end, or ``timeout_s``."""
    out = b""
    deadline = time.monotonic() + timeout_s
    while marker not in out and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if not ready:
            continue
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # the child has gone: the terminal is closed
            break
        if not chunk:
            break
        out += chunk
    return out
