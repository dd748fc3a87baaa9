"""The full audit's per-shard checks as tasks of an executor (threads, processes, a Dask cluster).

Each shard's row checks and re-scan (:func:`itarcore.audit.rows.audit_shard`) run as one
task of picklable arguments; the caller gets each shard's :class:`ShardAudit` back and
turns them into findings in shard order, exactly as a local run does, so the report does
not depend on where or in which order the shards were checked.
"""
from __future__ import annotations

import numpy as np

from ..executors import ExecutorSpec, TaskRunner, task_runner
from ..progress import ProgressReporter
from ..storage import basename
from .rows import ShardAudit, audit_shard


def audit_shard_task(fid: int, path: str, rows: np.ndarray, row_ids: np.ndarray, extensions: list[str],
                     crash_stems: list[str], storage_options: dict | None = None) -> ShardAudit:
    """One shard's checks, without callbacks (progress is reported per finished shard)."""
    return audit_shard(fid, path, rows, row_ids, extensions, crash_stems, ProgressReporter(None, len(rows)), 0,
                       storage_options)


def audit_shards(tasks: list[tuple], executor: str | ExecutorSpec | TaskRunner, jobs: int,
                 reporter: ProgressReporter) -> dict[int, ShardAudit]:
    """Run ``audit_shard_task(*args)`` for each task tuple; fid -> result. A failing shard stops the audit."""
    audits: dict[int, ShardAudit] = {}
    done = 0
    with task_runner(executor, jobs) as runner:
        results = runner.run(audit_shard_task, tasks, reporter.cancel)
        try:
            for i, audit, exc in results:
                if exc is not None:
                    raise exc
                audits[tasks[i][0]] = audit
                done += len(tasks[i][2])
                reporter.update(done, current=basename(audit.path))
        finally:
            results.close()
    return audits
