"""Deep research without an LLM on python3.11-doc: latency per question, and how many
extractive paragraphs verify.

Asks 20 developer questions (most of them in two parts, the way people ask) of a graphrag
database of Debian's python3.11-doc reStructuredText sources, built once with the normal
ingest and cached (``--database``). For each question ``deep_research`` runs ``--rounds``
times after one warm-up round; the figure is the median of each question's times, and the
p50 and p95 of those over the 20 questions. Then each question is researched once into a
run directory (extractive paragraphs, then the verify stage): the share of paragraphs
that verify, and of runs whose verify.json passes. Targets: p50 <= 1 s, >= 95%.

    python bench/bench_research.py [--database PATH] [--rounds 3]
"""

import argparse
import json
import pathlib
import statistics
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from common import calibration_ms, machine, python_docs  # noqa: E402

DATABASE = pathlib.Path("/tmp/graphrag-bench/python3.11-doc.db")

QUESTIONS = [
    "How do I read a file line by line and strip the trailing newline?",
    "What is the difference between a list and a tuple?",
    "How does asyncio.wait_for cancel a task when the timeout expires?",
    "How do json.dumps indent and sort_keys change the output?",
    "How do I run a command with subprocess.run and capture its output?",
    "What does the with statement do and how does contextlib.contextmanager implement it?",
    "How are exceptions chained with raise from and what does __cause__ hold?",
    "How does functools.lru_cache decide which entries to evict?",
    "What is the global interpreter lock and how does it affect threading?",
    "How do dataclasses handle mutable default values with default_factory?",
    "How does pathlib.Path.glob match files recursively?",
    "How do I make a datetime timezone aware with zoneinfo?",
    "How does unittest.mock.patch replace an object during a test?",
    "How do queue.Queue and threading.Thread work together for a producer and a consumer?",
    "How do I define an abstract base class with abc.ABC and abstractmethod?",
    "How does import find modules on sys.path and what does importlib do?",
    "How does logging.basicConfig set up handlers and formatters?",
    "How does argparse parse optional and positional arguments?",
    "How does sqlite3 substitute parameters into a query and why avoid string formatting?",
    "How does garbage collection handle reference cycles and what does gc.collect return?",
]


def build(database, source):
    from llm_graphrag.db import open_database
    from llm_graphrag.ingest import ingest_docs

    database.parent.mkdir(parents=True, exist_ok=True)
    print(f"Building {database} from {source} (once, several minutes)...", flush=True)
    started = time.perf_counter()
    result = ingest_docs(open_database(database), [str(source)])
    print(f"  {result.ingested} documents, {result.chunks} chunks in "
          f"{time.perf_counter() - started:.0f}s", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database", type=pathlib.Path, default=DATABASE)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    from llm_graphrag.db import open_database
    from llm_graphrag.research import ResearchOptions, research
    from llm_graphrag.research_run import write_run
    from llm_graphrag.verify import verify_directory

    if not args.database.exists():
        build(args.database, python_docs())
    db = open_database(args.database, create=False)
    counts = {t: db[t].count for t in ("docs", "chunks", "entities", "relations")}
    print(machine())
    print(f"calibration: {calibration_ms()} ms (a fixed single-core workload; lower is a faster moment)")
    print(f"Database: {args.database}: " + ", ".join(f"{v:,} {k}" for k, v in counts.items()))
    options = ResearchOptions()
    print(f"{len(QUESTIONS)} questions x {args.rounds} rounds after one warm-up round; "
          f"options: {options}")

    for question in QUESTIONS:
        research(db, question, options)
    times = {question: [] for question in QUESTIONS}
    stats = []
    for _ in range(args.rounds):
        for question in QUESTIONS:
            started = time.perf_counter()
            found = research(db, question, options)
            times[question].append((time.perf_counter() - started) * 1000)
            stats.append(found.stats)
    medians = [statistics.median(t) for t in times.values()]
    p50, p95 = statistics.median(medians), float(np.percentile(medians, 95))
    print(f"latency per question (median of {args.rounds}): p50 {p50:.0f} ms, p95 {p95:.0f} ms, "
          f"max {max(medians):.0f} ms")
    total = sum(s["sub_queries_total"] for s in stats)
    print(
        "sub-queries: {:.1f} per question; {} completed, {} failed, {} timed out; "
        "{:.1f} unique results and {:.1f} evidence chains per question".format(
            total / len(stats),
            sum(s["sub_queries_completed"] for s in stats),
            sum(s["sub_queries_failed"] for s in stats),
            sum(s["sub_queries_timed_out"] for s in stats),
            statistics.mean(s["unique_memories_found"] for s in stats),
            statistics.mean(s["evidence_chains_found"] for s in stats),
        )
    )

    paragraphs = passed = runs_passed = claims = conflicts = 0
    run_times = []
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, question in enumerate(QUESTIONS):
            run_dir = pathlib.Path(tmp) / f"run-{i:02d}"
            started = time.perf_counter()
            write_run(db, question, run_dir, options)
            run_times.append((time.perf_counter() - started) * 1000)
            report = verify_directory(run_dir)
            summary = json.loads((run_dir / "evidence/verify.json").read_text())
            assert summary == report.summary
            paragraphs += summary["total_paragraphs"]
            passed += sum(p["passed"] for p in report.paragraphs)
            runs_passed += summary["passed"]
            claims += summary["verified_claims_count"]
            conflicts += summary["conflicts_count"]
            failures += [(question, p) for p in report.paragraphs if not p["passed"]]
    print(
        f"run directories: p50 {statistics.median(run_times):.0f} ms per question; "
        f"{paragraphs} extractive paragraphs, {passed} verify "
        f"({100 * passed / max(paragraphs, 1):.1f}%); {claims} claims verified; "
        f"{conflicts} conflicts; {runs_passed} of {len(QUESTIONS)} runs pass"
    )
    for question, paragraph in failures:
        print(f"  failed: {question!r} paragraph {paragraph['index'] + 1}: "
              + "; ".join(c["text"][:80] for c in paragraph["claims"] if not c["supported"]))


if __name__ == "__main__":
    main()
