"""``diagnose``: evidence in, a verdict and ranked causes out. Pure: no I/O, no clock.

Each family of rules reads only its own backends' evidence; a family whose backend is
``Unknown`` finds nothing, and the backend is listed in ``Diagnosis.unknown``. One
rule that trips on a malformed record spoils only its own causes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from openrl_inspect.resolvers.diagnosis import (
    rules_gpus,
    rules_past,
    rules_pods,
    rules_slow,
    rules_state,
    rules_waiting,
)
from openrl_inspect.resolvers.diagnosis.budget import fit
from openrl_inspect.resolvers.diagnosis.causes import Diagnosis, Finding
from openrl_inspect.resolvers.diagnosis.evidence import ModelEvidence, Unknown
from openrl_inspect.resolvers.diagnosis.rank import rank
from openrl_inspect.resolvers.diagnosis.text import clip
from openrl_inspect.resolvers.diagnosis.verdict import judge

log = logging.getLogger(__name__)

Rule = Callable[[ModelEvidence], Sequence[Finding]]
FAMILIES: tuple[Rule, ...] = (
    rules_state.rules,
    rules_pods.rules,
    rules_past.rules,
    rules_gpus.rules,
    rules_waiting.rules,
    rules_slow.rules,
)


def _run(rule: Rule, evidence: ModelEvidence) -> Sequence[Finding]:
    try:
        return rule(evidence)
    except (ArithmeticError, AttributeError, KeyError, TypeError, ValueError):
        # A record of a shape no rule expected: its family's causes are lost, not the
        # diagnosis (nor the request).
        log.exception("diagnosis rule failed", extra={"model_id": evidence.model.id})
        return ()


def diagnose(evidence: ModelEvidence) -> Diagnosis:
    findings = [f for family in FAMILIES for f in _run(family, evidence)]
    causes, left_off = rank(findings)
    unknown = tuple(Unknown(u.backend, u.code, clip(u.message, 160)) for u in evidence.unknown)
    return fit(Diagnosis(judge(evidence, findings), causes, left_off, unknown))
