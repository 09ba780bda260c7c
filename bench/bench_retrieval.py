"""Retrieval latency: ``hybrid_query`` per mode, and vector KNN over 1M vectors.

Two benchmarks, both printing medians with the machine they ran on:

``query``: p50/p95 latency of ``hybrid_query`` in each mode over a graphrag database
(by default Debian's python3.11-doc reStructuredText sources, ingested once into a cached
database: ``apt-get install python3.11-doc``), asking a fixed list of Python questions.

``knn``: the toolkit's vector search (``llm_graphrag.retrieval.vector_search``, what
``hybrid_query`` calls) over a graphrag database holding N synthetic 256-d unit vectors
(clustered, like text embeddings), written the toolkit's way: one tiny document and chunk
per vector, vectors through ``write_embeddings`` so the triggers fill ``chunk_vec``
(built once and cached). Side by side, per query: the exact ``chunk_vec`` vec0 scan (bit
index disabled) and the bit index with exact rescoring of its top candidates; reports the
index build time, p50/p95 latency and recall@k against the exact scan and against numpy.

    python bench/bench_retrieval.py query [--database PATH] [--source FOLDER]
    python bench/bench_retrieval.py knn [--vectors 1000000] [--queries 50] [--k 10 50]
"""

import argparse
import os
import pathlib
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from common import machine  # noqa: E402

SOURCE = "/usr/share/doc/python3.11/html/_sources"
CACHE = pathlib.Path(os.environ.get("XDG_CACHE_HOME", "~/.cache")).expanduser() / "graphrag-bench"

QUESTIONS = [
    "how do I read a file line by line",
    "difference between a list and a tuple",
    "how to create a virtual environment",
    "what does the with statement do",
    "asyncio event loop run until complete",
    "how are exceptions chained with raise from",
    "format a float with two decimal places",
    "sort a dictionary by value",
    "what is the global interpreter lock",
    "how to use subprocess to run a command and capture output",
    "regular expression named groups",
    "json dumps indent and sort keys",
    "decorators with arguments",
    "what is a generator expression",
    "how does garbage collection handle reference cycles",
    "pathlib glob recursive",
    "datetime timezone aware objects",
    "unittest mock patch an object",
    "thread safe queue between producer and consumer",
    "how to define an abstract base class",
    "dataclass default factory for mutable fields",
    "what are f-strings",
    "unicode normalization of strings",
    "socket server listen and accept connections",
    "logging configuration with handlers and formatters",
    "how does import find modules on sys.path",
    "multiprocessing pool map",
    "typing generics and TypeVar",
    "context manager contextlib",
    "how to parse command line arguments with argparse",
    "sqlite3 parameter substitution",
    "iterating over two lists in parallel with zip",
    "what is the walrus operator",
    "structural pattern matching match statement",
    "how to compare floating point numbers",
    "enum members and values",
    "what does __slots__ do",
    "reading csv files with a header row",
    "computing a hash of a file with hashlib",
    "functools lru_cache",
]


def percentiles(values):
    values = sorted(values)
    return statistics.median(values), float(np.percentile(values, 95))


def bench_query(args):
    from llm_graphrag.db import open_database
    from llm_graphrag.retrieval import MODES, RetrievalOptions, hybrid_query

    database = pathlib.Path(args.database or CACHE / "python3.11-doc.db")
    if not database.exists():
        from llm_graphrag.ingest import ingest_docs

        database.parent.mkdir(parents=True, exist_ok=True)
        print(f"Building {database} from {args.source} (once)...", flush=True)
        started = time.perf_counter()
        result = ingest_docs(open_database(database), [args.source])
        print(
            f"  {result.ingested} documents, {result.chunks} chunks in "
            f"{time.perf_counter() - started:.0f}s",
            flush=True,
        )
    db = open_database(database, create=False)
    counts = {t: db[t].count for t in ("docs", "chunks", "entities", "mentions", "relations")}
    print(f"Database: {database}: " + ", ".join(f"{v:,} {k}" for k, v in counts.items()))
    print(f"{len(QUESTIONS)} questions x {args.rounds} rounds per mode, after one warm-up round")
    print(f"{'mode':<8} {'p50 ms':>8} {'p95 ms':>8}")
    for mode in MODES:
        options = RetrievalOptions(mode=mode, k=10)
        for question in QUESTIONS:
            hybrid_query(db, question, options)
        times = []
        for _ in range(args.rounds):
            for question in QUESTIONS:
                started = time.perf_counter()
                hybrid_query(db, question, options)
                times.append((time.perf_counter() - started) * 1000)
        p50, p95 = percentiles(times)
        print(f"{mode:<8} {p50:8.2f} {p95:8.2f}")


