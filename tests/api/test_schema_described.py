"""Every type, field, argument and enum value of the schema says what it is: agents read
the descriptions (through introspection) to know a value's meaning, unit, bounds and
source. The test names each one without a description, so a new field cannot land bare."""

from __future__ import annotations

from typing import Any

from graphql import get_introspection_query
from openrl_inspect.core.settings import Switches
from openrl_inspect.execution.schema import build_schema

# The scalars GraphQL itself defines, described by the spec rather than by this schema.
BUILT_IN_SCALARS = frozenset({"String", "Int", "Float", "Boolean", "ID"})


def undescribed(types: list[dict[str, Any]]) -> list[str]:
    """``kind name`` of everything in an introspection answer's types with no description."""
    missing: list[str] = []

    def check(kind: str, name: str, item: dict[str, Any]) -> None:
        text = (item.get("description") or "").strip()
        if not text:
            missing.append(f"{kind} {name}")
        elif text[0].islower():  # a sentence, as graphql-schema-linter asks
            missing.append(f"{kind} {name} (not capitalized)")

    for t in types:
        name = t["name"]
        if name.startswith("__") or name in BUILT_IN_SCALARS:
            continue
        check("type", name, t)
        for field in t.get("fields") or []:
            check("field", f"{name}.{field['name']}", field)
            for arg in field["args"]:
                check("argument", f"{name}.{field['name']}({arg['name']})", arg)
        for field in t.get("inputFields") or []:
            check("input field", f"{name}.{field['name']}", field)
        for value in t.get("enumValues") or []:
            check("enum value", f"{name}.{value['name']}", value)
    return missing


def introspected_types() -> list[dict[str, Any]]:
    schema = build_schema(Switches(introspection=True))
    result = schema.execute_sync(get_introspection_query(descriptions=True))
    assert result.errors is None, result.errors
    assert result.data is not None
    types: list[dict[str, Any]] = result.data["__schema"]["types"]
    return types


def test_every_type_field_argument_and_enum_value_is_described() -> None:
    missing = undescribed(introspected_types())
    assert not missing, f"{len(missing)} without a description:\n" + "\n".join(missing)


def test_the_check_names_what_lacks_a_description() -> None:
    bare: list[dict[str, Any]] = [
        {
            "name": "Thing",
            "description": "A thing.",
            "fields": [
                {"name": "size", "description": " ", "args": [{"name": "unit"}]},
                {"name": "state", "description": "on or off.", "args": []},
            ],
            "enumValues": None,
        },
        {"name": "Kind", "description": None, "enumValues": [{"name": "A"}]},
        {"name": "__Type", "description": None},
        {"name": "String", "description": None},
    ]
    assert undescribed(bare) == [
        "field Thing.size",
        "argument Thing.size(unit)",
        "field Thing.state (not capitalized)",
        "type Kind",
        "enum value Kind.A",
    ]
