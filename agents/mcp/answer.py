"""The typed answer every tool returns: the data, its errors, and whether it was cut."""

from __future__ import annotations

import json
from typing import Annotated, Any

from mcp.types import CallToolResult, TextContent
from openrl_inspect.agents.mcp.budget import cut, tokens
from openrl_inspect.core.codes import code_of
from openrl_inspect.execution import Answer
from pydantic import BaseModel, Field


class ToolError(BaseModel):
    message: str
    code: str = Field(description="The API's error code: NOT_FOUND, BAD_INPUT, BACKEND_* ...")
    path: list[str | int] | None = Field(None, description="Where in `data` it happened.")


class ToolAnswer(BaseModel):
    """One tool's answer, within its token budget."""

    data: dict[str, Any] | None = Field(
        description="What the API answered (its GraphQL data; camelCase fields)."
    )
    errors: list[ToolError] = Field(
        default_factory=list, description="Parts not answered, each with its code."
    )
    truncated: bool = Field(
        description="True when the answer was cut to fit the budget, or more items exist: "
        "`cut` says what, `cursor` goes on."
    )
    cut: list[str] = Field(default_factory=list, description="What was left off, and where.")
    cursor: str | None = Field(
        None, description="Pass as `cursor` to the same tool for the next page; null at the end."
    )
    tokens: int = Field(description="The answer's size in tokens (about 4 characters each).")
    budget: int = Field(description="The most tokens this tool answers with.")


def errors_of(answer: Answer) -> list[ToolError]:
    out = []
    for e in answer.errors:
        ext = e.get("extensions") or {}
        out.append(
            ToolError(
                message=str(e.get("message", "")),
                code=str(ext.get("code", "INTERNAL")),
                path=e.get("path"),
            )
        )
    return out


def fitted(
    answer: Answer, budget: int, cursor: str | None = None, more: bool = False
) -> ToolAnswer:
    """``answer`` cut to ``budget`` tokens (its errors are kept whole: they are short)."""
    errors = errors_of(answer)
    shell = ToolAnswer(
        data=None, errors=errors, truncated=True, cursor=cursor, tokens=0, budget=budget
    )
    # Room for the data: the budget less the envelope, and less the notes a cut writes.
    room = budget - tokens(shell.model_dump(mode="json")) - 60
    data, notes = cut(answer.data, room) if answer.data is not None else (None, [])
    result = ToolAnswer(
        data=data,
        errors=errors,
        truncated=bool(notes) or more or cursor is not None,
        cut=notes,
        cursor=cursor,
        tokens=0,
        budget=budget,
    )
    result.tokens = tokens(result.model_dump(mode="json"))
    return result


#: What a tool returns: a ``ToolAnswer`` (its output schema), sent as is.
Result = Annotated[CallToolResult, ToolAnswer]


def failed(answer: ToolAnswer) -> bool:
    """Whether the call failed: no data; a root field nulled by an error under it (the
    model, session, node... asked for is not there, or could not be read); or an
    argument refused anywhere (a 400 or 403 in the code table: the caller must change the
    call). A part missing deeper for the server's reasons (a backend down under one
    field) leaves an answer, with its errors, as REST answers a 200."""
    if not answer.errors:
        return False
    if answer.data is None or any(code_of(e.code).status in (400, 403) for e in answer.errors):
        return True
    roots = {e.path[0] for e in answer.errors if e.path}
    return any(isinstance(r, str) and answer.data.get(r) is None for r in roots)


def compact(answer: ToolAnswer) -> CallToolResult:
    """The answer as structured content and as compact JSON text: the SDK would indent
    the text, and a client that reads the text alone would pay half as many tokens again
    as the budget counts. An answer with nothing to show sets ``isError`` (``failed``)
    and keeps its coded errors in both."""
    dump = answer.model_dump(mode="json")
    text = json.dumps(dump, separators=(",", ":"), ensure_ascii=False)
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=dump,
        is_error=failed(answer),
    )
