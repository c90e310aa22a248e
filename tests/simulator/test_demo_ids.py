"""The demo prints ids to try first, and the README's examples use ids the demo always
has: its seed is fixed, so the ids are the same on every start."""

from __future__ import annotations

import re
import time
from pathlib import Path

import fakeredis
import pytest
from openrl_inspect.cli.demo import DemoSettings, ids_to_try, print_ids_to_try
from openrl_inspect.core.domain import ModelState
from openrl_inspect.recorder import AsyncRecorder
from openrl_inspect.simulator import SimConfig, Simulation, populate

README = Path(__file__).resolve().parents[2] / "README.md"
UI = "http://127.0.0.1:8080/api/v1/inspect/ui/"


def demo_world() -> Simulation:
    demo = DemoSettings()
    writer = fakeredis.FakeAsyncRedis(decode_responses=True)
    config = SimConfig(
        seed=demo.seed,
        sessions=demo.sessions,
        models_per_session=demo.models_per_session,
        steps_per_model=demo.steps_per_model,
    )
    sim = Simulation(config, AsyncRecorder(writer, batch_size=1 << 30))
    populate(sim, time.time())
    return sim


@pytest.fixture(scope="module")
def sim() -> Simulation:
    return demo_world()


def test_the_ids_to_try_are_a_failed_a_stuck_a_waiting_model_and_a_session(
    sim: Simulation,
) -> None:
    tried = {label: (page, oid) for label, page, oid in ids_to_try(sim)}
    assert set(tried) == {"a failed model", "a stuck model", "a waiting model", "their session"}
    assert sim.models[tried["a failed model"][1]].state == ModelState.FAILED
    assert sim.models[tried["a waiting model"][1]].state == ModelState.WAITING
    assert sim.models[tried["a stuck model"][1]].state == ModelState.ACTIVE
    assert tried["their session"] == ("session", sim.models[tried["a failed model"][1]].session_id)


def test_the_ids_are_the_same_on_every_start(sim: Simulation) -> None:
    assert ids_to_try(demo_world()) == ids_to_try(sim)


def test_they_are_printed_as_links_to_the_dashboard(
    sim: Simulation, capsys: pytest.CaptureFixture[str]
) -> None:
    print_ids_to_try(sim, UI)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "Try:"
    for (label, page, oid), line in zip(ids_to_try(sim), lines[1:], strict=True):
        assert line.split() == [*label.split(), f"{UI}#/{page}/{oid}"]


def test_the_readme_uses_ids_the_demo_has(sim: Simulation) -> None:
    text = README.read_text(encoding="utf-8")
    used = set(re.findall(r"\b(?:model|sess)-7-\d{5}\b", text))
    assert len(used) >= 4
    known = set(sim.models) | set(sim.sessions)
    assert used <= known, used - known
    # Every id the demo offers first is in the README's walk-through.
    assert {oid for _, _, oid in ids_to_try(sim)} <= used
    assert 'model(id: "...")' not in text and 'session(id: "...")' not in text
