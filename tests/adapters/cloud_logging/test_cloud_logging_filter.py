"""Filters cannot be widened by their input: every value is one literal that decodes
back to itself, and the filter's structure never depends on the values."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import pytest
from hypothesis import example, given, strategies
from openrl_inspect.adapters.logs import MAX_FILTER_CHARS
from openrl_inspect.adapters.logs._filter import (
    MAX_VALUE_CHARS,
    Token,
    build_filter,
    label_equals,
    quote,
    resource_type_equals,
    severity_at_least,
    text_matches,
    time_window,
    tokenize,
)
from openrl_inspect.adapters.logs._filter_eval import compile_filter
from openrl_inspect.adapters.logs.memory import wire_entry
from openrl_inspect.core.errors import FilterSyntaxError, InvalidInput

START = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
END = START + timedelta(hours=1)

HOSTILE = [
    '" OR severity>=DEBUG OR "',
    '"',
    '""',
    "\\",
    "\\\\",
    '\\"',
    '\\" OR \\"',
    "OR",
    "AND NOT",
    ") OR (",
    'x") OR ("',
    "line\nbreak\r\ttab",
    "timestamp>=0",
    'labels."openrl.ai/model-id"="other"',
    "ümlaut ✓ 🚀 \u202e",
    "*",
    ":",
]

# Any text a caller could send; NUL is refused outright (see below).
values = strategies.one_of(
    strategies.sampled_from(HOSTILE),
    strategies.text(
        strategies.characters(exclude_characters="\x00", exclude_categories=["Cs"]), max_size=40
    ),
)
non_empty = values.filter(bool)

F = TypeVar("F", bound=Callable[..., None])


def each_hostile(**extra: Any) -> Callable[[F], F]:
    """Every HOSTILE string as an explicit example (as ``value``, or each argument)."""

    def apply(test: F) -> F:
        for hostile in HOSTILE:
            args = {name: make(hostile) for name, make in extra.items()} or {"value": hostile}
            test = example(**args)(test)
        return test

    return apply


def literal_values(tokens: list[Token]) -> list[str]:
    return [t.value for t in tokens if t.kind == "STRING"]


def shape(tokens: list[Token]) -> list[tuple[str, str]]:
    """The structure: every token, with each string literal's content blanked."""
    return [(t.kind, "" if t.kind == "STRING" else t.value) for t in tokens]


def full_filter(model: str, pods: list[str], pod: str, role: str, text: str) -> str:
    return build_filter(
        start=START,
        end=END,
        resource_type="k8s_container",
        project="fake-project",
        log_id="stdout",
        namespace="openrl",
        model_id=model,
        model_pods=pods,
        pod=pod,
        role=role,
        severity_floor="WARNING",
        text=text,
    )


@given(value=values)
@example(value="")
@each_hostile()
def test_a_quoted_value_is_one_literal_that_decodes_to_itself(value: str) -> None:
    tokens = tokenize(quote(value))
    assert [(t.kind, t.value) for t in tokens] == [("STRING", value)]


@given(
    model=values,
    pods=strategies.lists(values, min_size=2, max_size=2),
    pod=values,
    role=values,
    text=non_empty,
)
@each_hostile(
    model=lambda h: h, pods=lambda h: [h, h], pod=lambda h: h, role=lambda h: h, text=lambda h: h
)
def test_no_value_changes_the_structure_of_the_filter(
    model: str, pods: list[str], pod: str, role: str, text: str
) -> None:
    marks = ["<model>", "<pod0>", "<pod1>", "<pod>", "<role>", "<text>"]
    reference = tokenize(full_filter(marks[0], marks[1:3], marks[3], marks[4], marks[5]))
    tokens = tokenize(full_filter(model, pods, pod, role, text))
    assert shape(tokens) == shape(reference)
    given_values = dict(zip(marks, [model, *pods, pod, role, text], strict=True))
    for mine, theirs in zip(literal_values(tokens), literal_values(reference), strict=True):
        # Each user value is exactly the literal where its marker was; all the
        # other literals (label keys, resource type, timestamps) are unchanged.
        assert mine == given_values.get(theirs, theirs)
    assert literal_values(reference).count("<text>") == 2  # textPayload and jsonPayload.message


@given(value=values)
@each_hostile()
def test_a_hostile_model_id_matches_only_its_own_entries(value: str) -> None:
    matches = compile_filter(build_filter(start=START, end=END, model_id=value))
    at = START + timedelta(minutes=1)
    assert matches(wire_entry(timestamp=at, message="mine", model_id=value))
    for other in ("m-alpha", value + "x", "x" + value, None):
        assert not matches(wire_entry(timestamp=at, message="not mine", model_id=other))
    # Whatever the value, the window still holds.
    assert not matches(wire_entry(timestamp=END + timedelta(seconds=1), message="", model_id=value))


