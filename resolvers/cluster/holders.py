"""Who holds a GPU: the claims its device is allocated to and the pods they are reserved
for, read from the request's snapshot of the GPU views for a whole list of GPUs at once,
filtered for a viewer; and the holders' pods and models."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from openrl_inspect.adapters.kubernetes import ClaimRecord, GpuDevice, ObjectKey, PodRecord
from openrl_inspect.context import Context
from openrl_inspect.resolvers import scope
from openrl_inspect.resolvers.cluster.reads import PER_OBJECT, gpu_views, model_by_label
from openrl_inspect.state.records import ModelRecord


@dataclass(frozen=True, slots=True)
class Holder:
    """Who holds a GPU: the claim it is allocated to and a pod the claim is reserved for
    (``pod`` None when the claim is allocated but not in use by a pod)."""

    claim: ClaimRecord
    pod: ObjectKey | None


@dataclass(frozen=True, slots=True)
class GpuHeld:
    """Whether a GPU is held (by anyone: a fact about capacity, naming nobody) and the
    holders the principal may see."""

    held: bool
    holders: tuple[Holder, ...]


async def gpus_held(ctx: Context, gpus: Sequence[GpuDevice]) -> list[GpuHeld]:
    """Who holds each GPU, from the request's snapshot, for a whole list of GPUs at once:
    their ``held`` and ``heldBy`` then answer without an await per GPU, and a viewer's
    filter loads the holders' pods and models once for the list. A viewer sees only
    holders that are its own models' pods."""
    if not gpus:
        return []
    snap = (await gpu_views(ctx)).snapshot
    claims = [snap.holders(g) for g in gpus]
    holders = [_holders(c[:PER_OBJECT]) for c in claims]
    if not scope.sees_everything(ctx):
        holders = await _visible_holders(ctx, holders)
    return [GpuHeld(bool(c), tuple(h)) for c, h in zip(claims, holders, strict=True)]


def _holders(claims: Sequence[ClaimRecord]) -> list[Holder]:
    out: list[Holder] = []
    for claim in claims:
        reserved = claim.reserved_pods
        if not reserved:
            out.append(Holder(claim, None))
        out.extend(Holder(claim, ObjectKey(claim.namespace, c.name)) for c in reserved)
    return out


async def _visible_holders(ctx: Context, per_gpu: list[list[Holder]]) -> list[list[Holder]]:
    keys = [h.pod for hs in per_gpu for h in hs if h.pod is not None]
    pods = await ctx.kube.pods.load_many(keys)
    seen = await scope.visible_model_ids(ctx, (p.model_id for p in pods if p is not None))
    mine = {p.key for p in pods if p is not None and (p.model_id or "") in seen}
    return [[h for h in hs if h.pod in mine] for hs in per_gpu]


async def holder_pod(ctx: Context, holder: Holder) -> PodRecord | None:
    return await ctx.kube.pods.load(holder.pod) if holder.pod is not None else None


async def holder_model(ctx: Context, holder: Holder) -> ModelRecord | None:
    found = await holder_pod(ctx, holder)
    return await model_by_label(ctx, found.model_id) if found is not None else None


async def holder_model_id(ctx: Context, holder: Holder) -> str | None:
    found = await holder_pod(ctx, holder)
    return found.model_id if found is not None else None
