"""The writing side: telemetry that OpenRL's API server, trainers and samplers record.

**Hot path.** A record method (``op_started``, ``sampler_batch``, ...) builds one tuple
and appends it to a bounded buffer (a ``collections.deque``): never blocking, never
raising into the caller, no I/O. The time is ``time.time()`` unless the caller passes
``at``.

**One flusher.** A daemon thread (``_flusher``) serves ``Recorder`` and
``AsyncRecorder`` alike: it takes records in batches of ``batch_size`` when that many
are waiting (size trigger), every ``flush_interval_s`` (time trigger) or on
``flush_soon()``; turns each batch into few commands (``_batch.Batch`` combines the
writes of a batch per key) and sends them as one pipeline through the client's public
pipeline (``_send``; an asyncio client through a copy of it on the thread's own loop).
``flush(timeout_s)`` writes everything recorded before the call within its deadline
and returns how many records it saw written; ``close(timeout_s)`` stops the thread and
writes what is left within its deadline. ``AsyncRecorder``'s ``flush`` and ``close``
are awaited: they wait for the thread from a worker thread, never on the caller's loop.

**Parts** (private modules, composed): ``_buffer`` (the bounded buffer, the drop
policy, exact counters), ``_writes`` (the table of kind -> key writes; ``_entries``
writes the records that add a list entry, ``_vocabulary`` checks enumerated arguments)
over ``_batch`` (write combining), ``_rollup`` and ``_scripts`` (the server-side
scripts), ``_flow`` (taking, compiling and settling batches), ``_status`` (counters and heartbeat),
``_calls`` (the record methods), ``_send`` (one pipeline), ``_flusher`` (the thread),
``_recorders`` (the two recorders); ``_reindex`` builds the model indexes for data
written before them (``openrl-inspect reindex``).

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
  a record a write function refuses (an op status, model state or log level outside
  the domain's vocabulary, a value it cannot encode) when its batch is compiled
  (``invalid``), and a record whose command Redis rejects (``rejected``).

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

from openrl_inspect.recorder._buffer import DROP_REASONS
from openrl_inspect.recorder._calls import RecorderBase
from openrl_inspect.recorder._config import RecorderSettings, RecorderStats, Retention, WorkerInfo
from openrl_inspect.recorder._recorders import AsyncRecorder, Recorder
from openrl_inspect.recorder._reindex import ReindexReport, reindex, reindex_with
from openrl_inspect.recorder._writes import LOW_VALUE

__all__ = [
    "DROP_REASONS",
    "LOW_VALUE",
    "AsyncRecorder",
    "Recorder",
    "RecorderBase",
    "RecorderSettings",
    "RecorderStats",
    "ReindexReport",
    "Retention",
    "WorkerInfo",
    "reindex",
    "reindex_with",
]