def synthetic_vectors(n, dim, seed=0, clusters=2000, spread=0.6):
    """Unit vectors around random cluster centres (text embeddings are clustered too)."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((clusters, dim)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    out = np.empty((n, dim), dtype=np.float32)
    step = 100_000
    for start in range(0, n, step):
        size = min(step, n - start)
        which = rng.integers(0, clusters, size)
        noise = rng.standard_normal((size, dim)).astype(np.float32) * (spread / np.sqrt(dim))
        block = centres[which] + noise
        out[start : start + size] = block / np.linalg.norm(block, axis=1, keepdims=True)
    return out


def build_knn_database(path, vectors, step=50_000):
    """A graphrag database with one tiny document and chunk per vector.

    Rows go in through SQL in transactions of ``step`` rows, vectors through
    ``write_embeddings``, whose triggers mirror them into ``chunk_vec``.
    """
    from llm_graphrag.db import open_database
    from llm_graphrag.embeddings import write_embeddings

    partial = path.with_name(path.name + ".partial")
    for suffix in ("", "-wal", "-shm"):
        pathlib.Path(str(partial) + suffix).unlink(missing_ok=True)
    db = open_database(partial)
    for start in range(0, len(vectors), step):
        ids = range(start + 1, min(start + step, len(vectors)) + 1)
        with db.conn:
            db.conn.executemany(
                "insert into docs (id, path) values (?, ?)", [(i, f"synthetic/{i}") for i in ids]
            )
            db.conn.executemany(
                "insert into chunks (id, doc_id, seq, content) values (?, ?, 0, ?)",
                [(i, i, f"chunk {i}") for i in ids],
            )
            write_embeddings(db, "chunks", ids, vectors[start : ids.stop - 1])
        print(f"  {ids.stop - 1:,} chunks", flush=True)
    db.close()
    partial.rename(path)


def perturbed_queries(vectors, count, seed=1, spread=0.6):
    """New points near stored ones (a data point plus noise), not copies."""
    rng = np.random.default_rng(seed)
    dim = vectors.shape[1]
    near = vectors[rng.integers(0, len(vectors), count)]
    queries = near + rng.standard_normal((count, dim)).astype(np.float32) * (spread / np.sqrt(dim))
    return (queries / np.linalg.norm(queries, axis=1, keepdims=True)).astype("<f4")


def bench_knn(args):
    from llm_graphrag.db import open_database
    from llm_graphrag.retrieval import (
        BIT_INDEXES,
        RetrievalOptions,
        chunk_bit_index,
        vector_search,
    )

    dim = 256
    n = args.vectors
    path = pathlib.Path(args.database or CACHE / f"knn-graphrag-{n}.db")
    started = time.perf_counter()
    vectors = synthetic_vectors(n, dim)
    print(f"{n:,} synthetic {dim}-d unit vectors generated in "
          f"{time.perf_counter() - started:.1f}s", flush=True)
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        print(f"Building {path} (once)...", flush=True)
        started = time.perf_counter()
        build_knn_database(path, vectors)
        elapsed = time.perf_counter() - started
        print(f"Built in {elapsed:.0f}s ({n / elapsed:,.0f} chunks/s)", flush=True)
    db = open_database(path, create=False)
    print(f"Database: {path}: {db['chunks'].count:,} chunks")

    BIT_INDEXES.clear()
    started = time.perf_counter()
    index = chunk_bit_index(db, 0)
    print(f"Bit index counted and built from the embeddings table in "
          f"{time.perf_counter() - started:.2f}s (once per database change): "
          f"{len(index):,} rows, {(index.bits.nbytes + index.ids.nbytes) / 2**20:.0f} MiB")

    queries = perturbed_queries(vectors, args.queries)
    exact = RetrievalOptions(bit_index_min_chunks=None)
    default = RetrievalOptions()
    methods = [("exact vec0 scan", exact)] + [
        (
            f"bit index top {c} + rescoring",
            RetrievalOptions(bit_index_min_chunks=0, bit_candidates=c),
        )
        for c in args.candidates
    ]
    methods.append((f"default options (top {default.bit_candidates})", default))
    print(f"{args.queries} perturbed-data-point queries; each query runs every method in turn "
          "(one warm-up query first)")
    for k in args.k:
        truth = []
        for query in queries:
            top = np.argpartition(-(vectors @ query), k)[:k]
            truth.append(set((top + 1).tolist()))
        for _, options in methods:
            vector_search(db, queries[0], k, options)
        times = {name: [] for name, _ in methods}
        recall_exact = {name: [] for name, _ in methods}
        recall_numpy = {name: [] for name, _ in methods}
        for query, expected in zip(queries, truth):
            found = {}
            for name, options in methods:
                started = time.perf_counter()
                rows = vector_search(db, query, k, options)
                times[name].append((time.perf_counter() - started) * 1000)
                found[name] = {row[0] for row in rows}
            for name, _ in methods:
                recall_exact[name].append(len(found[name] & found["exact vec0 scan"]) / k)
                recall_numpy[name].append(len(found[name] & expected) / k)
        print(f"\nk={k}")
        print(f"{'method':<32} {'p50 ms':>8} {'p95 ms':>8} {'recall vs vec0':>15} "
              f"{'recall vs numpy':>16}")
        for name, _ in methods:
            p50, p95 = percentiles(times[name])
            print(
                f"{name:<32} {p50:8.1f} {p95:8.1f} {statistics.mean(recall_exact[name]):15.3f} "
                f"{statistics.mean(recall_numpy[name]):16.3f}",
                flush=True,
            )


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="bench", required=True)
    query = sub.add_parser("query", help="hybrid_query latency per mode")
    query.add_argument("--database", help="graphrag database (default: cached python3.11-doc)")
    query.add_argument("--source", default=SOURCE, help="folder to ingest when building")
    query.add_argument("--rounds", type=int, default=5)
    knn = sub.add_parser("knn", help="vector KNN over synthetic vectors")
    knn.add_argument("--vectors", type=int, default=1_000_000)
    knn.add_argument("--queries", type=int, default=50)
    knn.add_argument("--k", type=int, nargs="+", default=[10, 50],
                     help="neighbours asked for (hybrid_query asks for vector_candidates=50)")
    knn.add_argument("--candidates", type=int, nargs="+", default=[200, 400, 800],
                     help="bit index candidates rescored exactly")
    knn.add_argument("--database", help="graphrag database file (default: cached)")
    args = parser.parse_args()
    print(f"Machine: {machine()}")
    if args.bench == "query":
        bench_query(args)
    else:
        bench_knn(args)


if __name__ == "__main__":
    main()
