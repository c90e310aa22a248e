"""schema.graphql is the SDL of the code; regenerate it with `openrl-inspect export-schema`."""

from __future__ import annotations

from openrl_inspect.execution.schema import build_schema
from support.tree import ROOT

SDL = ROOT / "schema.graphql"


def test_committed_sdl_matches_the_code() -> None:
    assert SDL.read_text(encoding="utf-8") == build_schema().as_str() + "\n", (
        "schema.graphql drifted from the code: run `openrl-inspect export-schema schema.graphql`"
    )
