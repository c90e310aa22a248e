"""Redis key names.

Every key of one model carries the hash tag ``{m:<model id>}`` (and every key of one
session ``{s:<session id>}``) so that a model lives on one Redis Cluster slot: the
writer's scripts can touch all of a model's keys atomically, and the reader's per-model
commands never cross slots. Global indexes are small sorted sets read by range.
"""

from __future__ import annotations

import hashlib
import re

from openrl_inspect.core.domain import ModelState

PREFIX = "oi"
SCHEMA_VERSION = 1
SCHEMA_VERSION_KEY = f"{PREFIX}:schema_version"

# Ids come from OpenRL; they must not be able to forge another key or hash tag.
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@/-]{0,127}$")

MODEL_STATES = tuple(ModelState)


def valid_id(value: str) -> bool:
    """True when ``value`` can be used inside a key (no braces, spaces or control bytes)."""
    return bool(_ID.match(value))


SESSIONS_LIVE = f"{PREFIX}:sessions:live"  # ZSET session id -> created (s)
SESSIONS_CLOSED = f"{PREFIX}:sessions:closed"  # ZSET session id -> closed (s)
WORKERS = f"{PREFIX}:workers"  # ZSET worker id -> last heartbeat (s)


def models_in_state(state: str) -> str:
    """ZSET model id -> time it entered ``state`` (s)."""
    return f"{PREFIX}:models:state:{state}"


# -- the model indexes (docs/redis-schema.md, "Model indexes") ------------------------------

MODELS_LIVE = f"{PREFIX}:models:live"  # ZSET live model id -> its last progress (s)
# The moving models that may need a person (read by attention beyond its own thresholds):
# ZSET model id -> when its last failed op finished (s); trimmed by age as written
MODELS_FAILING = f"{PREFIX}:models:failing"
# ZSET model id -> its newest step times over its earlier ones (recorder/_pace.py)
MODELS_PACE = f"{PREFIX}:models:pace"
# ZSET op id -> accepted (s), every model's ops not finished yet (``oi:opidx:OID`` names
# the model); trimmed by age as written
OPS_OPEN = f"{PREFIX}:ops:open"
# STRING: the version of the model indexes, set when they are known complete (with the
# schema version by the first writer of a fresh store, or by ``openrl-inspect reindex``);
# absent: data may predate them. Its hash tag is the schema version key's whole name, so
# both live on one Cluster slot and one script sets them together.
INDEXES_KEY = f"{PREFIX}:models:indexed:{{{SCHEMA_VERSION_KEY}}}"
# 2: the sessions by owner and the moving models' indexes were added; a store declared
# complete at 1 lacks them for what was written before, until ``reindex`` runs again.
INDEXES_VERSION = 2


def _index_name(value: str) -> str:
    # Owners and base models are free text from OpenRL: one that could not sit in a key
    # (a brace would forge a hash tag) is named by its digest instead.
    if valid_id(value):
        return value
    return "~" + hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def models_of_owner(owner: str) -> str:
    """ZSET model id -> created (s): the models of an owner's sessions."""
    return f"{PREFIX}:models:owner:{_index_name(owner)}"


def sessions_of_owner(owner: str) -> str:
    """ZSET session id -> created (s): an owner's sessions, live and closed."""
    return f"{PREFIX}:sessions:owner:{_index_name(owner)}"


def models_of_base(base_model: str) -> str:
    """ZSET model id -> created (s): the models fine-tuning one base model."""
    return f"{PREFIX}:models:base:{_index_name(base_model)}"


def session(sid: str) -> str:
    return f"{PREFIX}:{{s:{sid}}}:session"  # HASH


def session_models(sid: str) -> str:
    return f"{PREFIX}:{{s:{sid}}}:models"  # ZSET model id -> created (s)


def _m(mid: str) -> str:
    return f"{PREFIX}:{{m:{mid}}}"


def model(mid: str) -> str:
    return f"{_m(mid)}:model"  # HASH


def steps(mid: str) -> str:
    return f"{_m(mid)}:steps"  # ZSET step number -> step number


def step(mid: str, n: int) -> str:
    return f"{_m(mid)}:step:{n}"  # HASH


def step_ops(mid: str, n: int) -> str:
    return f"{_m(mid)}:step:{n}:ops"  # ZSET op id -> accepted (s)


def op(mid: str, oid: str) -> str:
    return f"{_m(mid)}:op:{oid}"  # HASH


def open_ops(mid: str) -> str:
    return f"{_m(mid)}:ops:open"  # ZSET op id -> accepted (s), ops not finished yet


def model_workers(mid: str) -> str:
    return f"{_m(mid)}:workers"  # ZSET worker id -> last seen serving the model (s)


def placements(mid: str) -> str:
    return f"{_m(mid)}:placements"  # ZSET placement id -> admitted (s)


def placement(mid: str, pid: str) -> str:
    return f"{_m(mid)}:placement:{pid}"  # HASH


def op_index(oid: str) -> str:
    return f"{PREFIX}:opidx:{oid}"  # STRING model id, expires with retention


def worker(wid: str) -> str:
    return f"{PREFIX}:worker:{wid}"  # HASH


def sampler_batches(mid: str) -> str:
    """ZSET of JSON sampler batch records -> time (s); capped, newest kept."""
    return f"{_m(mid)}:sampler:batches"


def logs(mid: str) -> str:
    """ZSET of JSON client log records -> time (s); capped, newest kept."""
    return f"{_m(mid)}:logs"


RECORDERS = f"{PREFIX}:recorders"  # ZSET recorder id -> last counters written (s)


def recorder(rid: str) -> str:
    return f"{PREFIX}:recorder:{rid}"  # HASH a recorder process's counters


def rollup(mid: str) -> str:
    return f"{_m(mid)}:rollup"  # HASH the model's rollup: format version, lifetime counters


def rollup_steps(mid: str) -> str:
    return f"{_m(mid)}:rollup:steps"  # ZSET one JSON member per recent step -> step number
