"""DRA records: the GPUs drivers publish in ResourceSlices, their taints, and claims."""

from __future__ import annotations

from dataclasses import dataclass

from openrl_inspect.adapters.kubernetes._records import DeviceKey, ObjectKey

#: Taint effects that keep new claims off a device (``None`` is informational only).
BLOCKING_TAINT_EFFECTS = frozenset({"NoSchedule", "NoExecute"})


@dataclass(frozen=True, slots=True)
class DeviceTaint:
    """A DRA device taint: in the ResourceSlice (``spec.devices[].taints``) or applied by
    a DeviceTaintRule (``rule`` names it). ``effect`` is NoSchedule, NoExecute or None."""

    key: str
    effect: str
    value: str | None = None
    time_added: float | None = None
    rule: str | None = None

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

    @property
    def key(self) -> DeviceKey:
        return DeviceKey(self.driver, self.pool, self.device)

    @property
    def healthy(self) -> bool:
        """No taint that keeps claims off it: a tainted GPU is never counted free."""
        return not any(t.blocking for t in self.taints)


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

    def names(self, device: GpuDevice) -> bool:
        """Whether the driver/pool/device criteria select ``device`` (all must hold)."""
        return self.selects and all(
            want is None or want == have
            for want, have in (
                (self.driver, device.driver),
                (self.pool, device.pool),
                (self.device, device.device),
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
