"""Live indexing on a watched copy of Debian's python3.11-doc sources (about 500 files).

* ``bulk``: ``ingest_docs`` of the whole folder into a fresh database (extraction included),
  files per second: the rate a burst is compared with;
* ``edit``: one file gets a new sentence; the time from the file being closed to
  ``hybrid_query`` (a reader connection, default mode) returning a chunk with that
  sentence, over ``--edits`` edits of different files: p50 and p95 (targets 0.5 s, 1 s);
  and to the watcher being idle again (the file's extraction written too);
* ``burst``: ``--burst`` files changed at once; the time from the last one closed until
  the watcher has indexed them all, as files per second (target: no less than bulk).

Beside each rate, the CPU seconds this process and its workers spent (``os.times``), per
file: on a shared machine the wall-clock ratio moves with the load the two phases met, the
CPU cost per file much less.

The watcher runs in this process with ``--debounce-ms`` (200 by default: seed 004 asks for
200-500 ms). Run from the repository root::

    python bench/bench_live.py [--edits 20] [--burst 100] [--debounce-ms 200] [--keep DIR]
"""

import argparse
import contextlib
import datetime
import json
import os
import pathlib
import random
import shutil
import statistics
import tempfile
import time

from common import machine, python_docs

from llm_graphrag.db import open_database
from llm_graphrag.ingest import ingest_docs
from llm_graphrag.tools import call_tool
from llm_graphrag.watch import Watcher


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def nonsense(rng, words=6):
    """A sentence of made-up words no other sentence shares, so only its chunk matches."""
    letters = "bcdfghjklmnpqrstvwxz"
    return " ".join(
        "".join(rng.choice(letters) + rng.choice("aeiou") for _ in range(4)) for _ in range(words)
    ).capitalize() + "."


def wait_for_sentence(db, sentence, path, timeout=60):
    """Query until a chunk of ``path`` holding ``sentence`` comes back; returns when."""
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        result = call_tool(db, "hybrid_query", {"q": sentence, "k": 5})
        ids = [c["id"] for c in result["chunks"] if c["path"] == path]
        found = db.execute(
            "select count(*) from chunks where id in (select value from json_each(?)) and instr(content, ?)",
            [json.dumps(ids), sentence],
        ).fetchone()[0]
        if found:
            return time.perf_counter()
        time.sleep(0.01)
    raise TimeoutError(f"{sentence!r} not found in {path} after {timeout} s")


def cpu_seconds():
    """User and system CPU seconds of this process and its ended children (workers)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--edits", type=int, default=20)
    parser.add_argument("--burst", type=int, default=100)
    parser.add_argument("--debounce-ms", type=int, default=200)
    parser.add_argument("--workers", type=int, help="Extraction processes of the watcher (default: the Watcher's own)")
    parser.add_argument("--keep", help="Keep the copy and its database in this folder; reused when run again (its bulk figure too)")
    args = parser.parse_args()
    print(machine())
    with contextlib.ExitStack() as stack:
        tmp = args.keep or stack.enter_context(tempfile.TemporaryDirectory())
        folder = pathlib.Path(tmp) / "python-docs"
        database = pathlib.Path(tmp) / "live.db"
        if not database.exists():
            shutil.rmtree(folder, ignore_errors=True)
            shutil.copytree(python_docs(), folder)
            start, cpu = time.perf_counter(), cpu_seconds()
            result = ingest_docs(open_database(database), [str(folder)])
            bulk_seconds, bulk_files, chunks = time.perf_counter() - start, result.ingested, result.chunks
            bulk_cpu = cpu_seconds() - cpu
            (pathlib.Path(tmp) / "bulk-cpu.json").write_text(json.dumps({"cpu_seconds": bulk_cpu}))
        else:  # the first run's bulk ingest, as its ingest_runs row recorded it
            db = open_database(database)
            started, finished, bulk_files, chunks = db.execute(
                "select started_at, finished_at, ingested, chunks from ingest_runs order by id limit 1"
            ).fetchone()
            bulk_seconds = (datetime.datetime.fromisoformat(finished) - datetime.datetime.fromisoformat(started)).total_seconds()
            recorded = pathlib.Path(tmp) / "bulk-cpu.json"
            bulk_cpu = json.loads(recorded.read_text())["cpu_seconds"] if recorded.exists() else None
        files = sorted(p for p in folder.rglob("*.rst.txt"))
        bulk_rate = bulk_files / bulk_seconds
        cpu_note = f", {bulk_cpu / bulk_files:.2f} CPU s per file" if bulk_cpu else ""
        print(f"bulk: {bulk_files} files, {chunks} chunks in {bulk_seconds:.1f} s: {bulk_rate:.2f} files/s{cpu_note}")

        options = {} if args.workers is None else {"workers": args.workers}
        batches = []  # the watcher's one line per batch
        watcher = Watcher(database, [folder], debounce_ms=args.debounce_ms, log=batches.append, **options).start()
        assert watcher.wait_idle(600)
        reader = open_database(database)
        call_tool(reader, "hybrid_query", {"q": "warm up the reader", "k": 5})  # as a running server is
        # Mid-sized files, spread over the folder, each edited once.
        sized = sorted(files, key=lambda p: p.stat().st_size)
        middle = sized[len(sized) // 4 : 3 * len(sized) // 4]
        chosen = middle[:: max(1, len(middle) // args.edits)][: args.edits]
        latencies, done = [], []
        for i, path in enumerate(chosen):
            sentence = nonsense(random.Random(f"edit {i} {time.time()}"))
            with open(path, "a") as fp:
                fp.write(f"\n\n{sentence}\n")
            closed = time.perf_counter()
            found = wait_for_sentence(reader, sentence, str(path))
            latencies.append(found - closed)
            assert watcher.wait_idle(120)
            done.append(time.perf_counter() - closed)
        print(
            f"edit: {len(latencies)} edits, close to hybrid_query: p50 {statistics.median(latencies):.3f} s, "
            f"p95 {percentile(latencies, 0.95):.3f} s, max {max(latencies):.3f} s (debounce {args.debounce_ms} ms); "
            f"close to extracted: p50 {statistics.median(done):.3f} s, p95 {percentile(done, 0.95):.3f} s"
        )

        burst = [p for p in files if p not in chosen][: args.burst]
        before, cpu, batches[:] = watcher.state["files_processed"], cpu_seconds(), []
        for i, path in enumerate(burst):
            with open(path, "a") as fp:
                fp.write(f"\n\nBurst sentence {i}: the quasar heron counts {i} pebbles.\n")
        closed = time.perf_counter()
        time.sleep(args.debounce_ms / 1000 + 0.05)
        assert watcher.wait_idle(600)
        burst_seconds = time.perf_counter() - closed
        indexed = watcher.state["files_processed"] - before
        watcher.stop()
        burst_cpu = cpu_seconds() - cpu
        cpu_note = f", {burst_cpu / indexed:.2f} CPU s per file" if indexed else ""
        if indexed and bulk_cpu:
            cpu_note += f" ({bulk_cpu / bulk_files / (burst_cpu / indexed):.2f}x bulk's files per CPU s)"
        print(
            f"burst: {indexed} of {len(burst)} changed files indexed in {burst_seconds:.1f} s: "
            f"{indexed / burst_seconds:.2f} files/s ({indexed / burst_seconds / bulk_rate:.2f}x bulk){cpu_note}, "
            f"in {len(batches)} batch(es)"
        )
        errors = watcher.state["last_error"]
        print(f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        print(f"watcher: last error {errors}, orphaned entities {call_tool(reader, 'status')['orphaned_entities']}")


if __name__ == "__main__":
    main()
