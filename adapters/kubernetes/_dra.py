"""DRA: the GPUs drivers publish in ResourceSlices, the ResourceClaims that hold them and
the DeviceTaintRules an admin puts on them; their records, and the parsers from the API
server's JSON to them.

``resource.k8s.io/v1``, ``v1beta2`` and ``v1beta1`` are understood: v1beta1 nests a
device's attributes, capacity and taints under ``basic`` and inlines a claim request's
device class, where v1 and v1beta2 (the same shape) put them on the device and the
request under ``exactly``. DeviceTaintRules are read in v1alpha3 (before 1.35 its
selector also had ``deviceClassName`` and CEL ``selectors``), v1beta2 and v1: the same
shape.

NVIDIA's driver publishes whole GPUs (``type`` ``gpu``) and MIG slices (``type`` ``mig``,
with their GPU's ``parentUUID`` and their ``profile``, named ``gpu-<minor>-mig-...``);
with static MIG a partitioned GPU is published only as its slices. Attributes its
releases dropped or renamed are read under each name: ``index`` and ``minor`` (gone
since 25.8: a GPU's minor is then read from its name ``gpu-<minor>``), ``pcieBusID``
(``resource.kubernetes.io/pciBusID`` since 25.12).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from openrl_inspect.adapters.kubernetes._devices import (
    AllocatedDevice,
    ClaimConsumer,
    ClaimRecord,
    ClaimRequest,
    DeviceTaint,
    GpuDevice,
    SliceRecord,
    TaintRuleRecord,
)
from openrl_inspect.adapters.kubernetes._json import (
    Json,
    as_int,
    as_list,
    as_map,
    as_str,
    meta,
    parse_quantity,
    parse_time,
    read_version,
)
from openrl_inspect.adapters.kubernetes._resources import DRA_VERSIONS

#: The Kubernetes-standard PCI address attribute (NVIDIA's driver from 25.12).
PCI_BUS_ID = "resource.kubernetes.io/pciBusID"
# A whole GPU is named gpu-<minor> by NVIDIA's driver.
_GPU_NAME = re.compile(r"gpu-(\d+)")


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


def _minor(attributes: Json, driver: str, name: str, device_type: str | None) -> int | None:
    """A whole GPU's minor number: its ``minor`` attribute (until the driver's 25.8), else
    its name ``gpu-<minor>``, which every release keeps."""
    minor = as_int(_attribute(attributes, driver, "minor"))
    if minor is None and device_type in (None, "gpu") and (found := _GPU_NAME.fullmatch(name)):
        return int(found.group(1))
    return minor


def _device(
    raw: Json,
    version: str,
    place: tuple[str, str, int, str | None, str],
) -> GpuDevice | None:
    """One device of a slice; ``place`` is (driver, pool, generation, node, slice name)."""
    driver, pool, generation, node, slice_name = place
    name = as_str(raw, "name")
    if not name:
        return None
    # resource.k8s.io/v1beta1 nests attributes and capacity under "basic"; v1 and
    # v1beta2 put them on the device itself.
    body = as_map(raw, "basic") if version == "v1beta1" else raw
    attributes = as_map(body, "attributes")
    memory = as_map(as_map(body, "capacity"), "memory").get("value")
    device_type = _opt_str(_attribute(attributes, driver, "type"))
    bus = _attribute(attributes, driver, "pcieBusID") or _attribute(attributes, "", PCI_BUS_ID)
    return GpuDevice(
        driver=driver,
        pool=pool,
        pool_generation=generation,
        node_name=as_str(body, "nodeName") or node,
        device=name,
        device_type=device_type,
        uuid=_opt_str(_attribute(attributes, driver, "uuid")),
        index=as_int(_attribute(attributes, driver, "index")),
        minor=_minor(attributes, driver, name, device_type),
        product_name=_opt_str(_attribute(attributes, driver, "productName")),
        architecture=_opt_str(_attribute(attributes, driver, "architecture")),
        driver_version=_opt_str(_attribute(attributes, driver, "driverVersion")),
        pci_bus_id=_opt_str(bus),
        memory_bytes=parse_quantity(memory),
        slice_name=slice_name,
        taints=_taints(body),
        parent_uuid=_opt_str(_attribute(attributes, driver, "parentUUID")),
        profile=_opt_str(_attribute(attributes, driver, "profile")),
    )


def _slice_version(obj: Json, version: str | None) -> str:
    """The version to read a slice as; a v1beta1 object written by hand (the twins')
    without its ``apiVersion`` still shows itself by its ``basic`` devices."""
    if version is None and "apiVersion" not in obj:
        devices = as_list(as_map(obj, "spec"), "devices")
        if any(isinstance(d, Mapping) and "basic" in d for d in devices):
            return "v1beta1"
    return read_version(obj, version, DRA_VERSIONS)


def parse_slice(
    obj: Json, version: str | None = None, drivers: frozenset[str] | None = None
) -> SliceRecord | None:
    """A ResourceSlice read at ``version`` (default: its own ``apiVersion``'s); ``None``
    when it has no name or its driver is not in ``drivers``."""
    identity = meta(obj)
    if identity is None:
        return None
    name = identity[1]
    version = _slice_version(obj, version)
    spec = as_map(obj, "spec")
    driver = as_str(spec, "driver") or ""
    if drivers is not None and driver not in drivers:
        return None
    pool = as_map(spec, "pool")
    pool_name = as_str(pool, "name") or ""
    generation = as_int(pool.get("generation")) or 0
    node = as_str(spec, "nodeName") or None
    devices = []
    place = (driver, pool_name, generation, node, name)
    for raw in as_list(spec, "devices"):
        device = _device(raw, version, place)
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


def _claim_request(raw: Json, version: str) -> ClaimRequest:
    # v1 puts the request under "exactly" (or a "firstAvailable" list); v1beta1 inlines it.
    body = raw if version == "v1beta1" else as_map(raw, "exactly")
    alternatives = as_list(raw, "firstAvailable")
    if not body.get("deviceClassName") and alternatives:
        body = alternatives[0] if isinstance(alternatives[0], Mapping) else {}
    return ClaimRequest(
        name=as_str(raw, "name") or "",
        device_class=as_str(body, "deviceClassName"),
        count=as_int(body.get("count")),
        allocation_mode=as_str(body, "allocationMode"),
    )


def parse_claim(obj: Json, version: str | None = None) -> ClaimRecord | None:
    """A ResourceClaim read at ``version`` (default: its own ``apiVersion``'s)."""
    identity = meta(obj)
    if identity is None:
        return None
    requests = as_list(as_map(as_map(obj, "spec"), "devices"), "requests")
    if version is None and "apiVersion" not in obj:  # written by hand: by its shape
        inline = any(isinstance(r, Mapping) and "deviceClassName" in r for r in requests)
        version = "v1beta1" if inline else None
    version = read_version(obj, version, DRA_VERSIONS)
    namespace, name, uid, _ = identity
    status = as_map(obj, "status")
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
        requests=tuple(_claim_request(r, version) for r in requests),
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


def parse_taint_rule(obj: Json, version: str | None = None) -> TaintRuleRecord | None:
    """A DeviceTaintRule (v1alpha3, v1beta2 and v1 share one shape, so ``version`` changes
    nothing); ``None`` without a name or without a taint key."""
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
