"""Parsers for DRA objects: ResourceSlices (the GPUs), ResourceClaims (who holds them) and
DeviceTaintRules (taints an admin puts on devices).

Both ``resource.k8s.io/v1`` and ``v1beta1`` are understood: v1beta1 nests a device's
attributes, capacity and taints under ``basic`` and inlines a claim request's device
class, where v1 (and v1beta2) put them on the device and the request under ``exactly``.
DeviceTaintRules are read in v1alpha3 (before 1.35 its selector also had
``deviceClassName`` and CEL ``selectors``), v1beta2 and v1: the same shape.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from openrl_inspect.adapters.kubernetes._dra_records import (
    AllocatedDevice,
    ClaimConsumer,
    ClaimRecord,
    ClaimRequest,
    DeviceTaint,
    GpuDevice,
    SliceRecord,
    TaintRuleRecord,
)
from openrl_inspect.adapters.kubernetes._parse import (
    Json,
    _int,
    _list,
    _map,
    _meta,
    _str,
    parse_quantity,
    parse_time,
)

# --- DRA: resource slices and claims -----------------------------------------------------


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
    key = _str(raw, "key")
    if not key:
        return None
    return DeviceTaint(
        key=key,
        effect=_str(raw, "effect") or "",
        value=_str(raw, "value") or None,
        time_added=parse_time(raw.get("timeAdded")),
        rule=rule,
    )


def _taints(raw: Json) -> tuple[DeviceTaint, ...]:
    found = (_taint(t) for t in _list(raw, "taints"))
    return tuple(t for t in found if t is not None)


def _device(
    raw: Json, driver: str, pool: str, generation: int, node: str | None, slice_name: str
) -> GpuDevice | None:
    name = _str(raw, "name")
    if not name:
        return None
    # resource.k8s.io/v1beta1 nests attributes and capacity under "basic"; v1 and
    # v1beta2 put them on the device itself.
    body = _map(raw, "basic") if "basic" in raw else raw
    attributes = _map(body, "attributes")
    memory = _map(_map(body, "capacity"), "memory").get("value")
    return GpuDevice(
        driver=driver,
        pool=pool,
        pool_generation=generation,
        node_name=_str(raw, "nodeName") or node,
        device=name,
        device_type=_opt_str(_attribute(attributes, driver, "type")),
        uuid=_opt_str(_attribute(attributes, driver, "uuid")),
        index=_int(_attribute(attributes, driver, "index")),
        minor=_int(_attribute(attributes, driver, "minor")),
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
    meta = _meta(obj)
    if meta is None:
        return None
    name = meta[1]
    spec = _map(obj, "spec")
    driver = _str(spec, "driver") or ""
    if drivers is not None and driver not in drivers:
        return None
    pool = _map(spec, "pool")
    pool_name = _str(pool, "name") or ""
    generation = _int(pool.get("generation")) or 0
    node = _str(spec, "nodeName") or None
    devices = []
    for raw in _list(spec, "devices"):
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
    body = _map(raw, "exactly") if "exactly" in raw else raw
    alternatives = _list(raw, "firstAvailable")
    if not body.get("deviceClassName") and alternatives:
        body = alternatives[0] if isinstance(alternatives[0], Mapping) else {}
    return ClaimRequest(
        name=_str(raw, "name") or "",
        device_class=_str(body, "deviceClassName"),
        count=_int(body.get("count")),
        allocation_mode=_str(body, "allocationMode"),
    )


def parse_claim(obj: Json) -> ClaimRecord | None:
    meta = _meta(obj)
    if meta is None:
        return None
    namespace, name, uid, _ = meta
    spec, status = _map(obj, "spec"), _map(obj, "status")
    allocation = _map(status, "allocation")
    devices = tuple(
        AllocatedDevice(
            request=_str(item, "request") or "",
            driver=_str(item, "driver") or "",
            pool=_str(item, "pool") or "",
            device=_str(item, "device") or "",
        )
        for item in _list(_map(allocation, "devices"), "results")
    )
    metadata = _map(obj, "metadata")
    return ClaimRecord(
        namespace=namespace,
        name=name,
        uid=uid,
        requests=tuple(_claim_request(r) for r in _list(_map(spec, "devices"), "requests")),
        allocated=bool(allocation),
        devices=devices,
        reserved_for=tuple(
            ClaimConsumer(
                resource=_str(item, "resource") or "",
                name=_str(item, "name") or "",
                uid=_str(item, "uid"),
            )
            for item in _list(status, "reservedFor")
        ),
        created=parse_time(metadata.get("creationTimestamp")),
        deleting=bool(metadata.get("deletionTimestamp")),
    )


def parse_taint_rule(obj: Json) -> TaintRuleRecord | None:
    """A DeviceTaintRule; ``None`` without a name or without a taint key."""
    meta = _meta(obj)
    if meta is None:
        return None
    _, name, uid, _ = meta
    spec = _map(obj, "spec")
    taint = _taint(_map(spec, "taint"), rule=name)
    if taint is None:
        return None
    raw_selector = spec.get("deviceSelector")
    selector = raw_selector if isinstance(raw_selector, Mapping) else {}
    cel = tuple(
        _str(_map(item, "cel"), "expression") or "" for item in _list(selector, "selectors")
    )
    return TaintRuleRecord(
        name=name,
        uid=uid,
        taint=taint,
        selects=isinstance(raw_selector, Mapping),
        driver=_str(selector, "driver"),
        pool=_str(selector, "pool"),
        device=_str(selector, "device"),
        device_class=_str(selector, "deviceClassName"),
        cel=cel,
        created=parse_time(_map(obj, "metadata").get("creationTimestamp")),
    )
