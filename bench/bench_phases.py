"""Where an extraction run's calling process spends its time, phase by phase.

    python bench/bench_phases.py             # python3.11-doc, as bench_extraction.py loads it
    python bench/bench_phases.py --limit 60

One ``extract_and_link`` over the corpus of ``bench_extraction.py`` (one document per
``.rst.txt`` source, chunks of about 300 words), with the extraction module's own phases
wrapped to sum their wall-clock and CPU seconds in this process: each ``_run`` (the first
pass, then every again round with its document count), each ``refine_graph`` and the steps
between. Worker processes' CPU is not counted here (``bench_extraction.py`` reports it).
"""

import argparse
import collections
import functools
import json
import pathlib
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import bench_extraction  # noqa: E402
from common import machine  # noqa: E402

from llm_graphrag import extract  # noqa: E402
from llm_graphrag.db import open_database  # noqa: E402

PHASES = ("_extract", "_again_rounds", "_absorbing", "_misplaced_generic", "_orphaned", "_naming_rows", "_links", "_flush")


def timed(totals, calls, log, name, note=None):
    """Wrap ``extract.<name>`` to sum its seconds; ``note(args, kwargs)`` logs each call."""
    function = getattr(extract, name)

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            return function(*args, **kwargs)
        finally:
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            totals[name][0] += wall
            totals[name][1] += cpu
            calls[name] += 1
            if note:
                log.append({"phase": name, "wall": round(wall, 2), "cpu": round(cpu, 2), **note(args, kwargs)})

    setattr(extract, name, wrapper)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, help="only the first N documents")
    args = parser.parse_args()
    files = sorted(bench_extraction.CORPUS.rglob("*.rst.txt"))[: args.limit or None]
    if not files:
        sys.exit(f"No corpus at {bench_extraction.CORPUS}: apt-get install -y python3.11-doc")
    totals, calls, log = collections.defaultdict(lambda: [0.0, 0.0]), collections.Counter(), []
    timed(totals, calls, log, "_run", lambda a, k: {"documents": len(a[1]), "again_round": bool(k.get("relink"))})
    timed(totals, calls, log, "refine_graph", lambda a, k: {"entities_in_scope": len(k.get("entity_ids") or []) or "all"})
    for name in PHASES:
        timed(totals, calls, log, name)
    with tempfile.TemporaryDirectory() as tmp:
        db = open_database(pathlib.Path(tmp) / "phases.db")
        bench_extraction.load_corpus(db, files)
        from llm_graphrag.embeddings import embedder_for

        embedder_for(db).encode(["warm up"])  # the model's one-off load is not timed
        wall, cpu = time.perf_counter(), time.process_time()
        extract.extract_and_link(db)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(json.dumps({
        "machine": machine(),
        "documents": len(files),
        "seconds": round(wall, 2),
        "cpu_seconds_this_process": round(cpu, 2),
        "calls": log,
        "totals": {name: {"calls": calls[name], "wall": round(w, 2), "cpu": round(c, 2)} for name, (w, c) in totals.items()},
    }, indent=2))


if __name__ == "__main__":
    main()
