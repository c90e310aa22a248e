"""Pods of two models on ``FakeKube`` with container logs, and the expected answers.

Lines are kept as plain tuples; ``expected_lines`` decides matches from them (not from a
filter) so a test comparing an adapter's answer with it checks what the adapter did.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from openrl_inspect.adapters.logs import SEVERITIES

from support import kube_objects
from support.fake_kube import FakeKube

NOW = datetime(2026, 3, 1, 13, 0, tzinfo=UTC)
T0 = NOW - timedelta(minutes=30)
NS = kube_objects.NAMESPACE
MODEL = "lora-a"
TRAINER = "lora-a-trainer-0"
SAMPLER = "lora-a-sampler-0"
OTHER = "lora-z-trainer-0"


@dataclass(frozen=True)
class Line:
    at: datetime
    pod: str
    container: str
    role: str
    text: str
    severity: str
    message: str
    previous: bool = False


def _lines() -> list[Line]:
    out: list[Line] = []
    for i in range(24):
        at = T0 + timedelta(seconds=30 * i, microseconds=i)
        if i % 4 == 0:
            body = {"severity": "WARNING", "message": f"grad norm {i} clipped", "step": i}
            out.append(
                Line(
                    at,
                    TRAINER,
                    "trainer",
                    "trainer",
                    json.dumps(body),
                    "WARNING",
                    str(body["message"]),
                )
            )
        elif i % 4 == 1:
            text = f"INFO op forward_backward step {i} finished"
            out.append(Line(at, TRAINER, "trainer", "trainer", text, "INFO", text))
        elif i % 4 == 2:
            text = f"[ERROR] sampler batch {i} retried: NaN in logits"
            out.append(Line(at, SAMPLER, "sampler", "sampler", text, "ERROR", text))
        else:
            text = f"rollout {i} done"
            out.append(Line(at, SAMPLER, "sampler", "sampler", text, "DEFAULT", text))
    # The trainer's previous instance, which crashed.
    crash = T0 - timedelta(minutes=5)
    for j, text in enumerate(
        [
            "Traceback (most recent call last):",
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
        ]
    ):
        out.append(
            Line(
                crash + timedelta(seconds=j),
                TRAINER,
                "trainer",
                "trainer",
                text,
                "DEFAULT",
                text,
                previous=True,
            )
        )
    return out


LINES = _lines()


def load(fake: FakeKube) -> None:
    """The pods (trainer restarted once) and their logs, with the kubelet's clock at NOW."""
    fake.put(
        kube_objects.pod(TRAINER, model_id=MODEL, role="trainer", node_name="gpu-h100-1"),
        kube_objects.pod(SAMPLER, model_id=MODEL, role="sampler", node_name="gpu-h100-1"),
        kube_objects.pod(OTHER, model_id="lora-z", role="trainer", node_name="gpu-h100-1"),
    )
    fake.log_clock = NOW.timestamp
    for line in LINES:
        fake.add_log(
            NS, line.pod, line.container, [(line.at.timestamp(), line.text)], previous=line.previous
        )
    fake.add_log(NS, OTHER, "trainer", [(T0.timestamp() + 1, "ERROR not this model")])


def expected_lines(
    start: datetime,
    end: datetime,
    *,
    severity: str | None = None,
    text: str | None = None,
    role: str | None = None,
    pod: str | None = None,
    newest_first: bool = False,
) -> list[tuple[datetime, str]]:
    """(time, message) of the lines a query should return, in order, ignoring bounds."""
    chosen = [
        line
        for line in LINES
        if start <= line.at <= end
        and (severity is None or SEVERITIES.index(line.severity) >= SEVERITIES.index(severity))
        and (text is None or text.casefold() in line.message.casefold())
        and (role is None or line.role == role)
        and (pod is None or line.pod == pod)
    ]
    chosen.sort(key=lambda line: line.at, reverse=newest_first)
    return [(line.at, line.message) for line in chosen]
