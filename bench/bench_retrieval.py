"""Retrieval latency: ``hybrid_query`` per mode, and vector KNN over 1M vectors.

Two benchmarks, both printing medians with the machine they ran on:

``query``: p50/p95 latency of ``hybrid_query`` in each mode over a graphrag database
(by default Debian's python3.11-doc reStructuredText sources, ingested once into a cached
database: ``apt-get install python3.11-doc``), asking a fixed list of Python questions.

``knn``: KNN over N synthetic 256-d unit vectors (clustered, like text embeddings) in
sqlite-vec: exact ``vec0`` ``float[256]`` search, against a binary index (sign bits from
``vec_quantize_binary``, stored in SQLite, scanned in memory with numpy) whose top
candidates are rescored exactly with ``vec_distance_cosine`` on the float32 blobs.
Reports p50/p95 latency and recall@10 against exact search.

    python bench/bench_retrieval.py query [--database PATH] [--source FOLDER]
    python bench/bench_retrieval.py knn [--vectors 1000000] [--queries 50]
"""

import argparse
import os
import pathlib
import platform
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from llm_graphrag.db import connect, sqlite3  # noqa: E402

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


def machine():
    cpu = platform.processor() or "unknown"
    try:
        with open("/proc/cpuinfo") as fp:
            for line in fp:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    version = sqlite3.connect(":memory:").execute("select sqlite_version()").fetchone()[0]
    return (
        f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"SQLite {version}"
    )


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


def build_knn_database(path, vectors, with_float):
    """Float32 blobs (for rescoring), their sign bits, and optionally a vec0 float index."""
    conn = connect(path)
    dim = vectors.shape[1]
    conn.execute("PRAGMA journal_mode=OFF")
    conn.execute("PRAGMA synchronous=OFF")
    conn.execute("create table vectors (id integer primary key, embedding blob)")
    conn.execute("create table vector_bits (id integer primary key, bits blob)")
    if with_float:
        conn.execute(
            f"create virtual table vec_float using vec0(embedding float[{dim}] distance_metric=cosine)"
        )
    step = 50_000
    for start in range(0, len(vectors), step):
        rows = [
            (start + i + 1, vectors[start + i].tobytes())
            for i in range(min(step, len(vectors) - start))
        ]
        with conn:
            conn.executemany("insert into vectors (id, embedding) values (?, ?)", rows)
            conn.executemany(
                "insert into vector_bits (id, bits) values (?, vec_quantize_binary(?))", rows
            )
            if with_float:
                conn.executemany("insert into vec_float (rowid, embedding) values (?, ?)", rows)
    return conn


RESCORE = (
    "select id, vec_distance_cosine(embedding, ?) from vectors "
    "where id in (select value from json_each(?))"
)


def bench_knn(args):
    from llm_graphrag.retrieval import BitIndex

    dim = 256
    n = args.vectors
    path = pathlib.Path(args.database or CACHE / f"knn-{n}.db")
    print(f"{n:,} synthetic {dim}-d unit vectors, {args.queries} queries, k=10")
    vectors = synthetic_vectors(n, dim)
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        started = time.perf_counter()
        build_knn_database(str(path), vectors, with_float=not args.no_float).close()
        print(f"Built {path} in {time.perf_counter() - started:.0f}s", flush=True)
    conn = connect(str(path))
    has_float = bool(
        conn.execute("select 1 from sqlite_master where name = 'vec_float'").fetchone()
    )
    started = time.perf_counter()
    index = BitIndex(conn, "vector_bits")
    print(f"Bit index loaded into memory in {(time.perf_counter() - started) * 1000:.0f} ms "
          f"({index.bits.nbytes / 2**20:.0f} MiB)")
    # Queries: new points near the data (a cluster centre's neighbourhood), not copies.
    rng = np.random.default_rng(1)
    near = vectors[rng.integers(0, n, args.queries)]
    queries = near + rng.standard_normal((args.queries, dim)).astype(np.float32) * (
        0.6 / np.sqrt(dim)
    )
    queries = (queries / np.linalg.norm(queries, axis=1, keepdims=True)).astype("<f4")
    truth = []
    for query in queries:
        scores = vectors @ query
        top = np.argpartition(-scores, 10)[:10]
        truth.append(set((top + 1).tolist()))
    methods = []
    if has_float and not args.skip_exact:
        methods.append(
            (
                "vec0 float[256] exact",
                lambda q: [
                    r[0]
                    for r in conn.execute(
                        "select rowid from vec_float where embedding match ? and k = 10",
                        [q.tobytes()],
                    )
                ],
            )
        )
    for candidates in args.candidates:
        methods.append(
            (
                f"bit index top {candidates} + rescoring",
                lambda q, c=candidates: [r[0] for r in index.search(q, 10, c, RESCORE)],
            )
        )
    print(f"{'method':<36} {'p50 ms':>8} {'p95 ms':>8} {'recall@10':>10}")
    for name, search in methods:
        search(queries[0])
        times, recalls = [], []
        for query, expected in zip(queries, truth):
            started = time.perf_counter()
            found = search(query)
            times.append((time.perf_counter() - started) * 1000)
            recalls.append(len(expected & set(found)) / 10)
        p50, p95 = percentiles(times)
        print(f"{name:<36} {p50:8.1f} {p95:8.1f} {statistics.mean(recalls):10.3f}", flush=True)


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
    knn.add_argument("--candidates", type=int, nargs="+", default=[200, 400, 800])
    knn.add_argument("--skip-exact", action="store_true", help="skip the slow exact vec0 search")
    knn.add_argument("--database", help="vector database file (default: cached)")
    knn.add_argument("--no-float", action="store_true", help="skip the exact float index")
    args = parser.parse_args()
    print(f"Machine: {machine()}")
    if args.bench == "query":
        bench_query(args)
    else:
        bench_knn(args)


if __name__ == "__main__":
    main()
