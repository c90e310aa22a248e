"""The verdict: the summary's verdicts, judged the same way, and SLOW.

FAILED and ENDED from the model's state; then LOST_OPS, STUCK (from the open ops'
health), WAITING (waiting or placed), IDLE (active, no finished step), STALLED (no
step for far longer than usual); SLOW when it progresses but a slow cause was found;
else PROGRESSING. Causes never make a verdict worse than the state shows: a crash
loop under a waiting model explains the wait, it does not fail the model.
"""

from __future__ import annotations

from collections.abc import Sequence

from openrl_inspect.core.domain import WAITING_STATES, ModelState, OpHealth, Verdict
from openrl_inspect.resolvers.diagnosis import pace
from openrl_inspect.resolvers.diagnosis.causes import Finding
from openrl_inspect.resolvers.diagnosis.evidence import ModelEvidence
from openrl_inspect.resolvers.diagnosis.rank import SLOW, TIERS


def judge(evidence: ModelEvidence, findings: Sequence[Finding]) -> Verdict:
    state = evidence.model.state
    if state == ModelState.FAILED:
        return Verdict.FAILED
    if state == ModelState.ENDED:
        return Verdict.ENDED
    health = {h for _, h in evidence.state.open_ops}
    if OpHealth.LOST in health:
        return Verdict.LOST_OPS
    if OpHealth.STUCK in health:
        return Verdict.STUCK
    if state in WAITING_STATES:
        return Verdict.WAITING
    if pace.last_finished(evidence.state.steps) is None:
        return Verdict.IDLE
    if pace.is_stalled(evidence):
        return Verdict.STALLED
    if any(TIERS[f.kind] == SLOW for f in findings):
        return Verdict.SLOW
    return Verdict.PROGRESSING
