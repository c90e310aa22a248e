"""``track-placements``' election flags and settings: command line > environment >
defaults, the identity the pod's name (its host name) unless set."""

from __future__ import annotations

import socket

import pytest
from openrl_inspect.cli import main as cli
from openrl_inspect.cli import track as track_cli
from openrl_inspect.core.errors import SettingsError
from openrl_inspect.tracker.leader import ElectionSettings


def test_flags_then_environment_then_defaults() -> None:
    args = cli.parser().parse_args(["track-placements", "--leader-elect", "--lease-name", "mine"])
    env = {
        "OPENRL_INSPECT_LEADER_NAMESPACE": "rl-system",
        "OPENRL_INSPECT_LEADER_LEASE_NAME": "from-env",
        "OPENRL_INSPECT_LEADER_RENEW_DEADLINE_S": "8",
    }
    election = track_cli._election(args, env)
    assert election == ElectionSettings(
        lease_name="mine",
        namespace="rl-system",
        identity=socket.gethostname(),
        renew_deadline_s=8.0,
    )
    named = track_cli._election(args, {"OPENRL_INSPECT_LEADER_IDENTITY": "tracker-7f9c"})
    assert named.identity == "tracker-7f9c" and named.namespace == "openrl-inspect"


def test_inconsistent_periods_are_refused() -> None:
    args = cli.parser().parse_args(["track-placements", "--leader-elect"])
    with pytest.raises(SettingsError):
        track_cli._election(args, {"OPENRL_INSPECT_LEADER_RENEW_DEADLINE_S": "20"})


def test_leader_elect_is_off_unless_asked() -> None:
    args = cli.parser().parse_args(["track-placements"])
    assert args.leader_elect is None
