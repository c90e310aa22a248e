"""A viewer's sealed cursors open again whatever their length (base64 padding differs
with it), and refuse anything tampered with, made with another key, or made for another
principal."""

from __future__ import annotations

import pytest
from openrl_inspect.core.cursor import Sealer
from openrl_inspect.core.errors import InvalidInput

SEALER = Sealer("a shared key")


@pytest.mark.parametrize("length", range(0, 41))
def test_a_sealed_cursor_of_any_length_opens(length: int) -> None:
    cursor = "x" * length
    assert SEALER.unseal(SEALER.seal(cursor, "alice"), "alice") == cursor


def test_a_tampered_or_foreign_cursor_is_refused() -> None:
    sealed = SEALER.seal('["sessions", 1.5, "sess-1"]', "alice")
    flipped = sealed[:-2] + ("A" if sealed[-2] != "A" else "B") + sealed[-1]
    for bad in (flipped, sealed[:-4], "s.", "s.!!!", "WyJzZXNzaW9ucyJd", "s." + "A" * 5000):
        with pytest.raises(InvalidInput):
            SEALER.unseal(bad, "alice")


def test_a_cursor_opens_only_for_its_principal_and_key() -> None:
    sealed = SEALER.seal('["sessions", 1.5, "sess-1"]', "alice")
    with pytest.raises(InvalidInput):
        SEALER.unseal(sealed, "bob")
    with pytest.raises(InvalidInput):
        Sealer("another key").unseal(sealed, "alice")
    # Replicas sharing the key open each other's cursors.
    assert Sealer("a shared key").unseal(sealed, "alice") == '["sessions", 1.5, "sess-1"]'
