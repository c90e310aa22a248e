"""A GPU's health (the DRA device taints on it: its driver's, DeviceTaintRules', and for
a MIG slice its GPU's) and what kind of device it is (a whole GPU, a MIG slice)."""

from __future__ import annotations

from datetime import datetime
from enum import Enum

import strawberry
from openrl_inspect.adapters.kubernetes import DeviceTaint, GpuDevice
from openrl_inspect.core import domain
from openrl_inspect.schema.common import domain_enum, ts

GpuHealth = domain.GpuHealth
domain_enum(
    GpuHealth,
    name="GpuHealth",
    description="A GPU's health as the cluster reports it: UNHEALTHY when a DRA device "
    "taint with effect NoSchedule or NoExecute keeps new claims off it (for a MIG slice, "
    "also one on the GPU it is on).",
    values={
        GpuHealth.HEALTHY: "No NoSchedule or NoExecute device taint on it.",
        GpuHealth.UNHEALTHY: "A NoSchedule or NoExecute device taint (its ResourceSlice's "
        "or a DeviceTaintRule's) keeps new claims off it.",
    },
)


@strawberry.enum(description="What a DRA GPU device is, from its driver's `type` attribute.")
class GpuKind(Enum):
    GPU = strawberry.enum_value("gpu", description="A whole GPU (`type` gpu).")
    MIG = strawberry.enum_value(
        "mig",
        description="A MIG slice of a GPU (`type` mig): `profile` and `parentUuid` say "
        "which slice of which GPU. Counted as a slice, never as a GPU.",
    )
    VFIO = strawberry.enum_value(
        "vfio",
        description="A whole GPU published for PCI passthrough to a virtual machine "
        "(`type` vfio); counted with the GPU at its PCI address.",
    )
    OTHER = strawberry.enum_value(
        "other",
        description="A `type` the inspector does not know (or none): counted as a whole GPU.",
    )


# The driver's `type` -> the kind (the enum's values are strawberry's definitions).
_KINDS: dict[str, GpuKind] = {"gpu": GpuKind.GPU, "mig": GpuKind.MIG, "vfio": GpuKind.VFIO}


def health(rec: GpuDevice) -> GpuHealth:
    return GpuHealth.HEALTHY if rec.healthy else GpuHealth.UNHEALTHY


def kind(rec: GpuDevice) -> GpuKind:
    return _KINDS.get(rec.device_type or "", GpuKind.OTHER)


@strawberry.type(
    name="DeviceTaint",
    description="A DRA device taint: published by the device's driver in its "
    "ResourceSlice, or added by a DeviceTaintRule (`rule`).",
)
class DeviceTaintType:
    key: str = strawberry.field(description="E.g. `gpu.nvidia.com/xid` (value: the Xid).")
    value: str | None = strawberry.field(description="The taint's value, if any.")
    effect: str = strawberry.field(
        description="NoSchedule, NoExecute (both keep new claims off; NoExecute also "
        "evicts pods not tolerating it) or None (informational). An unknown effect is "
        "treated as None, as the API says."
    )
    time_added: datetime | None = strawberry.field(
        description="When it was added (`timeAdded`, UTC), if set."
    )
    rule: str | None = strawberry.field(
        description="The DeviceTaintRule that added it; null when its driver did."
    )
    inherited_from: str | None = strawberry.field(
        description="On a MIG slice: the device of the GPU the taint is on (`gpu-3`), "
        "which the slice inherits because it is on that GPU; null for the slice's own. "
        "The scheduler does not apply an inherited taint: it says the GPU is sick."
    )
    blocking: bool = strawberry.field(description="Its effect keeps new claims off the GPU.")

    @classmethod
    def from_record(cls, rec: DeviceTaint) -> DeviceTaintType:
        return cls(
            key=rec.key,
            value=rec.value,
            effect=rec.effect,
            time_added=ts(rec.time_added),
            rule=rec.rule,
            inherited_from=rec.inherited_from,
            blocking=rec.blocking,
        )
