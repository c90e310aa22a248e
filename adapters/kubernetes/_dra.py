"""Parsers for DRA objects: ResourceSlices (the GPUs) and ResourceClaims (who holds them).

Both ``resource.k8s.io/v1`` and ``v1beta1`` are understood: v1beta1 nests a device's
attributes and capacity under ``basic`` and inlines a claim request's device class,
where v1 (and v1beta2) put attributes on the device and the request under ``exactly``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from openrl_inspect.adapters.kubernetes._dra_records import (
    AllocatedDevice,
    ClaimConsumer,
    ClaimRecord,
    ClaimRequest,
    GpuDevice,
    SliceRecord,
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
