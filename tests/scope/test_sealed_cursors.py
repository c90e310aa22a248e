"""A viewer's sealed cursors open again whatever their length (base64 padding differs
with it), and refuse anything tampered with."""

from __future__ import annotations

import pytest
from openrl_inspect.core.errors import InvalidInput
from openrl_inspect.resolvers.scope import seal, unseal


@pytest.mark.parametrize("length", range(0, 41))
def test_a_sealed_cursor_of_any_length_opens(length: int) -> None:
    cursor = "x" * length
    assert unseal(seal(cursor)) == cursor


def test_a_tampered_or_foreign_cursor_is_refused() -> None:
    sealed = seal('["sessions", 1.5, "sess-1"]')
    flipped = sealed[:-2] + ("A" if sealed[-2] != "A" else "B") + sealed[-1]
    for bad in (flipped, sealed[:-4], "s.", "s.!!!", "WyJzZXNzaW9ucyJd", "s." + "A" * 5000):
        with pytest.raises(InvalidInput):
            unseal(bad)
