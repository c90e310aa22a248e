"""DRA devices and claims as the inspector keeps them: the GPUs drivers publish in
ResourceSlices (whole GPUs and MIG slices), their taints, the DeviceTaintRules an admin
puts on them, and the ResourceClaims that hold them. The parsers are ``_dra``'s.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from openrl_inspect.adapters.kubernetes._records import DeviceKey, ObjectKey

#: Taint effects that keep new claims off a device (``None`` is informational only).
BLOCKING_TAINT_EFFECTS = frozenset({"NoSchedule", "NoExecute"})
#: The ``type`` attribute of a MIG slice (NVIDIA's driver; a whole GPU is ``gpu``).
MIG_TYPE = "mig"
# A MIG slice is named gpu-<parent minor>-mig-... by NVIDIA's driver.
_SLICE_NAME = re.compile(r"(gpu-\d+)-mig-.+")


@dataclass(frozen=True, slots=True)
class DeviceTaint:
    """A DRA device taint: in the ResourceSlice (``spec.devices[].taints``) or applied by
    a DeviceTaintRule (``rule`` names it). ``effect`` is NoSchedule, NoExecute or None."""

    key: str
    effect: str
    value: str | None = None
    time_added: float | None = None
    rule: str | None = None
    #: On a MIG slice: the device of the GPU it is inherited from (the slice is on it).
    inherited_from: str | None = None

    @property
    def blocking(self) -> bool:
        return self.effect in BLOCKING_TAINT_EFFECTS


@dataclass(frozen=True, slots=True)
class GpuDevice:
    """One device a DRA driver publishes in a ResourceSlice (newest pool generation)."""

    driver: str
    pool: str
    pool_generation: int
    node_name: str | None
    device: str
    device_type: str | None
    uuid: str | None
    index: int | None
    minor: int | None
    product_name: str | None
    architecture: str | None
    driver_version: str | None
    pci_bus_id: str | None
    memory_bytes: int | None
    slice_name: str
    taints: tuple[DeviceTaint, ...] = ()
    #: DeviceTaintRules whose driver/pool/device criteria select this device but which
    #: also need a CEL or DeviceClass test the inspector cannot run: they may taint it.
    rules_not_evaluated: tuple[str, ...] = ()
    #: A MIG slice's GPU (``parentUUID``) and MIG profile (``1g.10gb``).
    parent_uuid: str | None = None
    profile: str | None = None

    @property
    def key(self) -> DeviceKey:
        return DeviceKey(self.driver, self.pool, self.device)

    @property
    def healthy(self) -> bool:
        """No taint that keeps claims off it (its own, or its GPU's when it is a MIG
        slice): a tainted GPU is never counted free."""
        return not any(t.blocking for t in self.taints)

    @property
    def is_slice(self) -> bool:
        """A MIG slice of a GPU, not a whole GPU."""
        return self.device_type == MIG_TYPE

    @property
    def parent_device(self) -> str | None:
        """A MIG slice's GPU by device name (``gpu-3`` for ``gpu-3-mig-...``): how the
        driver names the whole GPU, whether or not it also publishes it."""
        match = _SLICE_NAME.fullmatch(self.device) if self.is_slice else None
        return match.group(1) if match else None

    @property
    def gpu_id(self) -> tuple[str, str]:
        """The physical GPU the device is on, within its pool: a slice's parent UUID,
        a whole GPU's UUID (the device name when either is not published)."""
        if self.is_slice:
            return self.pool, self.parent_uuid or self.parent_device or self.device
        return self.pool, self.uuid or self.device


@dataclass(frozen=True, slots=True)
class TaintRuleRecord:
    """A DeviceTaintRule (cluster-scoped): one taint for the devices its selector picks.

    ``selects`` is False when the rule has no ``spec.deviceSelector`` (the API matches no
    device then); an empty selector matches every device. ``device_class`` and ``cel``
    are the selector fields of resource.k8s.io/v1alpha3 before 1.35 (a DeviceClass name,
    CEL expressions): the inspector cannot evaluate them (see ``evaluable``).
    """

    name: str
    uid: str
    taint: DeviceTaint
    selects: bool
    driver: str | None = None
    pool: str | None = None
    device: str | None = None
    device_class: str | None = None
    cel: tuple[str, ...] = ()
    created: float | None = None

    @property
    def key(self) -> ObjectKey:
        return ObjectKey("", self.name)

    @property
    def evaluable(self) -> bool:
        """Whether matching needs only driver, pool and device name (no CEL, no class)."""
        return self.device_class is None and not self.cel

    def names(self, device: GpuDevice, name: str | None = None) -> bool:
        """Whether the driver/pool/device criteria select ``device`` (all must hold), or
        the device of that ``name`` in its pool (a MIG slice's GPU)."""
        return self.selects and all(
            want is None or want == have
            for want, have in (
                (self.driver, device.driver),
                (self.pool, device.pool),
                (self.device, device.device if name is None else name),
            )
        )


@dataclass(frozen=True, slots=True)
class SliceRecord:
    """A ResourceSlice reduced to its pool identity and the devices the inspector keeps."""

    name: str
    driver: str
    pool: str
    pool_generation: int
    node_name: str | None
    devices: tuple[GpuDevice, ...]

    @property
    def key(self) -> ObjectKey:
        return ObjectKey("", self.name)


@dataclass(frozen=True, slots=True)
class AllocatedDevice:
    request: str
    driver: str
    pool: str
    device: str

    @property
    def key(self) -> DeviceKey:
        return DeviceKey(self.driver, self.pool, self.device)


@dataclass(frozen=True, slots=True)
class ClaimConsumer:
    """An entry of ``status.reservedFor`` (``resource`` is ``pods`` in practice)."""

    resource: str
    name: str
    uid: str | None


@dataclass(frozen=True, slots=True)
class ClaimRequest:
    name: str
    device_class: str | None
    count: int | None
    allocation_mode: str | None


@dataclass(frozen=True, slots=True)
class ClaimRecord:
    namespace: str
    name: str
    uid: str
    requests: tuple[ClaimRequest, ...]
    allocated: bool
    devices: tuple[AllocatedDevice, ...]
    reserved_for: tuple[ClaimConsumer, ...]
    created: float | None
    deleting: bool

    @property
    def key(self) -> ObjectKey:
        return ObjectKey(self.namespace, self.name)

    @property
    def reserved_pods(self) -> tuple[ClaimConsumer, ...]:
        return tuple(c for c in self.reserved_for if c.resource == "pods")
