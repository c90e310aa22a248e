"""Who holds a GPU: the claims its device is allocated to and the pods they are reserved
for, read from the request's snapshot of the GPU views for a whole list of GPUs at once,
filtered for a viewer; and the holders' pods and models."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from openrl_inspect.adapters.kubernetes import ClaimRecord, GpuDevice, ObjectKey, PodRecord
from openrl_inspect.resolvers import scope
from openrl_inspect.resolvers.cluster.reads import PER_OBJECT, gpu_views, model_by_label
from openrl_inspect.resolvers.context import Context
from openrl_inspect.state.records import ModelRecord


@dataclass(frozen=True, slots=True)
class Holder:
    """Who holds a GPU: the claim it is allocated to and a pod the claim is reserved for
    (``pod`` None when the claim is allocated but not in use by a pod), with that pod
    as the cache has it (``pod_record`` None when it is gone)."""

    claim: ClaimRecord
    pod: ObjectKey | None
    pod_record: PodRecord | None = None


@dataclass(frozen=True, slots=True)
class GpuHeld:
    """Whether a GPU is held (by anyone: a fact about capacity, naming nobody) and the
    holders the principal may see."""

    held: bool
    holders: tuple[Holder, ...]


async def gpus_held(ctx: Context, gpus: Sequence[GpuDevice]) -> list[GpuHeld]:
    """Who holds each GPU, from the request's snapshot, for a whole list of GPUs at once,
    with the holders' pods loaded in one batch: ``held``, ``heldBy`` and a holder's pod
    then answer without an await per GPU or holder. A viewer sees only holders that are
    its own models' pods (their models checked once for the list)."""
    if not gpus:
        return []
    snap = (await gpu_views(ctx)).snapshot
    claims = [snap.holders(g) for g in gpus]
    per_gpu = [_holders(c[:PER_OBJECT]) for c in claims]
    keys = [h.pod for hs in per_gpu for h in hs if h.pod is not None]
    pods = {p.key: p for p in await ctx.kube.pods.load_many(keys) if p is not None}
    # Made anew rather than by ``dataclasses.replace``, which costs several times a
    # constructor (a cluster view has thousands of holders).
    per_gpu = [
        [Holder(h.claim, h.pod, pods.get(h.pod)) if h.pod else h for h in hs] for hs in per_gpu
    ]
    if not scope.sees_everything(ctx):
        seen = await scope.visible_model_ids(ctx, (p.model_id for p in pods.values()))
        mine = {k for k, p in pods.items() if (p.model_id or "") in seen}
        per_gpu = [[h for h in hs if h.pod in mine] for hs in per_gpu]
    return [GpuHeld(bool(c), tuple(h)) for c, h in zip(claims, per_gpu, strict=True)]


def _holders(claims: Sequence[ClaimRecord]) -> list[Holder]:
    out: list[Holder] = []
    for claim in claims:
        reserved = claim.reserved_pods
        if not reserved:
            out.append(Holder(claim, None))
        out.extend(Holder(claim, ObjectKey(claim.namespace, c.name)) for c in reserved)
    return out


async def holder_model(ctx: Context, holder: Holder) -> ModelRecord | None:
    found = holder.pod_record
    return await model_by_label(ctx, found.model_id) if found is not None else None
