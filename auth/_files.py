"""Small files that change under a running server: tokens, principals, a JWKS.

A ``Watched`` file is read again when its identity (device, inode, size, modification
and change times) differs from the last read, checked with one ``stat`` at most every
``interval_s``. Kubernetes updates a mounted Secret by swapping a symlink and an editor
or ``hash-token`` by renaming a new file over the old: both change the inode, so a
rewrite is seen even when size and mtime happen to match.

A file that disappears or cannot be read gives the ``empty`` value (fail closed: a
deleted tokens file admits nobody), logged once per change of state.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from typing import Generic, TypeVar

from openrl_inspect.core.errors import SettingsError

log = logging.getLogger("openrl_inspect.auth")

T = TypeVar("T")
MAX_FILE_BYTES = 4 << 20

_Identity = tuple[int, int, int, int, int]


class FileError(SettingsError):
    """The file cannot be read; the message names the file's role, never its content."""


def read_small(path: str, what: str) -> bytes:
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise FileError(f"the {what} {path!r} cannot be read ({exc.strerror})") from None
    if len(data) > MAX_FILE_BYTES:
        raise FileError(f"the {what} {path!r} is larger than {MAX_FILE_BYTES} bytes")
    return data


class Watched(Generic[T]):
    """``parse(content)`` of the file at ``path``, re-read when the file changes."""

    def __init__(
        self,
        path: str,
        what: str,
        parse: Callable[[bytes], T],
        empty: T,
        interval_s: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.path = path
        self.what = what
        self._parse = parse
        self._empty = empty
        self._interval_s = interval_s
        self._clock = clock
        self._identity: _Identity | None = None
        self._value = empty
        self._checked_at: float | None = None
        self._failing = False
        self.loads = 0

    def load(self) -> T:
        """Read the file now; a ``FileError`` when it cannot be (used at start-up)."""
        self._identity = self._stat()
        self._value = self._parse(read_small(self.path, self.what))
        self._checked_at = self._clock()
        self.loads += 1
        return self._value

    def get(self) -> T:
        now = self._clock()
        if self._checked_at is not None and now - self._checked_at < self._interval_s:
            return self._value
        self._checked_at = now
        try:
            identity = self._stat()
            if identity != self._identity:
                self._value = self._parse(read_small(self.path, self.what))
                self._identity = identity
                self.loads += 1
                log.info("reloaded", extra={"file": self.what})
            self._failing = False
        except FileError as exc:
            if not self._failing:
                log.error("%s; admitting nobody it named", exc, extra={"file": self.what})
            self._failing = True
            self._identity = None
            self._value = self._empty
        return self._value

    def _stat(self) -> _Identity:
        try:
            st = os.stat(self.path)
        except OSError as exc:
            raise FileError(
                f"the {self.what} {self.path!r} cannot be read ({exc.strerror})"
            ) from None
        return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
