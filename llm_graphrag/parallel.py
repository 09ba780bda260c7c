"""Work spread over processes, results in input order, a bounded number in flight.

Extraction is pure Python: threads would share one interpreter lock, so the CPU-bound
part runs in forked worker processes while the calling process links and writes.
"""

import collections
import contextlib
import ctypes
import gc
import multiprocessing
import os
import signal
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor


_FORKING = threading.local()


def default_workers():
    """One worker per CPU where processes can be forked safely, else none."""
    if "fork" not in multiprocessing.get_all_start_methods():
        return 0  # spawn would re-import and re-register every plugin in each worker
    if threading.current_thread() is not threading.main_thread() and not getattr(_FORKING, "allowed", False):
        return 0  # forking a threaded server (Datasette) can copy a held lock
    return os.cpu_count() or 1


@contextlib.contextmanager
def forking_thread():
    """Let this thread fork workers (``default_workers``) while it runs the block: for a
    thread that owns its work, such as the watcher's writer, whose workers use nothing
    the process's other threads may hold (they extract text and exit)."""
    _FORKING.allowed = True
    try:
        yield
    finally:
        _FORKING.allowed = False


MIN_ITEMS = 16  # below this many documents or files, forking costs more than it saves


def worker_count(workers, items, most=None, least=MIN_ITEMS):
    """Processes for a run of ``items``: ``workers`` when given, else one per CPU (at
    most ``most``) for runs of at least ``least`` items, else none."""
    if workers is not None:
        return workers if most is None else min(workers, most)
    if items < max(least, 2):
        return 0
    found = default_workers()
    return found if most is None else min(found, most)


def ordered_map(function, items, workers, *, initializer=None, initargs=(), ahead=None, nice=0):
    """Yield ``function(item)`` for each item, in order.

    With ``workers`` > 0 the calls run in that many forked processes, at most ``ahead``
    items (default ``2 * workers + 2``) ahead of the consumer, so memory stays bounded
    however many items there are; ``nice`` lowers their priority, for a consumer that is
    the slower stage. With 0 they run here, one at a time, after ``initializer(*initargs)``.
    """
    if workers <= 0:
        if initializer is not None:
            initializer(*initargs)
        for item in items:
            yield function(item)
        return
    context = multiprocessing.get_context("fork")
    ahead = ahead or 2 * workers + 2
    initargs = (os.getpid(), nice, initializer, initargs)
    with ProcessPoolExecutor(workers, mp_context=context, initializer=_start, initargs=initargs) as pool:
        pending = collections.deque()
        try:
            for item in items:
                pending.append(pool.submit(function, item))
                if len(pending) >= ahead:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        finally:
            for future in pending:
                future.cancel()


def _start(parent, nice=0, initializer=None, initargs=()):
    die_with_parent(parent)
    if nice:
        os.nice(nice)
    if initializer is not None:
        initializer(*initargs)


PR_SET_PDEATHSIG = 1  # linux/prctl.h
WATCH_INTERVAL = 0.5  # seconds between looks at the parent where prctl is missing


def die_with_parent(parent):
    """End this forked worker as soon as ``parent`` (the pid that forked it) dies.

    A pool's workers wait on a pipe every worker holds open too, so a parent killed by
    SIGKILL (or the out-of-memory killer) used to leave them running: three processes of
    about 490 MB each were still there a minute after an ingest was killed. On Linux the
    kernel sends SIGKILL to this process when its parent dies (``PR_SET_PDEATHSIG``; to
    the kernel the parent is the thread that forked, and pools here fork from the thread
    that reads their results); elsewhere a daemon thread looks for a new parent twice a
    second.
    """
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0:
                if os.getppid() != parent:  # died before the request took effect
                    os._exit(1)
                return
        except (OSError, AttributeError):
            pass
    threading.Thread(target=_watch_parent, args=(parent,), name="graphrag-parent-watch", daemon=True).start()


def _watch_parent(parent):
    while os.getppid() == parent:
        time.sleep(WATCH_INTERVAL)
    os._exit(1)


class _Done:
    """A result computed at once, read like a future's."""

    def __init__(self, value):
        self.value = value

    def result(self):
        return self.value


class SideProcess:
    """One forked process for calls whose results are collected later (``submit(fn,
    *args).result()``), so the caller goes on meanwhile. Without it (``enabled`` false)
    each call runs at once, here, after ``initializer(*initargs)``. A context manager."""

    def __init__(self, enabled, initializer=None, initargs=()):
        self.pool = None
        if enabled:
            context = multiprocessing.get_context("fork")
            self.pool = ProcessPoolExecutor(
                1, mp_context=context, initializer=_start, initargs=(os.getpid(), 0, initializer, initargs)
            )
            self.pool.submit(int).result()  # fork now, before the caller starts any threads
        elif initializer is not None:
            initializer(*initargs)

    def submit(self, function, *args):
        if self.pool is None:
            return _Done(function(*args))
        return self.pool.submit(function, *args)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.pool is not None:
            self.pool.shutdown(cancel_futures=True)


@contextlib.contextmanager
def gc_paused():
    """Automatic garbage collection off in this process and the workers it forks meanwhile.

    A bulk run keeps millions of small objects alive until it ends (entities, their
    indexes, caches), and each automatic collection walked them again: a third of the
    run's CPU. Almost everything is freed by reference counting; the few reference
    cycles made meanwhile (about 1,900 objects over 1.4 million words) are collected at the end.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
        gc.collect()
