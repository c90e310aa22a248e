"""DRA: the GPUs drivers publish in ResourceSlices, the ResourceClaims that hold them and
the DeviceTaintRules an admin puts on them; their records, and the parsers from the API
server's JSON to them.

Both ``resource.k8s.io/v1`` and ``v1beta1`` are understood: v1beta1 nests a device's
attributes, capacity and taints under ``basic`` and inlines a claim request's device
class, where v1 (and v1beta2) put them on the device and the request under ``exactly``.
DeviceTaintRules are read in v1alpha3 (before 1.35 its selector also had
``deviceClassName`` and CEL ``selectors``), v1beta2 and v1: the same shape.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from openrl_inspect.adapters.kubernetes._json import (
    Json,
    as_int,
    as_list,
    as_map,
    as_str,
    meta,
    parse_quantity,
    parse_time,
)
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


# --- parsers -----------------------------------------------------------------------------


def _attribute(attributes: Json, driver: str, name: str) -> Any:
    """An attribute's value, whether its name is bare or qualified by the driver's domain."""
    raw = attributes.get(name)
    if raw is None:
        raw = attributes.get(f"{driver}/{name}")
    if not isinstance(raw, Mapping):
        return None
    for kind in ("string", "int", "version", "bool"):
        if kind in raw:
            return raw[kind]
    return None


def _opt_str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _taint(raw: Any, rule: str | None = None) -> DeviceTaint | None:
    """A DeviceTaint; ``None`` without a key. An effect is kept as written: the API says
    consumers treat an unknown one like ``None`` (informational), and so does
    ``DeviceTaint.blocking``."""
    key = as_str(raw, "key")
    if not key:
        return None
    return DeviceTaint(
        key=key,
        effect=as_str(raw, "effect") or "",
        value=as_str(raw, "value") or None,
        time_added=parse_time(raw.get("timeAdded")),
        rule=rule,
    )


def _taints(raw: Json) -> tuple[DeviceTaint, ...]:
    found = (_taint(t) for t in as_list(raw, "taints"))
    return tuple(t for t in found if t is not None)


def _device(
    raw: Json, driver: str, pool: str, generation: int, node: str | None, slice_name: str
) -> GpuDevice | None:
    name = as_str(raw, "name")
    if not name:
        return None
    # resource.k8s.io/v1beta1 nests attributes and capacity under "basic"; v1 and
    # v1beta2 put them on the device itself.
    body = as_map(raw, "basic") if "basic" in raw else raw
    attributes = as_map(body, "attributes")
    memory = as_map(as_map(body, "capacity"), "memory").get("value")
    return GpuDevice(
        driver=driver,
        pool=pool,
        pool_generation=generation,
        node_name=as_str(raw, "nodeName") or node,
        device=name,
        device_type=_opt_str(_attribute(attributes, driver, "type")),
        uuid=_opt_str(_attribute(attributes, driver, "uuid")),
        index=as_int(_attribute(attributes, driver, "index")),
        minor=as_int(_attribute(attributes, driver, "minor")),
        product_name=_opt_str(_attribute(attributes, driver, "productName")),
        architecture=_opt_str(_attribute(attributes, driver, "architecture")),
        driver_version=_opt_str(_attribute(attributes, driver, "driverVersion")),
        pci_bus_id=_opt_str(_attribute(attributes, driver, "pcieBusID")),
        memory_bytes=parse_quantity(memory),
        slice_name=slice_name,
        taints=_taints(body),
    )


def parse_slice(obj: Json, drivers: frozenset[str] | None = None) -> SliceRecord | None:
    """A ResourceSlice; ``None`` when it has no name or its driver is not in ``drivers``."""
    identity = meta(obj)
    if identity is None:
        return None
    name = identity[1]
    spec = as_map(obj, "spec")
    driver = as_str(spec, "driver") or ""
    if drivers is not None and driver not in drivers:
        return None
    pool = as_map(spec, "pool")
    pool_name = as_str(pool, "name") or ""
    generation = as_int(pool.get("generation")) or 0
    node = as_str(spec, "nodeName") or None
    devices = []
    for raw in as_list(spec, "devices"):
        device = _device(raw, driver, pool_name, generation, node, name)
        if device is not None:
            devices.append(device)
    return SliceRecord(
        name=name,
        driver=driver,
        pool=pool_name,
        pool_generation=generation,
        node_name=node,
        devices=tuple(devices),
    )


def _claim_request(raw: Json) -> ClaimRequest:
    # v1 puts the request under "exactly" (or a "firstAvailable" list); v1beta1 inlines it.
    body = as_map(raw, "exactly") if "exactly" in raw else raw
    alternatives = as_list(raw, "firstAvailable")
    if not body.get("deviceClassName") and alternatives:
        body = alternatives[0] if isinstance(alternatives[0], Mapping) else {}
    return ClaimRequest(
        name=as_str(raw, "name") or "",
        device_class=as_str(body, "deviceClassName"),
        count=as_int(body.get("count")),
        allocation_mode=as_str(body, "allocationMode"),
    )


def parse_claim(obj: Json) -> ClaimRecord | None:
    identity = meta(obj)
    if identity is None:
        return None
    namespace, name, uid, _ = identity
    spec, status = as_map(obj, "spec"), as_map(obj, "status")
    allocation = as_map(status, "allocation")
    devices = tuple(
        AllocatedDevice(
            request=as_str(item, "request") or "",
            driver=as_str(item, "driver") or "",
            pool=as_str(item, "pool") or "",
            device=as_str(item, "device") or "",
        )
        for item in as_list(as_map(allocation, "devices"), "results")
    )
    metadata = as_map(obj, "metadata")
    return ClaimRecord(
        namespace=namespace,
        name=name,
        uid=uid,
        requests=tuple(_claim_request(r) for r in as_list(as_map(spec, "devices"), "requests")),
        allocated=bool(allocation),
        devices=devices,
        reserved_for=tuple(
            ClaimConsumer(
                resource=as_str(item, "resource") or "",
                name=as_str(item, "name") or "",
                uid=as_str(item, "uid"),
            )
            for item in as_list(status, "reservedFor")
        ),
        created=parse_time(metadata.get("creationTimestamp")),
        deleting=bool(metadata.get("deletionTimestamp")),
    )


def parse_taint_rule(obj: Json) -> TaintRuleRecord | None:
    """A DeviceTaintRule; ``None`` without a name or without a taint key."""
    identity = meta(obj)
    if identity is None:
        return None
    _, name, uid, _ = identity
    spec = as_map(obj, "spec")
    taint = _taint(as_map(spec, "taint"), rule=name)
    if taint is None:
        return None
    raw_selector = spec.get("deviceSelector")
    selector = raw_selector if isinstance(raw_selector, Mapping) else {}
    cel = tuple(
        as_str(as_map(item, "cel"), "expression") or "" for item in as_list(selector, "selectors")
    )
    return TaintRuleRecord(
        name=name,
        uid=uid,
        taint=taint,
        selects=isinstance(raw_selector, Mapping),
        driver=as_str(selector, "driver"),
        pool=as_str(selector, "pool"),
        device=as_str(selector, "device"),
        device_class=as_str(selector, "deviceClassName"),
        cel=cel,
        created=parse_time(as_map(obj, "metadata").get("creationTimestamp")),
    )
