"""Every GraphQL example in the README is valid against the schema it documents."""

from __future__ import annotations

import re

import pytest
from graphql import parse, validate
from support.tree import ROOT
from support.types import api_types

_BLOCK = re.compile(r"```graphql\n(.*?)```", re.S)
_INLINE = re.compile(r"`(\{ .*? \})`")


def examples() -> list[str]:
    text = (ROOT / "README.md").read_text()
    found = _BLOCK.findall(text)
    found += [q for q in _INLINE.findall(text) if q.count("{") == q.count("}")]
    return found


def test_the_readme_has_examples() -> None:
    assert len(examples()) >= 5


@pytest.mark.parametrize("query", examples())
def test_each_example_is_valid(query: str) -> None:
    schema = api_types()
    errors = validate(schema, parse(query))
    assert not errors, [e.message for e in errors]