@given(value=non_empty, before=strategies.text(max_size=5), after=strategies.text(max_size=5))
@each_hostile(value=lambda h: h, before=lambda h: "", after=lambda h: "")
def test_a_hostile_search_text_is_a_plain_substring(value: str, before: str, after: str) -> None:
    matches = compile_filter(build_filter(start=START, end=END, text=value))
    at = START + timedelta(minutes=1)
    said = before + value + after
    assert matches(wire_entry(timestamp=at, message=said))
    assert matches(
        wire_entry(timestamp=at, message=said.upper()) | {"textPayload": said.upper()}
    ) == (value.casefold() in said.upper().casefold())
    assert matches(wire_entry(timestamp=at, payload={"message": said, "step": 1}))
    unrelated = "zq"
    assert matches(wire_entry(timestamp=at, message=unrelated)) == (
        value.casefold() in unrelated.casefold()
    )


def test_the_severity_floor_and_window_are_applied() -> None:
    matches = compile_filter(build_filter(start=START, end=END, severity_floor="warning"))
    at = START + timedelta(minutes=1)
    assert matches(wire_entry(timestamp=at, severity="ERROR"))
    assert matches(wire_entry(timestamp=at, severity="WARNING"))
    assert not matches(wire_entry(timestamp=at, severity="INFO"))
    assert not matches(wire_entry(timestamp=START - timedelta(microseconds=1), severity="ERROR"))
    assert matches(wire_entry(timestamp=END, severity="ERROR"))


def test_the_filter_reads_like_the_documentation() -> None:
    assert label_equals("openrl.ai/model-id", "m1") == 'labels."openrl.ai/model-id"="m1"'
    assert resource_type_equals("k8s_container") == 'resource.type="k8s_container"'
    assert severity_at_least("error") == "severity>=ERROR"
    assert time_window(START, END) == (
        'timestamp>="2026-03-01T12:00:00Z" AND timestamp<="2026-03-01T13:00:00Z"'
    )
    assert (
        text_matches('say "hi"')
        == '(textPayload:"say \\"hi\\"" OR jsonPayload.message:"say \\"hi\\"")'
    )
    assert quote('a\\"b') == '"a\\\\\\"b"'


def test_or_binds_tighter_than_and_as_in_the_query_language() -> None:
    # "a OR b AND c" is "(a OR b) AND c".
    matches = compile_filter('severity=ERROR OR severity=INFO AND textPayload:"x"')
    at = START
    assert not matches(wire_entry(timestamp=at, severity="ERROR", message="no"))
    assert matches(wire_entry(timestamp=at, severity="ERROR", message="x"))
    assert matches(wire_entry(timestamp=at, severity="INFO", message="x"))


@pytest.mark.parametrize(
    "call",
    [
        lambda: label_equals('k" OR "', "v"),
        lambda: label_equals("", "v"),
        lambda: label_equals("a b", "v"),
        lambda: resource_type_equals('k8s_container" OR "'),
        lambda: resource_type_equals("K8S"),
        lambda: severity_at_least("DEBUG OR"),
        lambda: severity_at_least("LOUD"),
        lambda: quote("a\x00b"),
        lambda: quote("\ud800"),
        lambda: quote("x" * (MAX_VALUE_CHARS + 1)),
        lambda: text_matches(""),
        lambda: time_window(START.replace(tzinfo=None), END),
        lambda: time_window(END, START),
        lambda: build_filter(start=START, end=END, log_id="std out", project="fake-project"),
        lambda: build_filter(start=START, end=END, log_id="stdout", project='p" OR "'),
        lambda: build_filter(start=START, end=END, model_pods=["p"]),
    ],
)
def test_bad_identifiers_and_values_are_refused(call: Any) -> None:
    with pytest.raises(InvalidInput):
        call()


@given(
    key=strategies.text(max_size=30).filter(lambda k: not k or any(c in k for c in '" \\\n()=:'))
)
def test_a_label_key_with_any_special_character_is_refused(key: str) -> None:
    with pytest.raises(InvalidInput):
        label_equals(key, "v")


def test_a_filter_over_the_documented_length_is_refused() -> None:
    pods = ["p" * 1000] * 21
    with pytest.raises(InvalidInput):
        build_filter(start=START, end=END, model_id="m", model_pods=pods)
    assert (
        len(build_filter(start=START, end=END, model_id="m", model_pods=pods[:5]))
        < MAX_FILTER_CHARS
    )


@pytest.mark.parametrize(
    "text", ['"open', 'x="a\\n"', "x=1 ; y=2", 'x="\\', "severity>=ERROR OR", "x=(", "NOT"]
)
def test_text_outside_the_subset_is_a_syntax_error(text: str) -> None:
    with pytest.raises(FilterSyntaxError):
        compile_filter(text)
