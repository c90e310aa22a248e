"""MIG slices as NVIDIA's DRA driver (``gpu.nvidia.com``) publishes them, by release.

Static MIG (MIG devices created ahead, the usual): a partitioned GPU is published only as
its slices (``type`` ``mig``, ``parentUUID``, ``profile``), never as a whole GPU. Each H100
here is cut into three ``2g.20gb`` and one ``1g.10gb`` (seven compute slices, memory
slices 0-6), as ``nvidia-smi mig -lgip`` lists the profiles for an H100 80GB: GI profile
ids 14 and 19, memory 19.62 and 9.75 GiB, 32 and 16 multiprocessors.

Releases differ in names and attributes (``cmd/gpu-kubelet-plugin/deviceinfo.go``):

- 25.12 and later: ``gpu-<minor>-mig-<profile without dots>-<GI profile id>-<start>``;
  ``resource.kubernetes.io/pciBusID`` and ``pcieRoot``; no ``index``;
- 25.8: ``gpu-<minor>-mig-<GI profile id>-<start>-<size>``; ``pcieBusID`` (the driver's
  domain), ``addressingMode``; no ``index``;
- 25.3 (``resource.k8s.io/v1beta1``, under ``basic``): the 25.8 names; ``index`` and
  ``parentIndex``; no PCI bus id.

Dynamic MIG (feature gate ``DynamicMIG``) publishes the whole GPU too, and each slice
names it by ``parentUUID``: ``dynamic_slice`` has both.
"""

from __future__ import annotations

import uuid
from typing import Any

Obj = dict[str, Any]

DRIVER = "gpu.nvidia.com"
H100 = "NVIDIA H100 80GB HBM3"
CREATED = "2026-09-12T08:00:00Z"
# (profile, GI profile id, placement start, size, memory, multiprocessors, engines)
LAYOUT: tuple[tuple[Any, ...], ...] = (
    ("2g.20gb", 14, 0, 2, "20096Mi", 32, 2),
    ("2g.20gb", 14, 2, 2, "20096Mi", 32, 2),
    ("2g.20gb", 14, 4, 2, "20096Mi", 32, 2),
    ("1g.10gb", 19, 6, 1, "9984Mi", 16, 1),
)
SLICES_PER_GPU = len(LAYOUT)


def gpu_uuid(node: str, minor: int) -> str:
    return f"GPU-{uuid.uuid5(uuid.NAMESPACE_DNS, f'{node}/{minor}')}"


def mig_uuid(node: str, minor: int, start: int) -> str:
    return f"MIG-{uuid.uuid5(uuid.NAMESPACE_DNS, f'{node}/{minor}/mig/{start}')}"


def bus_id(minor: int) -> str:
    return f"0000:{0x18 + 0x10 * minor:02x}:00.0"


def slice_name(minor: int, layout: tuple[Any, ...], release: str = "25.12") -> str:
    profile, gi, start, size = layout[:4]
    if release == "25.12":
        return f"gpu-{minor}-mig-{profile.replace('.', '')}-{gi}-{start}"
    return f"gpu-{minor}-mig-{gi}-{start}-{size}"


def _parent_attributes() -> Obj:
    return {
        "productName": {"string": H100},
        "brand": {"string": "Nvidia"},
        "architecture": {"string": "Hopper"},
        "cudaComputeCapability": {"version": "9.0.0"},
        "driverVersion": {"version": "580.95.5"},
        "cudaDriverVersion": {"version": "13.0.0"},
    }


def mig_device(node: str, minor: int, layout: tuple[Any, ...], release: str = "25.12") -> Obj:
    """One slice of GPU ``minor`` on ``node`` (the v1 shape: no ``basic``)."""
    profile, _, start, size, memory, sms, engines = layout
    attributes: Obj = {
        "type": {"string": "mig"},
        "uuid": {"string": mig_uuid(node, minor, start)},
        "parentUUID": {"string": gpu_uuid(node, minor)},
        "profile": {"string": profile},
        **_parent_attributes(),
    }
    if release == "25.12":
        attributes["resource.kubernetes.io/pciBusID"] = {"string": bus_id(minor)}
        attributes["resource.kubernetes.io/pcieRoot"] = {"string": "pci0000:00"}
    elif release == "25.8":
        attributes["pcieBusID"] = {"string": bus_id(minor)}
        attributes["addressingMode"] = {"string": ""}
    else:  # 25.3
        attributes["index"] = {"int": LAYOUT.index(layout)}
        attributes["parentIndex"] = {"int": minor}
    capacity: Obj = {
        "multiprocessors": {"value": str(sms)},
        "copyEngines": {"value": str(engines)},
        "decoders": {"value": str(engines)},
        "encoders": {"value": "0"},
        "jpegEngines": {"value": str(engines)},
        "ofaEngines": {"value": "0"},
        "memory": {"value": memory},
    }
    for i in range(start, start + size):
        capacity[f"memorySlice{i}"] = {"value": "1"}
    return {
        "name": slice_name(minor, layout, release),
        "attributes": attributes,
        "capacity": capacity,
    }


