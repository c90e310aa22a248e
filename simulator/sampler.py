"""The batches a simulated sampler records while it runs a ``sample`` op.

A sample op of ``took`` seconds is split into back-to-back batches of about
``BATCH_S`` each, every one recorded at its end through ``RecorderBase.sampler_batch``,
with the tokens ``Simulation.op_metrics`` reports for the op (``GEN_RATE`` tokens per
second). Its own random stream, seeded from the simulation's seed, keeps the rest of
the simulation's draws (and so every other record) as they were without batches.
"""

from __future__ import annotations

import random

from openrl_inspect.recorder import RecorderBase

BATCH_S = 0.6
GEN_RATE = 12_000.0  # generated tokens per second, as Simulation.op_metrics
PROMPT_TOKENS = 4096  # per sample op, as Simulation.op_metrics
BATCH_SIZES = (32, 64)


class SamplerBatches:
    def __init__(self, recorder: RecorderBase, seed: int) -> None:
        self._rec = recorder
        self._rng = random.Random(f"sampler-batches-{seed}")

    def record(
        self,
        model_id: str,
        worker: str,
        op_id: str,
        start: float,
        end: float,
        rate: float = GEN_RATE,
    ) -> None:
        """The batches of the op that ran from ``start`` to ``end``, generating about
        ``rate`` tokens per second."""
        took = max(0.0, end - start)
        n = max(1, round(took / BATCH_S))
        t = start
        for i in range(n):
            latency = took / n
            t = end if i == n - 1 else t + latency
            self._rec.sampler_batch(
                model_id,
                batch_size=self._rng.choice(BATCH_SIZES),
                prompt_tokens=PROMPT_TOKENS // n,
                generated_tokens=int(rate * latency * self._rng.uniform(0.9, 1.1)),
                latency_s=round(latency, 4),
                queue_depth=self._rng.randint(0, 8),
                worker_id=worker,
                op_id=op_id,
                at=t,
            )
