"""An answer's HTTP status: its errors' codes as a plain HTTP client reads them.

Only an answer that has nothing to show (``data`` null, or the route's root field null)
takes an error's status (``core.errors.CODES``); an answer with a part missing is a 200
with ``errors``, as in GraphQL. When several errors have nothing to show, the caller's
problem wins over the server's (a 400 before a 503).
"""

from __future__ import annotations

from typing import Any

from openrl_inspect.core.codes import status_of


def status(data: dict[str, Any] | None, root: str, codes: list[str]) -> int:
    if not codes or (data is not None and data.get(root) is not None):
        return 200
    return status_of(codes)
