"""Load: concurrent HTTP clients against a live ``datasette serve`` while files are ingested.

``--clients`` threads (8) each request, in turn, Datasette pages, JSON endpoints and the
``hybrid_query`` tool of a ``datasette serve`` on loopback, while ``llm graphrag ingest``,
in another process, ingests ``--files`` python3.11-doc pages (500: its 497 reStructuredText
sources and 3 HTML pages; index pages included) into the database it serves. The clients stop when the ingest ends, or after
``--max-seconds`` or ``--max-requests``. Reported: requests, failed requests (an error
status, a timeout or a refused connection), answers that say "database is locked" (or a
server log that does), the files indexed, throughput and latency percentiles. Run from
the repository root::

    python bench/bench_load.py [--clients 8] [--files 500] [--max-seconds 1200] [--json]
"""

import argparse
import itertools
import json
import os
import pathlib
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import httpx

from common import PYTHON_DOCS, calibration_ms, machine, python_docs

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tests"))
from conftest import datasette_server  # noqa: E402

from llm_graphrag.db import open_database

DATABASE = "load"  # the database's name in URLs: the file is load.db
QUERIES = ["string formatting", "exceptions", "asyncio event loop", "unicode", "import system"]


def requests_for(database):
    """The mix each client goes through: (kind, path) pairs, repeated in turn."""
    tools = f"/{database}/-/graphrag"
    pages = [
        ("page", "/"),
        ("page", f"/{database}"),
        ("page", f"/{database}/docs"),
        ("page", f"/{database}/entities?_sort_desc=popularity"),
        ("page", f"{tools}/explore"),
    ]
    endpoints = [
        ("json", f"/{database}/docs.json?_size=10&_sort_desc=id"),
        ("json", f"/{database}.json?sql=select+count(*)+from+chunks&_shape=array"),
        ("json", f"{tools}/status"),
        ("json", f"{tools}/entity_lookup?q=python&limit=5"),
        ("json", f"{tools}/topn?limit=5"),
    ]
    queries = [("hybrid_query", f"{tools}/hybrid_query?q={q.replace(' ', '+')}&k=5") for q in QUERIES]
    # Interleaved, so every client mixes the three kinds all along.
    return [r for group in itertools.zip_longest(pages, endpoints, queries) for r in group if r]


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))] if ordered else None


def served(path, log):
    """``datasette serve path`` on a free loopback port (the tests' ``datasette_server``,
    given longer to start on a loaded machine); yields its base URL."""
    return datasette_server(path, log=log, start_seconds=120)


def python_docs_installed():
    return PYTHON_DOCS.exists()


def python_doc_pages(count, smallest=False):
    """``(root, paths)``: ``count`` python3.11-doc pages, the reStructuredText sources (497)
    first in path order, or the smallest first; past those, the smallest HTML pages."""
    sources = python_docs()
    root = sources.parent
    pages = sorted(p for p in sources.rglob("*.txt") if p.is_file())
    if smallest:
        pages.sort(key=lambda p: (p.stat().st_size, p))
    html = sorted(root.rglob("*.html"), key=lambda p: (p.stat().st_size, p))
    pages = (pages + html)[:count]
    if len(pages) < count:
        raise SystemExit(f"only {len(pages)} python3.11-doc pages in {root}, {count} asked for")
    return root, pages


def copy_docs(folder, count, smallest=False):
    """``python_doc_pages()`` copied into ``folder``, sub-folders kept; how many."""
    root, pages = python_doc_pages(count, smallest)
    for path in pages:
        target = folder / path.relative_to(root)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    return len(pages)


