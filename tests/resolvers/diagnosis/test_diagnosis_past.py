"""Causes that outlive the pods, on hand-made evidence: a node lost under the current
placement (gone from the cluster, or NotReady), not for a placement that ended for a
reason of its own; and the lost node explains the silent worker (root first)."""

from __future__ import annotations

from dataclasses import replace

from openrl_inspect.adapters.kubernetes import ObjectRef
from openrl_inspect.core.domain import CauseKind
from openrl_inspect.resolvers.diagnosis import diagnose
from support import diagnosis_evidence as ev


def test_the_current_placements_node_gone_is_node_lost_and_explains_the_silent_worker() -> None:
    silent = ev.worker(beat=ev.NOW - 400)
    removed = ev.event(
        "RemovingNode",
        f"Node {ev.NODE} event: Removing Node {ev.NODE} from Controller",
        ObjectRef("Node", "", ev.NODE),
        at=ev.NOW - 390,
        controller="node-controller",
    )
    base = ev.with_state(
        ev.healthy(), workers=((silent, False), (ev.worker(ev.SAMPLER, "sampler"), True))
    )
    evidence = ev.with_kube(base, pods=(), nodes=(), nodes_gone=(ev.NODE,), events=(removed,))
    d = diagnose(evidence)
    kinds = [c.kind for c in d.causes]
    assert kinds[:2] == [CauseKind.NODE_LOST, CauseKind.WORKER_LOST], d.causes
    lost = d.causes[0]
    assert {f.name: f.value for f in lost.facts}["state"] == "gone"
    assert lost.statement.startswith(f"trainer worker {ev.TRAINER} went silent: its node")
    assert [x.kind for x in d.causes[1].explained_by] == [CauseKind.NODE_LOST]


def test_a_released_placement_on_a_node_since_gone_is_not_blamed_without_its_events() -> None:
    ended = replace(ev.placement(admitted=ev.NOW - 3000), released_at=ev.NOW - 600)
    base = ev.with_state(ev.healthy(), placements=(ended,))
    evidence = ev.with_kube(base, pods=(), nodes=(), nodes_gone=(ev.NODE,))
    assert CauseKind.NODE_LOST not in [c.kind for c in diagnose(evidence).causes]
