"""Who is asking: a principal, its role, and the owners whose work it may see.

A viewer sees the sessions of its owners and everything under them; an operator sees
everything, the cluster-wide fields included. Authentication (``auth``) turns a request
into a principal; scoping below the schema (loaders, resolvers) asks ``sees_owner``.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

#: Where the authentication middleware leaves the request's principal (ASGI scope).
SCOPE_KEY = "openrl_inspect.core.principal"


class Role(StrEnum):
    VIEWER = "viewer"
    OPERATOR = "operator"


@dataclass(frozen=True, slots=True)
class Principal:
    name: str
    role: Role
    owners: frozenset[str] = frozenset()

    @property
    def operator(self) -> bool:
        return self.role == Role.OPERATOR

    def sees_owner(self, owner: str | None) -> bool:
        return self.operator or (owner is not None and owner in self.owners)


#: Authentication off (loopback, the demo, tests): everything is visible.
ANONYMOUS_OPERATOR = Principal("anonymous", Role.OPERATOR)
#: No principal where one was required: nothing is visible (fail closed).
NOBODY = Principal("nobody", Role.VIEWER)
