"""The simulated cluster's hardware: GPU nodes, their GPUs, and who holds which."""

from __future__ import annotations

import random
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Gpu:
    uuid: str
    node: str
    index: int
    product: str


@dataclass
class Node:
    name: str
    pool: str
    gpus: list[Gpu]
    held: dict[str, str] = field(default_factory=dict)  # gpu uuid -> model id
    # Its GPUs are cut into MIG slices (``partitions``): never given whole to a model.
    partitioned: bool = False

    def free(self) -> list[Gpu]:
        return [g for g in self.gpus if g.uuid not in self.held]


PRODUCTS = {
    "h100": "NVIDIA H100 80GB HBM3",
    "h200": "NVIDIA H200",
    "h100-mig": "NVIDIA H100 80GB HBM3",
}


def _uuid(rng: random.Random) -> str:
    h = f"{rng.getrandbits(128):032x}"
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


class Cluster:
    """GPU nodes in pools of 8-GPU machines; deterministic for a given ``rng``."""

    def __init__(self, rng: random.Random, nodes_per_pool: dict[str, int]) -> None:
        self.nodes: list[Node] = []
        for pool, count in nodes_per_pool.items():
            self.add_nodes(pool, count, rng)

    def add_nodes(
        self,
        pool: str,
        count: int,
        rng: random.Random,
        *,
        gpus: int = 8,
        partitioned: bool = False,
    ) -> None:
        """``count`` more nodes of ``gpus`` GPUs in ``pool``, numbered after the pool's
        others; ``partitioned``: their GPUs are cut into MIG slices."""
        first = sum(1 for n in self.nodes if n.pool == pool)
        for i in range(first, first + count):
            name = f"gke-openrl-{pool}-pool-{i:03d}"
            devices = [Gpu(_uuid(rng), name, k, PRODUCTS[pool]) for k in range(gpus)]
            self.nodes.append(Node(name, pool, devices, partitioned=partitioned))

    def allocate(self, model_id: str, count: int) -> tuple[Node, list[Gpu]] | None:
        """``count`` GPUs on one node (trainers need NVLink peers), or None when full.
        A partitioned node's GPUs are only ever handed out as slices."""
        for node in self.nodes:
            if node.partitioned:
                continue
            free = node.free()
            if len(free) >= count:
                chosen = free[:count]
                for gpu in chosen:
                    node.held[gpu.uuid] = model_id
                return node, chosen
        return None

    def release(self, model_id: str) -> None:
        for node in self.nodes:
            for uuid in [u for u, m in node.held.items() if m == model_id]:
                del node.held[uuid]
