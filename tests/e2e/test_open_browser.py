"""When the demo opens the dashboard in a browser, and when it never does."""

from __future__ import annotations

import pytest
from openrl_inspect.cli.main import main, parser
from openrl_inspect.cli.open_browser import should_open, why_not

DESKTOP = {"DISPLAY": ":0"}


@pytest.mark.parametrize(
    ("env", "platform", "reason"),
    [
        ({"CI": "true", **DESKTOP}, "linux", "CI"),
        ({"GITHUB_ACTIONS": "true", **DESKTOP}, "linux", "CI"),
        ({"SSH_CONNECTION": "10.0.0.1 5 10.0.0.2 22", **DESKTOP}, "linux", "SSH"),
        ({"SSH_TTY": "/dev/pts/1"}, "darwin", "SSH"),
        ({}, "linux", "no display"),
        ({"USER": "root", "HOME": "/root"}, "linux", "no display"),
    ],
)
def test_no_graphical_browser_in_ci_over_ssh_or_without_a_display(
    env: dict[str, str], platform: str, reason: str
) -> None:
    got = why_not(env, platform)
    assert got is not None and reason in got
    assert should_open(None, env, platform) is False


@pytest.mark.parametrize(
    ("env", "platform"),
    [
        (DESKTOP, "linux"),
        ({"WAYLAND_DISPLAY": "wayland-0"}, "linux"),
        ({}, "darwin"),
        ({"CI": "false", **DESKTOP}, "linux"),
    ],
)
def test_a_desktop_session_opens_it(env: dict[str, str], platform: str) -> None:
    assert why_not(env, platform) is None
    assert should_open(None, env, platform) is True


def test_the_flag_or_its_variable_wins_over_the_guess() -> None:
    assert should_open(True, {"CI": "1"}, "linux") is True
    assert should_open(False, DESKTOP, "linux") is False
    assert parser().parse_args(["demo", "--no-open-browser"]).open_browser is False
    assert parser().parse_args(["demo", "--open-browser"]).open_browser is True
    assert parser().parse_args(["demo"]).open_browser is None


def test_a_bad_variable_is_a_one_line_error_before_anything_is_served(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["demo"], {"OPENRL_INSPECT_OPEN_BROWSER": "perhaps"}) == 2
    captured = capsys.readouterr()
    assert captured.err.strip() == (
        "openrl-inspect: OPENRL_INSPECT_OPEN_BROWSER: expected a boolean, got 'perhaps'"
    )
    assert captured.out == ""
