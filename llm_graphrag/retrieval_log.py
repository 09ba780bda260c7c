"""Seed 001's retrieval log and result cache: every retrieval a tool runs is answered from
the cache while the database file is unchanged, and logged as one JSON line."""

import collections
import datetime
import json
import os
import pathlib
import threading
import time

LOG_NAME = "retrieval-log.jsonl"


def database_file(db):
    """Path of the main database file, or None for an in-memory database."""
    for _, name, file in db.execute("pragma database_list").fetchall():
        if name == "main":
            return file or None
    return None


def retrieval_log_path(db):
    """Where retrievals are logged: the ``retrieval_log`` setting, else beside the database."""
    from .schema import get_setting

    configured = get_setting(db, "retrieval_log", "default")
    if configured is None:
        return None
    if configured != "default":
        return pathlib.Path(configured)
    file = database_file(db)
    if file is None:
        return None
    return pathlib.Path(file).parent / "data" / "graphrag" / LOG_NAME


_log_lock = threading.Lock()


def log_retrieval(db, query, result_count, latency_ms, cache_hit):
    path = retrieval_log_path(db)
    if path is None:
        return
    line = json.dumps(
        {
            "timestamp": datetime.datetime.now(datetime.timezone.utc).isoformat(),
            "query": query,
            "result_count": result_count,
            "latency_ms": round(latency_ms, 3),
            "cache_hit": cache_hit,
        },
        ensure_ascii=False,
    )
    with _log_lock:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf8") as fp:
            fp.write(line + "\n")


def database_stamp(db):
    """Changes whenever the database file changes: any commit touches the file or its WAL."""
    file = database_file(db)
    if file is None:
        return None
    stamp = []
    for suffix in ("", "-wal"):
        try:
            st = os.stat(file + suffix)
            stamp.append((st.st_mtime_ns, st.st_size))
        except FileNotFoundError:
            stamp.append(None)
    return (file, tuple(stamp))


class ResultCache:
    """A small LRU cache of tool results keyed on the database's state and the arguments."""

    def __init__(self, size=256):
        self.size = size
        self._items = collections.OrderedDict()
        self._lock = threading.Lock()

    def get_or_compute(self, db, key, compute):
        """Return ``(result, cache_hit)``."""
        stamp = database_stamp(db)
        if stamp is None:
            return compute(), False
        full_key = (stamp, key)
        with self._lock:
            if full_key in self._items:
                self._items.move_to_end(full_key)
                return self._items[full_key], True
        result = compute()
        with self._lock:
            self._items[full_key] = result
            while len(self._items) > self.size:
                self._items.popitem(last=False)
        return result, False

    def clear(self):
        with self._lock:
            self._items.clear()


cache = ResultCache()


def logged_retrieval(db, arguments, compute):
    """Run a retrieval through the cache and append a line to the retrieval log."""
    start = time.perf_counter()
    key = json.dumps(arguments, sort_keys=True)
    result, hit = cache.get_or_compute(db, key, compute)
    latency = (time.perf_counter() - start) * 1000
    log_retrieval(db, arguments.get("q"), len(result.get("chunks", [])), latency, hit)
    return json.loads(json.dumps(result)) if hit else result
