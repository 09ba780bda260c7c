"""Watching folders: file events become jobs for one writer thread (seed 004 §3, §12.1).

A ``watchdog`` observer reports changes; each path waits ``debounce_ms`` after its last
event, so a burst of writes to one file becomes one job. A job reconciles the database
with the file as it is when the job runs: a file that exists is indexed (skipped when
its hash is unchanged), one that is gone is purged, and a rename whose content is
unchanged only moves the document (no extraction). One thread writes, through one
connection; readers (MCP, Datasette, the CLI) use their own. On start the watcher
catches up with what changed while it was stopped: a hash scan of the folders, pruning
documents whose files are gone and extracting any document left unextracted.
"""

import datetime
import json
import os
import threading
import time
from dataclasses import dataclass

from watchdog.events import FileSystemEventHandler
from watchdog.observers import Observer

from . import parallel, plugins
from .ingest import (
    ingest_docs,
    move_document,
    purge_documents,
    purge_orphans,
    special_file,
)
from .loaders import _hidden, _suffix
from .schema import set_setting

DEFAULT_DEBOUNCE_MS = 300
# How long a due batch waits, at most, for the other paths still changing to settle: a
# burst of changes (a checkout, a copy) becomes one batch, with one extraction run and
# one refinement of the graph, not a first file alone and then the rest.
GATHER_SECONDS = 2.0
WATCHER_SETTING = "watcher"  # graphrag_settings key: the running watcher's state, for status


class Stopping(Exception):
    """Raised inside a batch when the watcher is asked to stop between two files."""


@dataclass
class _Job:
    due: float
    moved_from: str = None  # a rename: the old path of the file now at the job's path
    folder: bool = False  # a folder created, moved or deleted: reconcile everything in it


def _now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


