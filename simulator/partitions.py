"""GPUs cut into MIG slices, as NVIDIA's DRA driver (``gpu.nvidia.com``, 25.12 and
later, static MIG) publishes them, and the claims that hold slices.

With static MIG a partitioned GPU is published only as its slices: ``type`` ``mig``, the
GPU's UUID as ``parentUUID``, the ``profile``, the GPU's product and driver attributes,
``resource.kubernetes.io/pciBusID``; capacity in multiprocessors, engines, memory and
one ``memorySlice<i>`` per memory slice it spans. Slices are named
``gpu-<minor>-mig-<profile without dots>-<GI profile id>-<placement start>``.

Each H100 here is cut into three ``2g.20gb`` and one ``1g.10gb`` (seven compute slices),
with the GI profile ids, memory and multiprocessors ``nvidia-smi mig -lgip`` lists for an
H100 80GB.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from openrl_inspect.adapters.kubernetes import NVIDIA_GPU_DRIVER
from openrl_inspect.simulator.cluster import Gpu, Node

Json = dict[str, Any]
PCI_BUS_ID = "resource.kubernetes.io/pciBusID"


@dataclass(frozen=True)
class Profile:
    """One slice's place on its GPU: the MIG profile and its placement."""

    name: str
    gi_profile: int
    start: int
    size: int
    memory: str
    multiprocessors: int
    engines: int


LAYOUT = (
    Profile("2g.20gb", 14, 0, 2, "20096Mi", 32, 2),
    Profile("2g.20gb", 14, 2, 2, "20096Mi", 32, 2),
    Profile("2g.20gb", 14, 4, 2, "20096Mi", 32, 2),
    Profile("1g.10gb", 19, 6, 1, "9984Mi", 16, 1),
)


def slice_device(gpu: Gpu, profile: Profile) -> str:
    """The slice's device name, as the driver names it."""
    compact = profile.name.replace(".", "")
    return f"gpu-{gpu.index}-mig-{compact}-{profile.gi_profile}-{profile.start}"


def slice_uuid(gpu: Gpu, profile: Profile) -> str:
    return f"MIG-{uuid.uuid5(uuid.NAMESPACE_OID, f'{gpu.uuid}/{profile.start}')}"


def _device(gpu: Gpu, profile: Profile) -> Json:
    capacity: Json = {
        "multiprocessors": {"value": str(profile.multiprocessors)},
        "copyEngines": {"value": str(profile.engines)},
        "decoders": {"value": str(profile.engines)},
        "encoders": {"value": "0"},
        "jpegEngines": {"value": str(profile.engines)},
        "ofaEngines": {"value": "0"},
        "memory": {"value": profile.memory},
    }
    for i in range(profile.start, profile.start + profile.size):
        capacity[f"memorySlice{i}"] = {"value": "1"}
    return {
        "name": slice_device(gpu, profile),
        "attributes": {
            "type": {"string": "mig"},
            "uuid": {"string": slice_uuid(gpu, profile)},
            "parentUUID": {"string": gpu.uuid},
            "profile": {"string": profile.name},
            "productName": {"string": gpu.product},
            "brand": {"string": "Nvidia"},
            "architecture": {"string": "Hopper"},
            "cudaComputeCapability": {"version": "9.0.0"},
            "driverVersion": {"version": "570.133.20"},
            "cudaDriverVersion": {"version": "12.8.0"},
            PCI_BUS_ID: {"string": f"0000:{0x18 + 0x10 * gpu.index:02x}:00.0"},
            "resource.kubernetes.io/pcieRoot": {"string": "pci0000:00"},
        },
        "capacity": capacity,
    }


def resource_slice(node: Node) -> Json:
    """The ResourceSlice the driver publishes for a partitioned node: its slices only."""
    name = f"{node.name}-{NVIDIA_GPU_DRIVER}"
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {
            "name": name,
            "uid": f"uid-slice-{name}",
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Node", "name": node.name,
                 "uid": f"uid-{node.name}", "controller": True}
            ],
        },
        "spec": {
            "driver": NVIDIA_GPU_DRIVER,
            "nodeName": node.name,
            "pool": {"name": node.name, "generation": 1, "resourceSliceCount": 1},
            "devices": [_device(gpu, profile) for gpu in node.gpus for profile in LAYOUT],
        },
    }  # fmt: skip


def slice_claim(
    node: Node, namespace: str, pod: str, picks: list[tuple[Gpu, Profile]], created: str
) -> Json:
    """A claim for MIG slices of one profile (DeviceClass ``mig.nvidia.com``), allocated
    to ``picks`` and reserved for ``pod``."""
    profile = picks[0][1].name
    name = f"{pod}-mig-{profile.replace('.', '')}"
    selector = f"device.attributes['{NVIDIA_GPU_DRIVER}'].profile == '{profile}'"
    owner = {"apiVersion": "v1", "kind": "Pod", "name": pod, "uid": f"uid-pod-{pod}"}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-claim-{name}",
            "creationTimestamp": created,
            "annotations": {"resource.kubernetes.io/pod-claim-name": "mig"},
            "ownerReferences": [owner | {"controller": True, "blockOwnerDeletion": True}],
        },
        "spec": {"devices": {"requests": [{"name": "mig", "exactly": {
            "deviceClassName": "mig.nvidia.com",
            "selectors": [{"cel": {"expression": selector}}],
            "allocationMode": "ExactCount",
            "count": len(picks),
        }}]}},
        "status": {
            "allocation": {
                "devices": {"results": [
                    {"request": "mig", "driver": NVIDIA_GPU_DRIVER, "pool": node.name,
                     "device": slice_device(gpu, p)} for gpu, p in picks
                ]},
                "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                    {"key": "metadata.name", "operator": "In", "values": [node.name]}
                ]}]},
                "allocationTimestamp": created,
            },
            "reservedFor": [{"resource": "pods", "name": pod, "uid": f"uid-pod-{pod}"}],
        },
    }  # fmt: skip
