"""The writing side: telemetry that OpenRL's API server, trainers and samplers record.

**Hot path.** A record method (``op_started``, ``sampler_batch``, ...) builds one tuple
and puts it into a bounded buffer: never blocking, never raising into the caller, no
I/O. The time is taken as a float (``time.time()``) unless the caller passes ``at``.

**Flusher.** ``RecorderSettings.flusher`` picks who writes: ``"thread"`` (the default),
``"process"`` or ``"auto"`` (the process where it works: x86-64 POSIX with a plain
redis-py client). ``"process"``: the record is
appended to a local queue, and a porter thread moves batches of them, encoded into
compact bytes (one ``orjson.dumps`` each), into a ring shared with a flusher process
(``_outbox``, ``_ring``, ``_process``, ``_child``), which does everything below: the
flush shares neither the caller's event loop nor its GIL beyond the porter's
microseconds per record. ``"thread"``: the
record is appended to a ``collections.deque`` and a daemon thread flushes (``Recorder``,
``AsyncRecorder.from_settings``), or for an ``AsyncRecorder`` given an asyncio client
that cannot cross to a process, a task on the running loop. Either way the flusher
takes records in batches of ``batch_size``, turns each batch into few commands
(``_batch.Batch`` combines the writes of a batch per key) and sends them as one
pipeline, when ``batch_size`` records are waiting (size trigger) or every
``flush_interval_s`` (time trigger).

**Parts** (private modules, composed, not inherited): ``_buffer`` (the bounded buffer,
drop policy, exact counters), ``_writes`` (the table of kind -> key writes) over
``_batch`` (write combining), ``_flow`` (taking, compiling and settling batches),
``_status`` (counters and heartbeat), ``_calls`` (the record methods), ``_wire`` (one
pipeline on the wire), ``_connect`` (clients), the flushers ``_threaded`` and
``_asyncio``, and the process mode's ``_outbox``, ``_ring``, ``_process``, ``_child``.
An explicit ``flush(timeout_s)`` writes everything recorded before the call (within the
deadline) and returns how many records it saw written; ``close(timeout_s)`` stops the
flusher and writes what is left within its deadline.

**Failures.** A failed pipeline (connection refused or reset, timeout, Cluster down,
loading, out of memory...) keeps its batch: the flusher retries the same batch, with
exponential backoff and jitter, before taking the next one, so records reach Redis in
the order they were recorded. Every write is idempotent, so a batch that was applied but
whose answer was lost is simply applied again. A command that Redis *rejects* (a wrong
type, a script error) is not retried: the batch is sent once more record by record, to
find which records were rejected, and those are counted as dropped (``rejected``).

**Drop policy** (the buffer holds at most ``capacity`` records, at least ``batch_size``):

- below the *shed level* (``capacity * shed_fraction``) every record is kept;
- from the shed level on, new low-value records (heartbeats, sampler batches, client
  logs: each is superseded or summarised by the next) are dropped;
- at ``capacity`` every new record is dropped (drop-newest: what is already buffered is
  kept and written in order, lifecycle records are never dropped before the hard cap);
- records still unwritten when ``close``'s deadline passes are dropped (``shutdown``),
  as are records made after ``close`` (``closed``); a call whose arguments cannot even
  be captured (``dict(payload)`` of a non-mapping...) is dropped at once (``malformed``),
  a record a write function cannot encode later (``invalid``), a record whose command
  Redis rejects too (``rejected``), and records in flight in a flusher process that
  died (``lost``; another is started, ``RecorderStats.flusher_crashes`` counts them).

Nothing is lost silently: ``stats()`` counts, exactly, records ``recorded``, ``written``
(their pipeline succeeded; a record retried is counted once, when it succeeds),
``dropped`` (by reason and by kind), ``pending`` (buffered or in flight) and ``retried``
(record sends beyond the first), with ``recorded == written + dropped + pending`` at all
times. The counters ride along with the pipelines into ``oi:recorder:<recorder id>``
(at most every ``counters_every_s``, and at close), so they reach Redis as soon as it
is back; a recorder given a ``WorkerInfo`` sends the worker's heartbeat every
``heartbeat_every_s`` with the counters in its payload.
Drops and failures are logged (rate-limited) on the ``openrl_inspect.recorder`` logger.
"""

from openrl_inspect.recorder._asyncio import AsyncRecorder
from openrl_inspect.recorder._buffer import DROP_REASONS
from openrl_inspect.recorder._calls import RecorderBase
from openrl_inspect.recorder._config import RecorderSettings, RecorderStats, Retention, WorkerInfo
from openrl_inspect.recorder._threaded import Recorder
from openrl_inspect.recorder._writes import LOW_VALUE

__all__ = [
    "DROP_REASONS",
    "LOW_VALUE",
    "AsyncRecorder",
    "Recorder",
    "RecorderBase",
    "RecorderSettings",
    "RecorderStats",
    "Retention",
    "WorkerInfo",
]
