"""A GPU's health: the DRA device taints on it (its driver's and DeviceTaintRules')."""

from __future__ import annotations

from datetime import datetime

import strawberry
from openrl_inspect.adapters.kubernetes import DeviceTaint, GpuDevice
from openrl_inspect.core import domain
from openrl_inspect.schema.common import ts

GpuHealth = domain.GpuHealth
strawberry.enum(
    GpuHealth,
    name="GpuHealth",
    description="A GPU's health as the cluster reports it: UNHEALTHY when a DRA device "
    "taint with effect NoSchedule or NoExecute keeps new claims off it.",
)


def health(rec: GpuDevice) -> GpuHealth:
    return GpuHealth.HEALTHY if rec.healthy else GpuHealth.UNHEALTHY


@strawberry.type(
    name="DeviceTaint",
    description="A DRA device taint: published by the device's driver in its "
    "ResourceSlice, or added by a DeviceTaintRule (`rule`).",
)
class DeviceTaintType:
    key: str = strawberry.field(description="E.g. `gpu.nvidia.com/xid` (value: the Xid).")
    value: str | None
    effect: str = strawberry.field(
        description="NoSchedule, NoExecute (both keep new claims off; NoExecute also "
        "evicts pods not tolerating it) or None (informational). An unknown effect is "
        "treated as None, as the API says."
    )
    time_added: datetime | None
    rule: str | None = strawberry.field(
        description="The DeviceTaintRule that added it; null when its driver did."
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
            blocking=rec.blocking,
        )
