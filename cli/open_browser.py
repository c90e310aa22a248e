"""Whether ``openrl-inspect demo`` opens the dashboard in a browser, and opening it.

By default only when a graphical browser is usable: never in CI, over SSH, or without a
display on Linux (which covers root on a headless box), and never into a text-mode
browser that would take over the terminal the server logs to.
"""

from __future__ import annotations

import socket
import sys
import threading
import time
import webbrowser
from collections.abc import Callable, Mapping

# webbrowser's console fallbacks: they would take over the server's terminal.
_TEXT_BROWSERS = {"www-browser", "links", "elinks", "lynx", "w3m"}
_CI_VARIABLES = ("CI", "GITHUB_ACTIONS", "GITLAB_CI", "BUILDKITE", "JENKINS_URL", "TF_BUILD")
_SSH_VARIABLES = ("SSH_CONNECTION", "SSH_CLIENT", "SSH_TTY")


def why_not(env: Mapping[str, str], platform: str = sys.platform) -> str | None:
    """Why no graphical browser is usable here, or None when one seems to be."""
    for name in _CI_VARIABLES:
        if env.get(name, "").strip().lower() not in ("", "0", "false", "no"):
            return f"{name} is set (CI)"
    for name in _SSH_VARIABLES:
        if env.get(name):
            return "an SSH session"
    if platform.startswith("linux") and not (env.get("DISPLAY") or env.get("WAYLAND_DISPLAY")):
        return "no display (DISPLAY and WAYLAND_DISPLAY unset)"
    return None


def should_open(choice: bool | None, env: Mapping[str, str], platform: str = sys.platform) -> bool:
    """``choice`` is the flag or its environment variable; None means decide here."""
    if choice is not None:
        return choice
    return why_not(env, platform) is None


def _usable_browser() -> webbrowser.BaseBrowser | None:
    try:
        browser = webbrowser.get()
    except webbrowser.Error:
        return None
    return None if getattr(browser, "name", "") in _TEXT_BROWSERS else browser


def _wait_for(host: str, port: int, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.2)
    return False


def open_when_listening(
    url: str,
    host: str,
    port: int,
    say: Callable[[str], None],
    timeout_s: float = 60.0,
) -> threading.Thread:
    """Open ``url`` once ``host:port`` accepts connections (in a daemon thread)."""

    def run() -> None:
        if not _wait_for(host, port, timeout_s):
            return
        browser = _usable_browser()
        if browser is None or not browser.open(url):
            say(f"Could not open a browser; open {url} yourself.")

    thread = threading.Thread(target=run, name="open-browser", daemon=True)
    thread.start()
    return thread


def open_now(url: str, say: Callable[[str], None]) -> None:
    """Open ``url`` at once (it is already served, by another process)."""
    browser = _usable_browser()
    if browser is None or not browser.open(url):
        say(f"Could not open a browser; open {url} yourself.")