def whole_gpu(node: str, minor: int) -> Obj:
    """A whole H100 as 25.12 publishes it."""
    return {
        "name": f"gpu-{minor}",
        "attributes": {
            "type": {"string": "gpu"},
            "uuid": {"string": gpu_uuid(node, minor)},
            **_parent_attributes(),
            "resource.kubernetes.io/pciBusID": {"string": bus_id(minor)},
            "resource.kubernetes.io/pcieRoot": {"string": "pci0000:00"},
        },
        "capacity": {"memory": {"value": "80Gi"}},
    }


def resource_slice(node: str, devices: list[Obj], *, version: str = "v1") -> Obj:
    """The pool's one ResourceSlice for ``node`` (v1beta1 nests each device's fields
    under ``basic``)."""
    if version == "v1beta1":
        devices = [{"name": d["name"], "basic": {k: v for k, v in d.items() if k != "name"}}
                   for d in devices]  # fmt: skip
    return {
        "apiVersion": f"resource.k8s.io/{version}",
        "kind": "ResourceSlice",
        "metadata": {
            "name": f"{node}-{DRIVER}-q8m4x",
            "generateName": f"{node}-{DRIVER}-",
            "creationTimestamp": CREATED,
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "name": node,
                    "uid": str(uuid.uuid5(uuid.NAMESPACE_DNS, f"node/{node}")),
                    "controller": True,
                }
            ],
        },
        "spec": {
            "driver": DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": devices,
        },
    }


def static_mig_slice(
    node: str, gpus: int = 4, *, release: str = "25.12", version: str = "v1"
) -> Obj:
    """A node's GPUs all partitioned (static MIG): slices only."""
    devices = [mig_device(node, m, layout, release) for m in range(gpus) for layout in LAYOUT]
    return resource_slice(node, devices, version=version)


def dynamic_slice(node: str, gpus: int = 2) -> Obj:
    """Dynamic MIG, simplified: each whole GPU and its slices side by side (the counter
    sets a real driver adds are left out: the inspector does not read them)."""
    devices = []
    for m in range(gpus):
        devices.append(whole_gpu(node, m))
        devices.extend(mig_device(node, m, layout) for layout in LAYOUT)
    return resource_slice(node, devices)


def mig_claim(
    name: str, namespace: str, pod: str, node: str, devices: list[str], profile: str = "2g.20gb"
) -> Obj:
    """A claim for MIG slices of one profile, allocated to ``devices`` and reserved for
    ``pod`` (v1: the request under ``exactly``, the DeviceClass ``mig.nvidia.com``)."""
    selector = f"device.attributes['{DRIVER}'].profile == '{profile}'"
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": str(uuid.uuid5(uuid.NAMESPACE_DNS, f"claim/{namespace}/{name}")),
            "creationTimestamp": CREATED,
            "annotations": {"resource.kubernetes.io/pod-claim-name": "mig"},
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "name": pod,
                    "uid": str(uuid.uuid5(uuid.NAMESPACE_DNS, f"pod/{namespace}/{pod}")),
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "devices": {
                "requests": [
                    {
                        "name": "mig",
                        "exactly": {
                            "deviceClassName": "mig.nvidia.com",
                            "selectors": [{"cel": {"expression": selector}}],
                            "allocationMode": "ExactCount",
                            "count": len(devices),
                        },
                    }
                ]
            }
        },
        "status": {
            "allocation": {
                "devices": {
                    "results": [
                        {"request": "mig", "driver": DRIVER, "pool": node, "device": d}
                        for d in devices
                    ]
                },
                "nodeSelector": {
                    "nodeSelectorTerms": [
                        {
                            "matchFields": [
                                {"key": "metadata.name", "operator": "In", "values": [node]}
                            ]
                        }
                    ]
                },
                "allocationTimestamp": "2026-09-12T09:00:00Z",
            },
            "reservedFor": [
                {
                    "resource": "pods",
                    "name": pod,
                    "uid": str(uuid.uuid5(uuid.NAMESPACE_DNS, f"pod/{namespace}/{pod}")),
                }
            ],
        },
    }
