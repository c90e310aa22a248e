"""The equivalence property over a real redis-server, in a pytest process of its own.

See tests/api/equivalence_on_redis_server.py for what it checks and why it runs apart.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from support.redis_server import require_redis

INNER = Path(__file__).with_name("equivalence_on_redis_server.py")


@pytest.mark.redis_server
def test_plan_and_stock_agree_over_a_real_redis_server() -> None:
    require_redis()
    tests = INNER.parent.parent
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(INNER)],
        cwd=tests,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        capture_output=True,
        text=True,
        timeout=280,  # inside the per-test timeout, so a hang reports the inner output
    )
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    # Collected and run, not skipped: the property (100 generated documents), the nested
    # query under each fault, and the cancelled-siblings regression.
    assert re.search(r"^6 passed in ", proc.stdout, re.MULTILINE), proc.stdout