def run_load(url, database_path, folder, files, clients=8, max_seconds=1200, max_requests=100_000, log=None, pause=0.0):
    """Clients against ``url`` while ``llm graphrag ingest folder`` runs; the figures.
    Each client waits ``pause`` seconds between its requests (none: as fast as it can)."""
    requests = requests_for(DATABASE)
    results = []  # (kind, seconds, problem or None, locked)
    lock = threading.Lock()
    stop = threading.Event()
    budget = itertools.count()

    def client(offset):
        with httpx.Client(base_url=url, timeout=60) as http:
            for index in itertools.count(offset):
                if stop.is_set() or next(budget) >= max_requests:
                    return
                kind, path = requests[index % len(requests)]
                started = time.perf_counter()
                problem, locked = None, False
                try:
                    response = http.get(path)
                    locked = "database is locked" in response.text
                    if response.status_code != 200:
                        problem = f"{response.status_code} {path}: {response.text[:200]}"
                except httpx.HTTPError as ex:
                    problem = f"{type(ex).__name__} {path}: {ex}"
                with lock:
                    results.append((kind, time.perf_counter() - started, problem, locked))
                if pause:
                    stop.wait(pause)

    ingest = [
        sys.executable, "-m", "llm", "graphrag", "ingest", str(folder), "-d", str(database_path),
        "--include-index-pages", "--include-source-listings", "--json",
    ]
    threads = [threading.Thread(target=client, args=(i * 3,)) for i in range(clients)]
    started = time.perf_counter()
    # A session of its own: on timeout its worker processes are stopped with it (they hold
    # its output pipe open).
    process = subprocess.Popen(
        ingest, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    for thread in threads:
        thread.start()
    try:
        output, errors = process.communicate(timeout=max_seconds)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, errors = process.communicate()
    ingest_seconds = time.perf_counter() - started
    stop.set()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    try:
        summary = json.loads(output)
    except ValueError:
        summary = {"errors": [f"ingest exited with {process.returncode}: {errors[-2000:]}"]}
    db = open_database(database_path, create=False)
    try:
        indexed, extracted = db.execute(
            "select count(*), count(extracted_hash) from docs where path like ? || '%'",
            [str(pathlib.Path(folder).resolve())],
        ).fetchone()
    finally:
        db.close()
    server_log = pathlib.Path(log).read_text(errors="replace") if log else ""
    times = [seconds for _, seconds, _, _ in results]
    by_kind = {}
    for kind in ("page", "json", "hybrid_query"):
        own = [seconds for k, seconds, _, _ in results if k == kind]
        by_kind[kind] = {
            "requests": len(own),
            "p50_ms": round(1000 * percentile(own, 0.5), 1) if own else None,
            "p95_ms": round(1000 * percentile(own, 0.95), 1) if own else None,
        }
    failures = [problem for _, _, problem, _ in results if problem]
    return {
        "clients": clients,
        "files": files,
        "indexed": indexed,
        "extracted": extracted,
        "ingest_returncode": process.returncode,
        "ingest_errors": summary.get("errors", []),
        "ingest_seconds": round(ingest_seconds, 1),
        "requests": len(results),
        "failed": len(failures),
        "failures": failures[:10],
        "locked": sum(1 for *_, locked in results if locked) + server_log.count("database is locked"),
        "throughput_rps": round(len(results) / elapsed, 1),
        "p50_ms": round(1000 * statistics.median(times), 1) if times else None,
        "p95_ms": round(1000 * percentile(times, 0.95), 1) if times else None,
        "by_kind": by_kind,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--files", type=int, default=500)
    parser.add_argument("--max-seconds", type=float, default=1200, help="Stop the ingest and the clients after this long")
    parser.add_argument("--max-requests", type=int, default=100_000, help="Requests from all clients together at most")
    parser.add_argument("--json", action="store_true", help="Print the figures as JSON")
    args = parser.parse_args()
    line = machine()
    calibration = calibration_ms()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        folder = tmp / "python-docs"
        files = copy_docs(folder, args.files)
        database = tmp / f"{DATABASE}.db"
        open_database(database).close()
        log = tmp / "datasette.log"
        with served(database, log) as url:
            figures = run_load(url, database, folder, files, args.clients, args.max_seconds, args.max_requests, log)
    figures = {"machine": line, "calibration_ms": calibration, **figures}
    if args.json:
        print(json.dumps(figures, indent=2))
        return
    print(line)
    print(f"calibration: {calibration} ms")
    print(
        f"{figures['clients']} clients, {figures['files']} files: {figures['indexed']} indexed, "
        f"{figures['extracted']} extracted in {figures['ingest_seconds']} s, "
        f"ingest errors: {len(figures['ingest_errors'])}"
    )
    print(
        f"{figures['requests']} requests, {figures['failed']} failed, {figures['locked']} 'database is locked'; "
        f"{figures['throughput_rps']} requests/s, p50 {figures['p50_ms']} ms, p95 {figures['p95_ms']} ms"
    )
    for kind, row in figures["by_kind"].items():
        print(f"  {kind}: {row['requests']} requests, p50 {row['p50_ms']} ms, p95 {row['p95_ms']} ms")
    for failure in figures["failures"]:
        print("  failed:", failure)


if __name__ == "__main__":
    main()
