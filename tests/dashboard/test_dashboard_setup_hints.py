"""The dashboard tells a person how to turn a backend on (the empty cluster page, a
banner for a backend that is not set up): every flag and environment variable it names
is one `openrl-inspect serve` reads, and turns that backend on."""

from __future__ import annotations

import re

import pytest
from openrl_inspect.cli.main import parser
from openrl_inspect.cli.serve import BackendSettings, backend_settings
from support.tree import ROOT

LIB = (ROOT / "static" / "ui" / "lib.js").read_text()
BLOCK = re.search(r"const BACKENDS = \{(.*?)\n\};", LIB, re.S)
assert BLOCK is not None, "lib.js holds the backends' setup hints in BACKENDS"


def hints(backend: str) -> str:
    """The setup text of one backend in lib.js (its entry up to the next one)."""
    assert BLOCK is not None
    parts = re.split(r"\n  (\w+): \{", BLOCK.group(1))
    entries = dict(zip(parts[1::2], parts[2::2], strict=True))
    return entries[backend]


def configured(config: BackendSettings, backend: str) -> bool:
    if backend == "redis":
        return config.redis.url == REDIS
    return getattr(config, backend) is not None


REDIS = "redis://example:6379"
# What a person puts for each placeholder the hints show.
VALUES = {
    "PATH": "/tmp/kubeconfig",
    "URL": "http://example:9090",
    "PROJECT": "example-project",
    "true": "true",
}


def value(placeholder: str) -> str:
    return REDIS if placeholder.startswith("redis://") else VALUES[placeholder]


@pytest.mark.parametrize("backend", ["redis", "kubernetes", "prometheus", "cloud_logging"])
def test_every_hint_turns_its_backend_on(backend: str) -> None:
    text = hints(backend)
    flags = re.findall(r"(--[a-z-]+)(?: ([A-Z]+\b|redis://[^ )]+))?", text)
    names = re.findall(r"(OPENRL_INSPECT_[A-Z_]+)(?:=([^ ),\"]+))?", text)
    assert flags and names, text
    for flag, shown in flags:
        given = [flag, value(shown)] if shown else [flag]
        config = backend_settings(parser().parse_args(["serve", *given]), {})
        assert configured(config, backend), (backend, given)
    # A variable shown without a value takes what its flag takes.
    placeholder = next((shown for _, shown in flags if shown), "true")
    for name, shown in names:
        env = {name: value(shown or placeholder)}
        config = backend_settings(parser().parse_args(["serve"]), env)
        assert configured(config, backend), (backend, env)
