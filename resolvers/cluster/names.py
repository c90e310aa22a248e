"""Kubernetes names and ids as the cluster resolvers accept them.

A name from a client, or from a record in Redis that names a Kubernetes object, is
checked before it reaches a loader: ``valid_*`` says whether it may name an object (a
record that does not is skipped), ``check_*`` refuses a client's argument that does not
with a coded ``InvalidInput``.
"""

from __future__ import annotations

import re

from openrl_inspect.core.errors import InvalidInput
from openrl_inspect.state.keys import valid_id

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_DNS_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")
_DEVICE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$")


def valid_dns_label(value: str) -> bool:
    """A namespace (RFC 1123 label)."""
    return bool(_DNS_LABEL.match(value))


def valid_dns_name(value: str) -> bool:
    """A pod or node name (RFC 1123 subdomain)."""
    return bool(_DNS_NAME.match(value))


def check_namespace(value: str) -> str:
    if not _DNS_LABEL.match(value):
        raise InvalidInput(f"namespace {value[:80]!r} is not a valid namespace")
    return value


def check_name(kind: str, value: str) -> str:
    if not _DNS_NAME.match(value):
        raise InvalidInput(f"{kind} name {value[:80]!r} is not a valid name")
    return value


def check_model_id(value: str) -> str:
    if not valid_id(value):
        raise InvalidInput(f"model id {value[:80]!r} is not a valid id")
    return value


def check_device_id(value: str) -> str:
    if not _DEVICE_ID.match(value):
        raise InvalidInput(f"GPU id {value[:80]!r} is not a valid device id")
    return value