class Watcher:
    """Keep ``database`` in step with the files under ``folders``.

    ``start()`` returns once the writer thread runs (it catches up first); ``stop()``
    lets the file in progress finish (each file is its own transaction, so an
    interrupted one rolls back) and leaves what is still queued for the next start.
    ``workers``: extraction processes the writer thread forks for a batch (default: one
    per CPU for a batch of ``parallel.MIN_ITEMS`` files or more, as ``ingest`` does; 0:
    none).
    """

    def __init__(self, database, folders, *, debounce_ms=DEFAULT_DEBOUNCE_MS, workers=None, tags=None, log=None):
        self.database = str(database)
        self.folders = [os.path.abspath(str(f)) for f in folders]
        missing = [f for f in self.folders if not os.path.isdir(f)]
        if missing:
            raise FileNotFoundError(f"Cannot watch {missing[0]}: it is not a folder; create it or fix the path")
        self.debounce = debounce_ms / 1000
        self.workers = workers
        self.tags = list(tags or [])
        self.log = log or (lambda message: None)  # called with one line per batch
        self._pending = {}  # path -> _Job
        self._condition = threading.Condition()
        self._stopping = threading.Event()
        self._caught_up = threading.Event()
        self._in_progress = 0
        self._observer = None
        self._thread = None
        self._loaders = plugins.get_loaders()
        self.state = {
            "running": False,
            "catching_up": False,  # the start's hash scan of the folders
            "pid": os.getpid(),
            "folders": self.folders,
            "started_at": None,
            "updated_at": None,
            "queue_depth": 0,
            "last_file": None,
            "last_error": None,
            "skipped": [],  # special files: {"path", "reason"}, the most recent few
            "files_processed": 0,
            "chunks_written": 0,
            "busy_seconds": 0.0,
            "ingest_rate": None,  # files per busy second
            "last_batch": None,
        }

    # -- lifecycle -------------------------------------------------------------------

    def start(self, catch_up=True):
        from .db import open_database

        open_database(self.database).conn.close()  # the schema, before any reader opens it
        self.state.update(running=True, started_at=_now())
        self._thread = threading.Thread(target=self._run, args=(catch_up,), name="graphrag-writer", daemon=True)
        self._thread.start()
        self._observer = Observer()
        handler = _Handler(self)
        for folder in self.folders:
            self._observer.schedule(handler, folder, recursive=True)
        self._observer.start()
        return self

    def stop(self, timeout=None):
        """Stop watching; the batch in progress finishes or stops between two files."""
        if self._observer is not None:
            self._observer.stop()
        self._stopping.set()
        with self._condition:
            self._condition.notify_all()
        if self._thread is not None:
            self._thread.join(timeout)
        if self._observer is not None:
            self._observer.join(timeout)

    def wait_idle(self, timeout=30):
        """Block until nothing is queued or being written (and the catch-up is done)."""
        deadline = time.monotonic() + timeout
        if not self._caught_up.wait(timeout):
            return False
        with self._condition:
            while (self._pending or self._in_progress) and self._thread.is_alive():
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._condition.wait(left)
        return True

    def queue_depth(self):
        with self._condition:
            return len(self._pending) + self._in_progress

    def live_state(self):
        """The state as ``status`` reports it, with the queue depth of this moment."""
        return dict(self.state, queue_depth=self.queue_depth())

    # -- events ----------------------------------------------------------------------

    def wanted(self, path):
        """Whether ``path`` is a document under a watched folder (not hidden)."""
        for folder in self.folders:
            if path.startswith(folder.rstrip("/") + "/"):
                parts = os.path.relpath(path, folder).split(os.sep)
                return not any(_hidden(p) for p in parts) and _suffix(parts[-1], self._loaders) is not None
        return False

    def touch(self, path, moved_from=None, folder=False):
        with self._condition:
            job = self._pending.get(path)
            if moved_from is None and job is not None:
                moved_from = job.moved_from  # a renamed file written to again: still a move
            self._pending[path] = _Job(time.monotonic() + self.debounce, moved_from, folder)
            if moved_from:
                # The old path is settled by the move (or reconciled if the move fails).
                self._pending.pop(moved_from, None)
            self._condition.notify_all()

    # -- the writer thread -----------------------------------------------------------

    def _run(self, catch_up):
        with parallel.forking_thread():  # its workers only extract: see ``parallel.forking_thread``
            self._write(catch_up)

    def _write(self, catch_up):
        from .db import open_database

        db = open_database(self.database)
        try:
            if catch_up:
                self.state["catching_up"] = True
                self._save(db)
                self._batch(db, lambda: self._catch_up(db))
                self.state["catching_up"] = False
                self._save(db)
            self._caught_up.set()
            while not self._stopping.is_set():
                with self._condition:
                    batch = self._due()
                    while not batch and not self._stopping.is_set():
                        waits = [job.due for job in self._pending.values()]
                        self._condition.wait(max(0.01, min(waits) - time.monotonic()) if waits else None)
                        batch = self._due()
                    if self._stopping.is_set():
                        break
                    self._gather(batch)
                    self._in_progress = len(batch)
                try:
                    self._batch(db, lambda: self._process(db, batch))
                finally:
                    self._save(db, finished=True)
                    with self._condition:
                        self._in_progress = 0
                        self._condition.notify_all()
        finally:
            self._caught_up.set()
            self.state.update(running=False)
            self._save(db)
            db.conn.close()

    def _due(self):
        now = time.monotonic()
        due = {path: job for path, job in self._pending.items() if job.due <= now}
        for path in due:
            del self._pending[path]
        return due

    def _gather(self, batch):
        """Add to the due ``batch`` the paths still pending (changed within the last
        debounce: the same burst) once they are due, waiting ``GATHER_SECONDS`` at most;
        call with ``_condition`` held."""
        limit = time.monotonic() + GATHER_SECONDS
        while self._pending and not self._stopping.is_set():
            now = time.monotonic()
            if now >= limit:
                break
            self._in_progress = len(batch)  # queued still, for ``wait_idle`` and ``status``
            self._condition.wait(max(0.005, min(max(job.due for job in self._pending.values()), limit) - now))
            batch.update(self._due())
        return batch

    def _batch(self, db, work):
        started = time.monotonic()
        try:
            work()
        except Stopping:
            pass
        except Exception as ex:  # one bad batch must not stop the watcher
            self.state["last_error"] = {"error": f"{type(ex).__name__}: {ex}", "at": _now()}
        finally:
            elapsed = time.monotonic() - started
            self.state["busy_seconds"] = round(self.state["busy_seconds"] + elapsed, 3)
            if self.state["files_processed"] and self.state["busy_seconds"]:
                self.state["ingest_rate"] = round(self.state["files_processed"] / self.state["busy_seconds"], 2)

    def _check_stop(self, path):
        if self._stopping.is_set():
            raise Stopping()

    def _catch_up(self, db):
        """Index what changed while stopped: a hash scan, pruning and pending extraction."""
        from .extract import extract_and_link

        result = ingest_docs(
            db, self.folders, tags=self.tags, prune=True, roots=self.folders, workers=self.workers,
            progress=self._check_stop,
        )
        self._record(result)
        extract_and_link(db, workers=self.workers)  # documents a stop left unextracted
        with db.atomic():
            purge_orphans(db)

    def _process(self, db, batch):
        """Reconcile the batch's paths with the files, in path order."""
        started = time.monotonic()
        paths = set()
        changed = False  # a document moved or deleted
        for path, job in sorted(batch.items()):
            if job.folder:
                paths |= self._folder_paths(db, path)
            elif job.moved_from:
                if not os.path.lexists(job.moved_from) and move_document(db, job.moved_from, path, roots=self.folders):
                    self.state["files_processed"] += 1
                    self.state["last_file"] = path
                    changed = True
                else:
                    paths |= {job.moved_from, path}
            else:
                paths.add(path)
        present, gone = [], []
        for path in sorted(paths):
            reason = special_file(path, self.folders) if os.path.lexists(path) else None
            if reason:
                self._skip(path, reason)
                gone.append(path)  # whatever was stored for it is no longer a document
            elif os.path.isfile(path):
                present.append(path)
            else:
                gone.append(path)
        if gone:
            rows = db.execute(
                "select id, path from docs where path in (select value from json_each(?)) order by path",
                [json.dumps(gone)],
            ).fetchall()
            purge_documents(db, [r[0] for r in rows])
            if rows:
                from .extract import settle

                settle(db, workers=self.workers)  # what the documents' going changes elsewhere
            self.state["files_processed"] += len(rows)
            if rows:
                self.state["last_file"] = rows[-1][1]
                changed = True
        if present or changed:
            # Also after a move or a delete alone: documents after the paths that changed
            # may keep other paragraphs now (``dedup_store.py``), and are loaded again.
            result = ingest_docs(
                db, present, tags=self.tags, roots=self.folders, workers=self.workers,
                progress=self._check_stop,
            )
            self._record(result, present)
            if present:
                self.state["last_file"] = present[-1]
        self.state["last_batch"] = {
            "paths": len(paths), "seconds": round(time.monotonic() - started, 3), "at": _now()
        }
        self.log(
            f"{len(present)} indexed, {len(gone)} gone, {len(batch) - len(paths & set(batch))} moved "
            f"in {self.state['last_batch']['seconds']:.2f} s"
        )

    def _folder_paths(self, db, folder):
        """Every document path stored or found under ``folder``."""
        prefix = folder.rstrip("/") + "/"
        stored = {
            path for (path,) in db.execute("select path from docs where substr(path, 1, ?) = ?", [len(prefix), prefix])
        }
        found = set()
        if os.path.isdir(folder):
            for dirpath, dirnames, filenames in os.walk(folder):
                dirnames[:] = [d for d in dirnames if not _hidden(d)]
                found |= {os.path.join(dirpath, n) for n in filenames}
        return stored | {p for p in found if self.wanted(p)}

    def _record(self, result, paths=()):
        self.state["files_processed"] += result.ingested
        self.state["chunks_written"] += result.chunks
        failed = {str(error.get("path")) for error in result.errors}
        last = self.state["last_error"]
        if last and last.get("path") in {str(p) for p in paths} - failed:
            # That file was caught half-written (an empty file being copied): it is fine now.
            self.state["last_error"] = None
        for error in result.errors:
            self.state["last_error"] = dict(error, at=_now())
        for skipped in result.skipped_files:
            if skipped["reason"].startswith("skipped:"):  # a special file, not a generated page
                self._skip(skipped["path"], skipped["reason"])

    def _skip(self, path, reason):
        skipped = [s for s in self.state["skipped"] if s["path"] != path]
        self.state["skipped"] = (skipped + [{"path": path, "reason": reason}])[-20:]

    def _save(self, db, finished=False):
        """Keep the state in the database for other processes' ``status``; ``finished``:
        the batch in progress is written, only what is pending is still queued."""
        self.state["updated_at"] = _now()
        state = self.live_state()
        if finished:
            with self._condition:
                state["queue_depth"] = len(self._pending)
        with db.atomic():
            set_setting(db, WATCHER_SETTING, state)


class _Handler(FileSystemEventHandler):
    """watchdog events to the watcher's jobs."""

    def __init__(self, watcher):
        self.watcher = watcher

    def on_any_event(self, event):
        watcher = self.watcher
        src = os.path.abspath(os.fsdecode(event.src_path))
        dest = os.path.abspath(os.fsdecode(event.dest_path)) if getattr(event, "dest_path", "") else None
        if event.event_type in ("opened", "closed_no_write"):
            return
        if event.is_directory:
            if event.event_type in ("created", "deleted", "moved"):
                for path in (src, dest):
                    if path and any(path == f or path.startswith(f.rstrip("/") + "/") for f in watcher.folders):
                        watcher.touch(path, folder=True)
            return
        if event.event_type == "moved":
            if watcher.wanted(dest):
                watcher.touch(dest, moved_from=src if watcher.wanted(src) else None)
            elif watcher.wanted(src):
                watcher.touch(src)
            return
        if watcher.wanted(src):
            watcher.touch(src)
