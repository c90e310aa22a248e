"""Every staged scenario gets the cause it stages, with its evidence; healthy models none.

One demo world (the simulation and every twin, built as the demo builds them) is judged
through ``model_summary`` with a real request Context, as ``Model.summary`` judges it:
each scenario's top cause and the facts that make it that cause, and no cause at all
for the healthy staged models and every ordinary simulated model. The Kubernetes
objects the scenarios stage are checked against the official client's models.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import fakeredis
import pytest
from kubernetes import client as _client
from openrl_inspect.adapters.kubernetes import ObjectKey
from openrl_inspect.adapters.kubernetes.memory import MemoryKubernetesSource, parse_object
from openrl_inspect.adapters.redis import RedisStateStore
from openrl_inspect.cli.demo import DemoTwins
from openrl_inspect.core.domain import CauseKind, Verdict
from openrl_inspect.recorder import AsyncRecorder, RecorderSettings
from openrl_inspect.resolvers.context import Backends, Context
from openrl_inspect.resolvers.diagnosis import Cause
from openrl_inspect.resolvers.summary.model import ModelSummary, model_summary
from openrl_inspect.simulator import SimConfig, Simulation, kube_staging, populate
from openrl_inspect.simulator.kube_twin import cluster_records, mirror_kubernetes, slice_record
from openrl_inspect.simulator.scenarios import objects as scenario_objects
from openrl_inspect.simulator.scenarios import past, pods, waiting
from support.client_models import roundtrip
from support.harness import app_client, gql

pytestmark = pytest.mark.anyio

client: Any = _client
STEPS = 20  # Model.summary's default window


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"  # module scope: one world serves every test


@dataclass
class World:
    sim: Simulation
    store: RedisStateStore
    backends: Backends
    summaries: dict[str, ModelSummary]  # by model id

    def of(self, name: str) -> ModelSummary:
        return self.summaries[self.sim.scenario_ids[name]]


@pytest.fixture(scope="module")
async def world() -> World:
    server = fakeredis.FakeServer()
    redis = fakeredis.FakeAsyncRedis(server=server, decode_responses=True)
    settings = RecorderSettings(publish_counters=False, recorder_id="sim")
    rec = AsyncRecorder(redis, batch_size=1 << 30, settings=settings)
    now = time.time()
    sim = Simulation(SimConfig(seed=7), rec)
    populate(sim, now)
    await rec.flush()
    store = RedisStateStore.in_memory(server)
    backends = Backends(state=store)
    twins = await DemoTwins.build(sim, store, now)
    twins.install(backends)
    ctx = Context.build(backends)
    records = await ctx.state.models.load_many(list(sim.models))
    found = await asyncio.gather(*(model_summary(ctx, r, STEPS) for r in records if r))
    return World(sim, store, backends, {s.model.id: s for s in found})


Facts = Mapping[str, Any]
Check = Callable[[Facts, World], bool]


def facts(cause: Cause) -> dict[str, Any]:
    return {f.name: f.value for f in cause.facts}


# name -> (top cause, verdict, what its facts must say)
EXPECTED: dict[str, tuple[CauseKind, Verdict, Check]] = {
    "stuck": (CauseKind.OP_STUCK, Verdict.STUCK,
              lambda f, w: f["running_s"] >= 1800 and f["kind"] == "forward_backward"),
    "lost": (CauseKind.WORKER_LOST, Verdict.LOST_OPS,
             lambda f, w: f["heartbeat_age_s"] >= 600 and f["lost_ops"] == 1),
    "waiting": (CauseKind.QUOTA, Verdict.WAITING,
                lambda f, w: f["resource"] == "nvidia.com/gpu" and f["shortfall"] == 2),
    "failed": (CauseKind.OP_FAILED, Verdict.FAILED,
               lambda f, w: "CUDA out of memory" in f["error"]),
    "idle_placement": (CauseKind.STALLED, Verdict.STALLED,
                       lambda f, w: f["since_last_step_s"] >= 3500 and f["open_ops"] == 0),
    "worker_lost": (CauseKind.WORKER_LOST, Verdict.STALLED,
                    lambda f, w: f["role"] == "sampler" and 300 <= f["heartbeat_age_s"] < 400
                    and f["lost_ops"] == 0 and f["node_ready"] == "Ready"),
    "ops_lost": (CauseKind.OPS_LOST, Verdict.LOST_OPS,
                 lambda f, w: f["lost_ops"] == 1 and f["kind"] == "sample"
                 and f["workers"].endswith("-prev")),
    "op_failed": (CauseKind.OP_FAILED, Verdict.PROGRESSING,
                  lambda f, w: f["failed_ops"] == 1 and f["error"].startswith("ValueError")),
    "model_failed": (CauseKind.MODEL_FAILED, Verdict.FAILED,
                     lambda f, w: "DistBackendError" in f["failure_reason"]),
    "stalled": (CauseKind.STALLED, Verdict.STALLED,
                lambda f, w: 850 <= f["since_last_step_s"] < 1000 and f["open_ops"] == 0),
    "idle_reservation": (CauseKind.IDLE_RESERVATION, Verdict.IDLE,
                         lambda f, w: f["gpus_held"] == 2 and f["max_duty"] < 0.05),
    "oom_killed": (CauseKind.OOM_KILLED, Verdict.PROGRESSING,
                   lambda f, w: f["exit_code"] == 137 and f["container"] == "sampler"
                   and f["restarts"] == 1 and "Memory cgroup out of memory" in f["node_oom"]),
    "crash_loop": (CauseKind.CRASH_LOOP, Verdict.WAITING,
                   lambda f, w: f["exit_code"] == 1 and f["reason"] == "Error"
                   and f["restarts"] >= 5 and f["container"] == "trainer"),
    "image_pull": (CauseKind.IMAGE_PULL, Verdict.WAITING,
                   lambda f, w: f["reason"] == "ImagePullBackOff" and f["image"] == pods.BAD_IMAGE),
    "container_config": (CauseKind.CONTAINER_CONFIG, Verdict.WAITING,
                         lambda f, w: f["reason"] == "CreateContainerConfigError"
                         and f["message"] == pods.MISSING_SECRET),
    "gpu_unhealthy": (CauseKind.GPU_UNHEALTHY, Verdict.PROGRESSING,
                      lambda f, w: f["taint"] == "gpu.nvidia.com/xid=79:NoSchedule"
                      and f["tainted_gpus"] == 1
                      and f["uuid"] == w.sim.models[w.sim.scenario_ids["gpu_unhealthy"]].workers[0][3][0]),
    "quota": (CauseKind.QUOTA, Verdict.WAITING,
              lambda f, w: f["flavor"] == "h100-flavor" and f["shortfall"] == 6),
    "not_queued": (CauseKind.NOT_QUEUED, Verdict.WAITING, lambda f, w: f["reason"] == "NotFound"),
    "pod_group_quota": (CauseKind.QUOTA, Verdict.WAITING,
                        lambda f, w: (f["resource"], f["flavor"], f["shortfall"])
                        == ("cpu", "cpu-highmem", 16)),
    "preempted": (CauseKind.PREEMPTED, Verdict.WAITING,
                  lambda f, w: f["reason"] == "InClusterQueue"
                  and f["preemptor_uid"] == f"uid-wl-{waiting.PREEMPTOR}" and f["events"] == 2),
    "evicted": (CauseKind.EVICTED, Verdict.WAITING,
                lambda f, w: f["reason"] == "PodsReadyTimeout" and f["requeues"] == 1),
    "workload_inactive": (CauseKind.WORKLOAD_INACTIVE, Verdict.WAITING,
                          lambda f, w: f["reason"] == "Inactive"),
    "inadmissible": (CauseKind.INADMISSIBLE, Verdict.WAITING,
                     lambda f, w: f["message"] == f"LocalQueue {waiting.TYPO_QUEUE} doesn't exist"),
    "admission_check": (CauseKind.ADMISSION_CHECK, Verdict.WAITING,
                        lambda f, w: f["reason"] == "UnsatisfiedChecks"),
    "unschedulable": (CauseKind.UNSCHEDULABLE, Verdict.WAITING,
                      lambda f, w: f["nodes_fit"] == 0
                      and f["nodes_total"] == len(w.sim.cluster.nodes)
                      and f["nodes: cannot allocate all claims"] == len(w.sim.cluster.nodes)
                      and f["attempts"] >= 1),
    "claim_unallocated": (CauseKind.CLAIM_UNALLOCATED, Verdict.WAITING,
                          lambda f, w: f["reason"] == "ClaimNotCreated"
                          and waiting.MISSING_TEMPLATE in f["message"]),
    "device_taint_evicted": (CauseKind.EVICTED_BY_DEVICE_TAINT, Verdict.FAILED,
                             lambda f, w: f["rule"] == past.XID_RULE and f["xid"] == "79"
                             and f["taint"] == "gpu.nvidia.com/xid=79:NoExecute"
                             and f["pod_gone"] == "yes" and f["role"] == "trainer"
                             and f["uuid"] == w.sim.models[
                                 w.sim.scenario_ids["device_taint_evicted"]].workers[0][3][0]),
    "preempted_readmitted": (CauseKind.PREEMPTED, Verdict.STALLED,
                             lambda f, w: f["preemptor_uid"] == f"uid-wl-{past.PREEMPTOR}"
                             and f["readmitted_on"] != f["node"]
                             and f["readmitted_at"] - f["preempted_at"] == pytest.approx(300, abs=2)),
    "oom_chain": (CauseKind.OOM_KILLED, Verdict.FAILED,
                  lambda f, w: f["exit_code"] == 137 and f["restarts"] == past.OOM_RESTARTS
                  and f["container"] == "sampler"),
    "trainer_slow": (CauseKind.TRAINER_SLOW, Verdict.SLOW,
                     lambda f, w: f["kind"] == "forward_backward" and f["ratio"] >= 1.8),
    "sampler_slow": (CauseKind.SAMPLER_SLOW, Verdict.SLOW, lambda f, w: f["ratio"] <= 0.5),
    "client_bound": (CauseKind.CLIENT_BOUND, Verdict.SLOW,
                     lambda f, w: f["idle_share"] >= 0.6 and f["gap_after"] == "sample"),
    "pace_regression": (CauseKind.PACE_REGRESSION, Verdict.SLOW,
                        lambda f, w: f["ratio"] >= 2.0 and f["recent_samples"] == 5),
}  # fmt: skip
HEALTHY = ("healthy_trainer", "healthy_sampler_heavy", "healthy_checkpointing")
# Kinds no scenario stages: a failed pod (OpenRL's Jobs restart in place) and the
# catch-all for a wait with nothing specific to say.
# And a lost node (tested on its own, tests/resolvers/diagnosis).
NOT_STAGED = {CauseKind.POD_FAILED, CauseKind.WAITING_OTHER, CauseKind.NODE_LOST}


async def test_every_scenario_is_judged_here_and_every_cause_kind_is_staged(world: World) -> None:
    assert set(world.sim.scenario_ids) == set(EXPECTED) | set(HEALTHY)
    staged = {kind for kind, _, _ in EXPECTED.values()}
    staged |= {c.kind for s in world.summaries.values() for c in s.diagnosis.causes}
    assert set(CauseKind) - staged == NOT_STAGED


@pytest.mark.parametrize("name", sorted(EXPECTED))
async def test_scenario_gets_its_cause(world: World, name: str) -> None:
    kind, verdict, check = EXPECTED[name]
    summary = world.of(name)
    diagnosis = summary.diagnosis
    assert diagnosis.unknown == ()
    top = diagnosis.causes[0]
    assert (top.kind, top.rank, diagnosis.verdict) == (kind, 1, verdict), diagnosis.causes
    assert check(facts(top), world), top
    assert summary.reasons[0] == top.statement


async def test_the_companion_causes_rank_after(world: World) -> None:
    """What a scenario implies besides its cause, ranked behind it."""

    def kinds(name: str) -> list[CauseKind]:
        return [c.kind for c in world.of(name).diagnosis.causes]

    assert kinds("lost") == [CauseKind.WORKER_LOST] * 2 + [CauseKind.OPS_LOST, CauseKind.STALLED]
    assert kinds("failed") == [CauseKind.OP_FAILED, CauseKind.MODEL_FAILED]
    assert kinds("idle_placement") == [CauseKind.STALLED, CauseKind.IDLE_RESERVATION]
    # The slower kind explains the slower steps (when they slowed past the threshold).
    assert kinds("trainer_slow")[1:] in ([], [CauseKind.PACE_REGRESSION])
    assert kinds("sampler_slow")[1:] in ([], [CauseKind.PACE_REGRESSION])
    assert (
        kinds("unschedulable") == [CauseKind.UNSCHEDULABLE] * 2 + [CauseKind.CLAIM_UNALLOCATED] * 2
    )
    # Placed, its workers not up: the GPUs wait idle behind the pod's failure.
    for name in ("crash_loop", "image_pull", "container_config"):
        assert kinds(name)[1:] == [CauseKind.IDLE_RESERVATION]
    # Slow alone: neither a kind nor the sampler nor the client explains the pace.
    assert kinds("pace_regression") == [CauseKind.PACE_REGRESSION]


async def test_a_root_comes_first_and_says_the_chain(world: World) -> None:
    """The OOM kills explain the failed op and the model's failure; the eviction by a
    device taint (its pod long gone) explains them too; the preemption, the stall."""

    def causes(name: str) -> tuple[Cause, ...]:
        return world.of(name).diagnosis.causes

    oom = causes("oom_chain")
    assert [c.kind for c in oom] == [
        CauseKind.OOM_KILLED, CauseKind.OP_FAILED, CauseKind.MODEL_FAILED
    ]  # fmt: skip
    assert oom[0].statement == (
        f"forward_backward at step {facts(oom[1])['step']} failed: its sampler pod was "
        f"OOMKilled ({past.OOM_RESTARTS} restart(s), exit 137, limit {past.MEMORY_LIMIT})"
    )
    assert {x.kind for x in oom[0].explains} == {CauseKind.OP_FAILED, CauseKind.MODEL_FAILED}
    assert [x.kind for x in oom[1].explained_by] == [CauseKind.OOM_KILLED]
    assert oom[1].explained_by[0].object == oom[0].refs[0]

    taint = causes("device_taint_evicted")
    assert [c.kind for c in taint][:2] == [CauseKind.EVICTED_BY_DEVICE_TAINT, CauseKind.OP_FAILED]
    assert taint[0].statement.startswith("forward_backward at step ")
    assert f"DeviceTaintRule {past.XID_RULE} (Xid 79 on GPU-" in taint[0].statement
    assert [x.kind for x in taint[1].explained_by] == [CauseKind.EVICTED_BY_DEVICE_TAINT]

    preempted = causes("preempted_readmitted")
    assert [c.kind for c in preempted][:2] == [CauseKind.PREEMPTED, CauseKind.STALLED]
    assert preempted[0].statement.startswith("no step for ")
    assert "re-admitted on " in preempted[0].statement
    assert [x.kind for x in preempted[1].explained_by] == [CauseKind.PREEMPTED]


async def test_a_past_whose_events_log_is_not_there_is_said_unknown(world: World) -> None:
    """Without Cloud Logging the eviction's Events (older than the watch cache) are not
    guessed: the backend is said, and the rule and GPU still name the taint."""
    b = world.backends
    bare = Backends(state=b.state, kubernetes=b.kubernetes)
    ctx = Context.build(bare)
    rec = await ctx.state.models.load(world.sim.scenario_ids["device_taint_evicted"])
    assert rec is not None
    summary = await model_summary(ctx, rec, STEPS)
    unknown = {(u.backend, u.code) for u in summary.diagnosis.unknown}
    assert ("cloud_logging", "BACKEND_NOT_CONFIGURED") in unknown
    assert CauseKind.EVICTED_BY_DEVICE_TAINT not in {c.kind for c in summary.diagnosis.causes}


async def test_healthy_models_get_no_cause(world: World) -> None:
    staged = set(world.sim.scenario_ids.values())
    healthy = [world.of(name) for name in HEALTHY]
    ordinary = [s for mid, s in world.summaries.items() if mid not in staged]
    assert len(ordinary) == len(world.sim.models) - len(staged) > 0
    for summary in healthy + ordinary:
        d = summary.diagnosis
        assert (d.verdict, d.causes, d.unknown) == (Verdict.PROGRESSING, (), ()), summary.model.id
        assert summary.reasons == ["progressing"]


async def test_the_api_gives_the_same_verdicts(world: World) -> None:
    query = "query($id: ID!) { model(id: $id) { summary { verdict reasons causes { kind } } } }"
    b = world.backends
    async with app_client(
        world.store,
        kubernetes=b.kubernetes,
        gpu_metrics=b.gpu_metrics,
        prometheus=b.prometheus,
        logs=b.logs,
    ) as http:
        for name, mid in sorted(world.sim.scenario_ids.items()):
            body = await gql(http, query, id=mid)
            assert "errors" not in body, body
            got = body["data"]["model"]["summary"]
            summary = world.summaries[mid]
            assert got["verdict"] == summary.verdict.value, name
            # The top reason alike; the API may leave lower causes off to fit its budget
            # (its answer carries Cloud Logging filters and links besides).
            kinds = [c["kind"] for c in got["causes"]]
            assert kinds == [c.kind.value for c in summary.diagnosis.causes][: len(kinds)], name
            assert len(got["reasons"]) <= len(summary.reasons), name


# ------------------------------------------------------------ the staged objects


def _stagings(sim: Simulation) -> list[tuple[str, kube_staging.Staging]]:
    names = {mid: name for name, mid in sim.scenario_ids.items()}
    return [(names[mid], stage(sim, sim.models[mid])) for mid, stage in sim.kube_stages.items()]


def _normal(value: Any) -> Any:
    """Comparable: times as instants; no nulls nor empty maps (the client drops them)."""
    if isinstance(value, dict):
        return {k: _normal(v) for k, v in value.items() if v not in (None, {})}
    if isinstance(value, list):
        return [_normal(v) for v in value]
    if isinstance(value, str) and value[:4].isdigit() and "T" in value:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    return value


def _event_roundtrip(obj: dict[str, Any]) -> None:
    # The client's model requires eventTime, which the API server writes as null for
    # events recorded through core/v1: those are checked with a stand-in.
    checked = {**obj, "eventTime": obj["eventTime"] or "2026-01-05T09:00:00.000000Z"}
    with client.ApiClient() as api:
        parsed = api.deserialize(json.dumps(checked), "EventsV1Event", "application/json")
        assert _normal(api.sanitize_for_serialization(parsed)) == _normal(checked)


MODELS = {
    "Pod": "V1Pod",
    "ResourceClaim": "ResourceV1ResourceClaim",
    "ResourceSlice": "V1ResourceSlice",
    "Job": "V1Job",
    "DeviceTaintRule": "V1beta2DeviceTaintRule",
}


async def test_staged_objects_are_valid_for_the_client_models(world: World) -> None:
    """Kueue's Workload and the JobSet are CRDs (no client model): their conditions are
    metav1.Conditions and their pod templates PodTemplateSpecs."""
    seen: set[str] = set()
    for _, staging in _stagings(world.sim):
        for obj in staging.objects:
            kind = obj["kind"]
            seen.add(kind)
            if kind == "Event":
                _event_roundtrip(dict(obj))
            elif kind == "Workload":
                for condition in obj["status"]["conditions"]:
                    roundtrip(condition, "V1Condition")
                for pod_set in obj["spec"]["podSets"]:
                    roundtrip(pod_set["template"], "V1PodTemplateSpec")
            elif kind == "JobSet":
                for job in obj["spec"]["replicatedJobs"]:
                    roundtrip(job["template"]["spec"]["template"], "V1PodTemplateSpec")
            else:
                roundtrip(dict(obj), MODELS[kind])
    assert seen == {*MODELS, "Event", "Workload", "JobSet"}


def test_a_misshapen_staged_object_is_caught() -> None:
    pod = scenario_objects.worker_pod(
        "m-1", "trainer", created=1.8e9, node="n", phase="Pending", conditions=[]
    )
    pod["status"]["condition"] = pod["status"].pop("conditions")
    with pytest.raises(AssertionError):
        roundtrip(pod, "V1Pod")


async def test_staged_objects_are_the_twins_own(world: World) -> None:
    """Written whole, a staged object reads as the twin's record of it: the same slice
    for an untainted node, the same pod identity (labels, owners, claims)."""
    sim = world.sim
    for node in sim.cluster.nodes[:2]:
        parsed = parse_object(scenario_objects.resource_slice(node, 1.7e9))
        assert parsed == slice_record(node)
    stages, sim.kube_stages = sim.kube_stages, {}
    try:
        plain = {p.key: p for p in cluster_records(sim).pods}
    finally:
        sim.kube_stages = stages
    staged = {p.key: p for p in cluster_records(sim).pods}
    oom = sim.models[sim.scenario_ids["oom_killed"]]
    key = ObjectKey("openrl", oom.workers[1][2])
    for field in ("uid", "model_id", "worker_role", "node_name", "job_uids", "owner_name"):
        assert getattr(staged[key], field) == getattr(plain[key], field), field
    # The Job controller's job-name label besides.
    assert plain[key].labels.items() < staged[key].labels.items()
    assert staged[key].resource_claims == plain[key].resource_claims
    assert staged[key].containers != plain[key].containers


async def test_an_unreadable_staged_object_is_refused(world: World) -> None:
    sim = world.sim
    mid = sim.scenario_ids["quota"]
    stages = dict(sim.kube_stages)
    sim.kube_stages[mid] = lambda s, m: kube_staging.Staging(({"kind": "Pod", "metadata": {}},))
    try:
        with pytest.raises(ValueError, match="staged object not readable: Pod"):
            cluster_records(sim)
    finally:
        sim.kube_stages = stages


async def test_staged_objects_outlive_the_mirrors_ticks(world: World) -> None:
    """The demo mirrors the simulation every tick, replacing the stores: the staged
    pods stay, and each event is one event, seen again as it repeats."""
    sim = world.sim
    twin = MemoryKubernetesSource()
    mirror_kubernetes(sim, twin)
    events = len(twin.view.events)
    crash = sim.models[sim.scenario_ids["crash_loop"]]
    key = ObjectKey("openrl", crash.workers[0][2])
    before = twin.view.pods.get(key)
    saved = sim.now
    try:
        sim.now += 1200  # twenty minutes later, nothing else moved
        mirror_kubernetes(sim, twin)
        after = twin.view.pods.get(key)
    finally:
        sim.now = saved
    assert before is not None and after is not None
    assert before.containers[0].reason == after.containers[0].reason == "CrashLoopBackOff"
    assert after.containers[0].restart_count > before.containers[0].restart_count
    assert len(twin.view.events) == events
