"""Each GraphQL enum is its domain enum: same members, same values, nothing added."""

from __future__ import annotations

import pytest
from graphql import GraphQLEnumType
from openrl_inspect.core import domain
from openrl_inspect.resolvers.cluster.wait_reasons import KINDS
from support.types import api_types

PAIRS = {
    "ModelState": domain.ModelState,
    "SessionState": domain.SessionState,
    "OpHealth": domain.OpHealth,
    "Verdict": domain.Verdict,
    "WaitReasonKind": domain.WaitKind,
    "GpuHealth": domain.GpuHealth,
}


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_graphql_enum_is_the_domain_enum(name: str) -> None:
    gql = api_types().type_map[name]
    assert isinstance(gql, GraphQLEnumType)
    assert sorted(gql.values) == sorted(m.name for m in PAIRS[name])


def test_every_wait_kind_has_a_stage_and_source() -> None:
    # A kind added to the vocabulary but not ranked would fail at run time, masked.
    assert set(KINDS) == set(domain.WaitKind)


def test_derived_state_sets_hold_model_states() -> None:
    for group in (domain.TERMINAL_STATES, domain.WAITING_STATES, domain.HOLDING_STATES):
        assert group <= set(domain.ModelState)
    assert not domain.TERMINAL_STATES & domain.HOLDING_STATES
