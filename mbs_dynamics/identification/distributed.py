"""The map steps of :mod:`.mapreduce` on a Dask cluster (``dask.distributed``; ``pip install
'mbs_dynamics[fleet]'``): a local cluster of worker processes by default, or an existing one by
its scheduler's address or a ``Client`` — the same code on a laptop and on a cluster.

Each chunk is one task whose key names the chunk; results are collected as they finish
(``as_completed``) into a dict keyed by chunk id. A worker lost mid-run makes the scheduler run
its unfinished (or finished but not yet collected) chunks again on another worker; a chunk that
arrives twice replaces its first result under the same id, so nothing is counted twice, and the
reduce (:func:`.mapreduce.reduce`) adds in chunk-id order, so the sum does not depend on which
worker finished first. A chunk that fails (a corrupt file) is reported with its error and the
other chunks go on. Workers need the package and its declared dependencies only.
"""
from __future__ import annotations

import uuid

__all__ = ["DASK_HINT", "SchedulerError", "connect", "local_cluster", "run_chunks"]

DASK_HINT = "running on Dask needs dask.distributed: pip install 'mbs_dynamics[fleet]'"


class SchedulerError(ConnectionError):
    """No Dask scheduler at the given address (the message is one line naming it)."""


def connect(scheduler=None, client=None, workers=2, timeout=10.0):
    """A ``(client, close)`` pair: ``client`` as given, else a Client of the scheduler at
    ``scheduler`` ("tcp://HOST:PORT"), else of a new local cluster of ``workers`` processes on
    the loopback interface (one thread each); ``close()`` shuts down what was started here.

    Raises:
        SchedulerError: the scheduler does not answer within ``timeout`` seconds.
        ImportError: dask.distributed is not installed (with :data:`DASK_HINT`).
    """
    if client is not None:
        return client, (lambda: None)
    try:
        from dask.distributed import Client
    except ImportError:
        raise ImportError(DASK_HINT) from None
    if scheduler is not None:
        try:
            c = Client(str(scheduler), timeout=timeout)
        except Exception as exc:  # OSError, TimeoutError, ValueError of a malformed address
            raise SchedulerError(f"{scheduler}: no Dask scheduler answers "
                                 f"({type(exc).__name__}: {' '.join(str(exc).split())[:160]})") \
                from None
        return c, c.close
    cluster = local_cluster(workers)
    c = Client(cluster)

    def close():
        c.close()
        cluster.close()
    return c, close


def local_cluster(workers=2, attempts=3):
    """A new ``LocalCluster`` of ``workers`` processes (one thread each) on the loopback
    interface, started up to ``attempts`` times.

    Dask gives the thread of its event loop a fixed 10 s to start
    (``distributed.utils.LoopRunner``) and fails with a bare ``AssertionError`` when it does
    not — seen on a loaded two-core machine. Such a start-up failure is tried again; after the
    last attempt it is raised as one ``RuntimeError`` that says what did not start.

    Raises:
        ValueError: ``workers`` < 1.
        RuntimeError: the cluster did not start in ``attempts`` attempts.
        ImportError: dask.distributed is not installed (with :data:`DASK_HINT`).
    """
    try:
        from dask.distributed import LocalCluster
    except ImportError:
        raise ImportError(DASK_HINT) from None
    if int(workers) < 1:
        raise ValueError(f"workers must be at least 1, got {workers}")
    last = None
    for _ in range(max(1, int(attempts))):
        try:
            return LocalCluster(n_workers=int(workers), threads_per_worker=1, processes=True,
                                host="127.0.0.1", dashboard_address=None)
        except (AssertionError, TimeoutError, OSError) as exc:
            last = exc
    raise RuntimeError(f"a local Dask cluster of {workers} worker processes did not start in "
                       f"{attempts} attempts ({type(last).__name__}: "
                       f"{' '.join(str(last).split())[:160]})") from last


def run_chunks(client, function, problem, chunks, progress=None):
    """Run ``function(problem, chunk)`` for every chunk on the cluster of ``client``.

    Args:
        progress: optional callable(done, total, chunk_id) after each finished chunk.
    Returns:
        (results, errors): {chunk id: result} and {chunk id: exception} of the failed chunks.
    """
    from dask.distributed import as_completed
    run = uuid.uuid4().hex[:8]
    # a key of its own per run (hash=False): a finished run's release cannot take it away
    prob = client.scatter(problem, broadcast=True, hash=False)
    futures = {}
    for ch in chunks:
        key = f"mbs-chunk-{run}-" + "-".join(str(x) for x in ch.id)
        futures[client.submit(function, prob, ch, key=key, pure=False)] = ch.id
    results, errors = {}, {}
    done = 0
    for fut in as_completed(list(futures)):
        cid = futures[fut]
        try:
            results[cid] = fut.result()  # keyed by chunk: a rerun replaces, never adds
        except Exception as exc:  # the chunk's own error (a corrupt file), or lost for good
            errors[cid] = exc
        fut.release()
        done += 1
        if progress is not None:
            progress(done, len(futures), cid)
    return results, errors
