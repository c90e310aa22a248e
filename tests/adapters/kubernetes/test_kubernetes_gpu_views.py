"""The GPU views the watch cache keeps per event equal a recomputation from scratch.

Random sequences of upserts and deletes of nodes, pods, ResourceSlices (pools, generations,
device taints, whole GPUs and MIG slices, with and without their GPU published),
ResourceClaims and DeviceTaintRules, with snapshots taken in between (so
flushes happen mid-sequence), then a relist (``replace``) to another random state. After
each, the incrementally kept snapshot must equal (a) views built from scratch over the same
stores and (b) the capacity and holders the resolvers computed per request before the
views existed (``GpuIndex``, the claims' device index, ``node_capacity``, ``by_product``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from hypothesis import HealthCheck, given, settings, strategies
from openrl_inspect.adapters.kubernetes import (
    AllocatedDevice,
    ClaimConsumer,
    ClaimRecord,
    DeviceTaint,
    GpuDevice,
    GpuSnapshot,
    NodeRecord,
    ObjectKey,
    PodRecord,
    SliceRecord,
    Taint,
    TaintRuleRecord,
    by_product,
    node_capacity,
)
from openrl_inspect.adapters.kubernetes._store import GpuIndex
from openrl_inspect.adapters.kubernetes._view import ClusterView
from openrl_inspect.adapters.kubernetes.memory import MemoryKubernetesSource

DRIVER = "gpu.nvidia.com"
NODES = ["n0", "n1", "n2", "n3"]
SLICES = ["s0", "s1", "s2", "s3"]
POOLS = ["p0", "p1"]
# Mostly a slice's usual pool, so that claims often name published devices, and two
# slices share a pool (generations); sometimes another pool.
USUAL_POOL = {"s0": "p0", "s1": "p1", "s2": "p0", "s3": "p1"}
PRODUCTS = [None, "NVIDIA-H100-80GB-HBM3", "NVIDIA-H200"]
EFFECTS = ["NoSchedule", "NoExecute", "None"]

taints = strategies.lists(
    strategies.builds(
        DeviceTaint,
        key=strategies.sampled_from(["a", "b"]),
        effect=strategies.sampled_from(EFFECTS),
    ),
    max_size=2,
).map(tuple)


# A MIG slice names its GPU gpu-<n>: each slice record's GPUs have numbers of their own.
GPU_BASE = {"s0": 0, "s1": 4, "s2": 8, "s3": 12}


def mig_name(name: str, parent: int, i: int) -> str:
    return f"gpu-{GPU_BASE[name] + parent}-mig-{i}"


@strategies.composite
def slices(draw: Any) -> SliceRecord:
    name = draw(strategies.sampled_from(SLICES))
    pool = draw(strategies.sampled_from([USUAL_POOL[name]] * 4 + POOLS))
    generation = draw(strategies.integers(0, 2))
    node = draw(strategies.sampled_from([*NODES, None]))
    # Device names carry the slice's: a driver never publishes one device twice in a pool.
    devices = []
    for i in draw(strategies.sets(strategies.integers(0, 3), min_size=1, max_size=3)):
        product = draw(strategies.sampled_from(PRODUCTS))
        device = GpuDevice(
            driver=DRIVER,
            pool=pool,
            pool_generation=generation,
            node_name=node,
            device=f"{name}-gpu-{i}",
            device_type="gpu",
            uuid=f"GPU-{name}-{i}",
            index=i,
            minor=i,
            product_name=product,
            architecture=None,
            driver_version=None,
            pci_bus_id=None,
            memory_bytes=None,
            slice_name=name,
            taints=draw(taints),
        )
        # Sometimes MIG slices of GPU i, or of GPU 0 (whether published or not), their
        # GPU by UUID or, without parentUUID, by name.
        for parent in draw(strategies.sets(strategies.sampled_from([0, i]), max_size=1)):
            for k in range(draw(strategies.integers(1, 3))):
                devices.append(
                    replace(
                        device,
                        device=mig_name(name, parent, 4 * i + k),
                        device_type="mig",
                        uuid=f"MIG-{name}-{parent}-{i}-{k}",
                        parent_uuid=draw(strategies.sampled_from([f"GPU-{name}-{parent}", None])),
                        profile="1g.10gb",
                        taints=draw(taints),
                    )
                )
        if draw(strategies.booleans()) or not devices:
            devices.append(device)
    return SliceRecord(name, DRIVER, pool, generation, node, tuple(devices))


nodes = strategies.builds(
    NodeRecord,
    name=strategies.sampled_from(NODES),
    labels=strategies.sampled_from([{}, {"nvidia.com/gpu.product": "NVIDIA-A100"}]),
    gpu_allocatable=strategies.sampled_from([None, 0, 2, 4]),
    gpu_capacity=strategies.sampled_from([None, 0, 4]),
    ready=strategies.sampled_from([True, False, None]),
    unschedulable=strategies.booleans(),
    taints=strategies.sampled_from([(), (Taint("maintenance", "NoSchedule"),)]),
    conditions=strategies.just(()),
    created=strategies.none(),
)

pods = strategies.builds(
    PodRecord,
    namespace=strategies.just("openrl"),
    name=strategies.sampled_from(["a", "b", "c", "d"]),
    uid=strategies.just("uid"),
    phase=strategies.sampled_from(["Running", "Pending", "Succeeded"]),
    node_name=strategies.sampled_from([*NODES, None]),
    labels=strategies.just({}),
    model_id=strategies.none(),
    worker_role=strategies.none(),
    conditions=strategies.just(()),
    containers=strategies.just(()),
    scheduling_failure=strategies.none(),
    resource_claims=strategies.just(()),
    gpu_request=strategies.integers(0, 3),
    owner_kind=strategies.none(),
    owner_name=strategies.none(),
    created=strategies.none(),
    started=strategies.none(),
    deleting=strategies.just(False),
)

allocated = strategies.builds(
    lambda s, i, pool, mig: AllocatedDevice(
        "gpus", DRIVER, pool or USUAL_POOL[s], mig_name(s, mig, 4 * i) if mig else f"{s}-gpu-{i}"
    ),
    strategies.sampled_from(SLICES),
    strategies.integers(0, 3),
    strategies.sampled_from([None] * 4 + POOLS),
    strategies.sampled_from([None, None, 0, 1]),
)

claims = strategies.builds(
    ClaimRecord,
    namespace=strategies.just("openrl"),
    name=strategies.sampled_from(["c0", "c1", "c2", "c3", "c4"]),
    uid=strategies.just("uid"),
    requests=strategies.just(()),
    allocated=strategies.just(True),
    devices=strategies.lists(allocated, min_size=1, max_size=3).map(tuple),
    reserved_for=strategies.sampled_from([(), (ClaimConsumer("pods", "a", None),)]),
    created=strategies.none(),
    deleting=strategies.just(False),
)

rules = strategies.builds(
    TaintRuleRecord,
    name=strategies.sampled_from(["r0", "r1"]),
    uid=strategies.just("uid"),
    taint=strategies.builds(
        DeviceTaint, key=strategies.just("rule"), effect=strategies.sampled_from(EFFECTS)
    ),
    selects=strategies.booleans(),
    pool=strategies.sampled_from([None, *POOLS]),
    device=strategies.sampled_from([None, "s0-gpu-0", "s1-gpu-1", "gpu-0", "gpu-4"]),
    device_class=strategies.sampled_from([None, None, "gpu.nvidia.com"]),
)

records = strategies.one_of(nodes, pods, slices(), claims, rules)
# ("put", record) | ("delete", kind, key) | ("snapshot",)
KINDS = {"nodes": NODES, "pods": ["a", "b", "c", "d"], "resourceslices": SLICES,
         "resourceclaims": ["c0", "c1", "c2", "c3", "c4"], "devicetaintrules": ["r0", "r1"]}  # fmt: skip
NAMESPACED = {"pods", "resourceclaims"}
deletes = strategies.sampled_from(sorted(KINDS)).flatmap(
    lambda kind: strategies.tuples(
        strategies.just("delete"), strategies.just(kind), strategies.sampled_from(KINDS[kind])
    )
)
ops = strategies.lists(
    strategies.one_of(
        strategies.tuples(strategies.just("put"), records), deletes, strategies.just(("snapshot",))
    ),
    min_size=8,
    max_size=40,
)


def apply(twin: MemoryKubernetesSource, op: tuple[Any, ...]) -> None:
    if op[0] == "put":
        twin.put(op[1])
    elif op[0] == "delete":
        kind, name = op[1], op[2]
        twin.remove(kind, ObjectKey("openrl" if kind in NAMESPACED else "", name))
    else:
        twin.view.gpu_snapshot()


def comparable(snap: GpuSnapshot) -> tuple[Any, ...]:
    return (
        dict(snap.nodes),
        snap.total,
        snap.by_product,
        snap.node_count,
        snap.slices,
        snap.partitioned,
    )


def from_scratch(view: ClusterView) -> GpuSnapshot:
    """Views over the same stores, built whole (unwatched views rebuild from scratch)."""
    fresh = ClusterView(
        pods=view.pods, nodes=view.nodes, slices=view.slices, claims=view.claims,
        taint_rules=view.taint_rules,
    )  # fmt: skip
    return fresh.gpu_snapshot()


def check_against_per_request(view: ClusterView, snap: GpuSnapshot) -> None:
    """What the resolvers computed on every request before the views existed."""
    index = GpuIndex(view.slices.values(), view.taint_rules.values())
    held = {k for k in index.by_key if view.claims.keys_for("device", k)}
    by_node: dict[str, list[GpuDevice]] = {}
    for g in index.devices:
        by_node.setdefault(g.node_name or "", []).append(g)
    names = sorted({n.name for n in view.nodes.values()} | {n for n in by_node if n})
    per_node = []
    for name in names:
        pods_here = [view.pods.get(k) for k in view.pods.keys_for("node", name)]
        node = view.nodes.get(ObjectKey("", name))
        gpus = by_node.get(name, [])
        per_node.append(node_capacity(name, node, gpus, held, [p for p in pods_here if p]))
        assert snap.gpus_on(name) == tuple(gpus)
    for cap in per_node:
        assert snap.node_capacity(cap.node) == cap
    conditions = {c.node: c.condition for c in per_node}
    assert snap.by_product == by_product(per_node, index.devices, held, conditions)
    assert snap.node_count == len(names)
    assert snap.total == sum((c.counts for c in per_node), type(snap.total)())
    assert snap.slices == sum((c.slices for c in per_node), type(snap.slices)())
    assert snap.partitioned == sum(c.partitioned for c in per_node)
    # A GPU once, however many slices: never more GPUs than devices, nor slices.
    mig = [g for g in index.devices if g.is_slice and g.node_name]
    assert snap.slices.total == len(mig)
    whole = sum(c.counts.total for c in per_node if c.basis == "dra")
    assert whole <= len([g for g in index.devices if g.node_name]) - len(mig) + snap.partitioned
    for g in index.devices:
        claim_keys = sorted(view.claims.keys_for("device", g.key))
        assert snap.holders(g) == tuple(view.claims.get(k) for k in claim_keys)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops, strategies.lists(records, max_size=25))
def test_incremental_views_equal_a_recomputation(
    sequence: list[tuple[Any, ...]], relisted: list[Any]
) -> None:
    twin = MemoryKubernetesSource()
    for op in sequence:
        apply(twin, op)
    snap = twin.view.gpu_snapshot()
    assert comparable(snap) == comparable(from_scratch(twin.view))
    check_against_per_request(twin.view, snap)

    # A relist (after a 410, or the resync period) replaces each store wholesale.
    v = twin.view
    stores: dict[type, Any] = {
        NodeRecord: v.nodes, PodRecord: v.pods, SliceRecord: v.slices,
        ClaimRecord: v.claims, TaintRuleRecord: v.taint_rules,
    }  # fmt: skip
    for record_type, store in stores.items():
        store.replace([r for r in relisted if isinstance(r, record_type)])
    after = twin.view.gpu_snapshot()
    assert after.version >= snap.version  # the same snapshot when nothing changed
    assert comparable(after) == comparable(from_scratch(twin.view))
    check_against_per_request(twin.view, after)


def test_a_snapshot_never_changes_once_taken() -> None:
    node = NodeRecord("n0", {}, None, None, True, False, (), (), None)
    twin = MemoryKubernetesSource([node])
    first = twin.view.gpu_snapshot()
    assert twin.view.gpu_snapshot() is first  # nothing changed: the same snapshot
    twin.put(NodeRecord("n1", {}, None, None, True, False, (), (), None))
    second = twin.view.gpu_snapshot()
    assert second is not first and set(first.nodes) == {"n0"} and set(second.nodes) == {"n0", "n1"}
    assert first.node_count == 1 and second.node_count == 2


def test_rules_and_claims_after_a_snapshot_move_the_counts() -> None:
    device = GpuDevice(
        DRIVER, "p0", 1, "n0", "gpu-0", "gpu", "GPU-0", 0, 0, "NVIDIA-H200", None, None,
        None, None, "s0",
    )  # fmt: skip
    node = NodeRecord("n0", {}, None, None, True, False, (), (), None)
    twin = MemoryKubernetesSource([node, SliceRecord("s0", DRIVER, "p0", 1, "n0", (device,))])
    assert twin.view.gpu_snapshot().total.free == 1
    rule = TaintRuleRecord("drain", "uid", DeviceTaint("drain", "NoSchedule"), True, pool="p0")
    twin.put(rule)
    snap = twin.view.gpu_snapshot()
    assert snap.total.unhealthy == 1 and snap.gpus_on("n0")[0].taints == (rule.taint,)
    twin.remove("devicetaintrules", ObjectKey("", "drain"))
    claim = ClaimRecord(
        "openrl", "c0", "uid", (), True, (AllocatedDevice("gpus", DRIVER, "p0", "gpu-0"),),
        (ClaimConsumer("pods", "a", None),), None, False,
    )  # fmt: skip
    twin.put(claim)
    snap = twin.view.gpu_snapshot()
    assert snap.total.held == 1 and snap.holders(device) == (claim,)
    # An older generation's slice of the pool never counts.
    twin.put(SliceRecord("s-old", DRIVER, "p0", 0, "n0", (device,)))
    assert twin.view.gpu_snapshot().total.total == 1
    twin.remove("resourceclaims", ObjectKey("openrl", "c0"))
    snap = twin.view.gpu_snapshot()
    assert snap.total.free == 1 and snap.holders(device) == ()
    assert snap.by_product[0].product == "NVIDIA-H200" and snap.by_product[0].nodes == 1
