"""Benchmark: the bfsvtab extension against recursive CTEs and networkx, side by side.

Two graphs in one SQLite file, built fresh each run:

- a random directed graph of 200,000 nodes and 1,000,000 edges (seeded), indexed on
  ``src`` and ``dst`` like the project's ``relations`` table;
- a chain of 18 diamonds (a->b, a->c, b->d, c->d, then d is the next a): 2^18 paths
  from the first node to the last, which a ``UNION ALL`` CTE enumerates one by one.

Run:  python bench/bench_traversal.py        (about two minutes on 2 cores)
"""

import argparse
import pathlib
import random
import statistics
import tempfile
import time

import networkx as nx
from common import machine

from llm_graphrag import traversal
from llm_graphrag.db import sqlite3

BFS = (
    "select id, distance from bfsvtab where tablename = ? and fromcolumn = 'src' "
    "and tocolumn = 'dst' and root = ?"
)
BFS_2HOP = BFS + " and max_depth = 2"
# Forces one index lookup per node: an id no graph holds makes bfsvtab expand
# node by node until everything reachable is seen.
BFS_LOOKUPS = BFS + " and id = -1"
CTE_BOUNDED = """
with recursive r(id, d) as (
  select ?2, 0
  union
  select e.dst, r.d + 1 from r join {t} e on e.src = r.id where r.d < ?3
)
select id, min(d) from r group by id
"""
CTE_UNION = """
with recursive r(id) as (select ?2 union select e.dst from r join {t} e on e.src = r.id)
select id from r
"""
CTE_UNION_ALL = """
with recursive r(id, d) as (
  select ?2, 0 union all select e.dst, r.d + 1 from r join {t} e on e.src = r.id
)
select id, min(d) from r group by id
"""
WARM = [
    "select sum(src), sum(dst) from edges",
    "select count(*) from edges indexed by edges_src where src >= 0",
    "select count(*) from edges indexed by edges_dst where dst >= 0",
    "select count(*) from diamonds indexed by diamonds_src where src >= 0",
]


def machine_line():
    return f"{machine()}; networkx {nx.__version__}"


def build(path, nodes, edges, diamonds, seed):
    conn = sqlite3.connect(path)
    rng = random.Random(seed)
    with conn:
        conn.execute("create table edges (src integer, dst integer)")
        conn.executemany(
            "insert into edges values (?, ?)",
            ((rng.randrange(nodes), rng.randrange(nodes)) for _ in range(edges)),
        )
        conn.execute("create index edges_src on edges(src)")
        conn.execute("create index edges_dst on edges(dst)")
        conn.execute("create table diamonds (src integer, dst integer)")
        rows = []
        for i in range(diamonds):
            a, b, c, d = 3 * i, 3 * i + 1, 3 * i + 2, 3 * i + 3
            rows += [(a, b), (a, c), (b, d), (c, d)]
        conn.executemany("insert into diamonds values (?, ?)", rows)
        conn.execute("create index diamonds_src on diamonds(src)")
    conn.execute("analyze")
    conn.close()


def timed(fn):
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def run_query(conn, sql, params):
    return lambda: conn.execute(sql, params).fetchall()


def networkx_bfs(path, table, root, cutoff=None):
    """Read the edges from SQLite, build a DiGraph, BFS: what a Python user would do."""

    def go():
        conn = sqlite3.connect(path)
        graph = nx.DiGraph()
        graph.add_edges_from(conn.execute(f"select src, dst from {table}"))
        conn.close()
        return nx.single_source_shortest_path_length(graph, root, cutoff=cutoff)

    return go


def fmt(seconds):
    if seconds < 1e-3:
        return f"{seconds * 1e6:9.1f} us"
    if seconds < 1:
        return f"{seconds * 1e3:9.2f} ms"
    return f"{seconds:9.3f} s "


def report(title, results, baseline):
    print(f"\n{title}")
    base = statistics.median(results[baseline])
    for name, times in results.items():
        median = statistics.median(times)
        ratio = median / base
        print(f"  {name:<44} median {fmt(median)}  ({len(times)} runs)  {ratio:8.2f}x ours")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=200_000)
    parser.add_argument("--edges", type=int, default=1_000_000)
    parser.add_argument("--diamonds", type=int, default=18)
    parser.add_argument("--roots", type=int, default=100, help="roots for 2-hop medians")
    parser.add_argument("--full-roots", type=int, default=5, help="roots for full reachability")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    print(machine_line())
    with tempfile.TemporaryDirectory() as tmp:
        path = str(pathlib.Path(tmp) / "bench.db")
        seconds, _ = timed(lambda: build(path, args.nodes, args.edges, args.diamonds, args.seed))
        print(
            f"random graph: {args.nodes:,} nodes, {args.edges:,} edges; "
            f"diamond chain: {args.diamonds} levels; built in {seconds:.1f} s"
        )
        conn = sqlite3.connect(path)
        traversal.load(conn)
        rng = random.Random(args.seed + 1)
        # Every page in SQLite's cache, so neither side pays the first read.
        conn.execute("pragma cache_size = -500000")
        for sql in WARM:
            conn.execute(sql).fetchall()
        for root in range(5):
            run_query(conn, BFS_2HOP, ["edges", root])()
            run_query(conn, CTE_BOUNDED.format(t="edges"), ["edges", root, 2])()

        # 2 hops from random roots: index lookups node by node.
        two_hop = {"bfsvtab max_depth = 2": [], "recursive CTE, depth-bounded (d < 2)": []}
        sizes = []
        for n, root in enumerate(rng.sample(range(args.nodes), args.roots)):
            ours_q = run_query(conn, BFS_2HOP, ["edges", root])
            cte_q = run_query(conn, CTE_BOUNDED.format(t="edges"), ["edges", root, 2])
            if n % 2:  # alternate which goes first
                t2, cte = timed(cte_q)
                t1, ours = timed(ours_q)
            else:
                t1, ours = timed(ours_q)
                t2, cte = timed(cte_q)
            assert sorted(ours) == sorted(cte), root
            two_hop["bfsvtab max_depth = 2"].append(t1)
            two_hop["recursive CTE, depth-bounded (d < 2)"].append(t2)
            sizes.append(len(ours))
        report(
            f"2-hop expansion, random graph ({args.roots} random roots, "
            f"median {statistics.median(sizes):.0f} nodes reached)",
            two_hop,
            "bfsvtab max_depth = 2",
        )

        # Full reachability: every node reachable from the root, with distances.
        full = {
            "bfsvtab, no limit (reads all edges once)": [],
            "bfsvtab, one index lookup per node": [],
            "recursive CTE, UNION (ids only)": [],
            "networkx BFS incl. reading the edges": [],
        }
        reached = []
        for root in rng.sample(range(args.nodes), args.full_roots):
            t1, ours = timed(run_query(conn, BFS, ["edges", root]))
            t2, _ = timed(run_query(conn, BFS_LOOKUPS, ["edges", root]))
            t3, cte = timed(run_query(conn, CTE_UNION.format(t="edges"), ["edges", root]))
            t4, lengths = timed(networkx_bfs(path, "edges", root))
            assert dict(ours) == lengths and len(cte) == len(ours), root
            for name, t in zip(full, (t1, t2, t3, t4)):
                full[name].append(t)
            reached.append(len(ours))
        report(
            f"Full reachability, random graph ({args.full_roots} random roots, "
            f"median {statistics.median(reached):,.0f} nodes reached)",
            full,
            "bfsvtab, no limit (reads all edges once)",
        )

        # The diamond chain: few nodes, exponentially many paths.
        end = 3 * args.diamonds
        diamond = {
            "bfsvtab, no limit": [],
            "bfsvtab, id = last node (stops there)": [],
            f"recursive CTE, depth-bounded (d < {2 * args.diamonds})": [],
            "recursive CTE, UNION (ids only)": [],
            "recursive CTE, UNION ALL": [],
            "networkx BFS incl. reading the edges": [],
        }
        for n in range(50):  # the slow two only 5 times
            t1, ours = timed(run_query(conn, BFS, ["diamonds", 0]))
            t2, last = timed(run_query(conn, BFS + " and id = ?", ["diamonds", 0, end]))
            t3, bounded = timed(
                run_query(
                    conn, CTE_BOUNDED.format(t="diamonds"), ["diamonds", 0, 2 * args.diamonds]
                )
            )
            t4, _ = timed(run_query(conn, CTE_UNION.format(t="diamonds"), ["diamonds", 0]))
            assert sorted(ours) == sorted(bounded) and last == [(end, 2 * args.diamonds)]
            times = [t1, t2, t3, t4]
            if n < 5:
                t5, all_paths = timed(
                    run_query(conn, CTE_UNION_ALL.format(t="diamonds"), ["diamonds", 0])
                )
                t6, lengths = timed(networkx_bfs(path, "diamonds", 0))
                assert sorted(ours) == sorted(all_paths) and dict(ours) == lengths
                times += [t5, t6]
            for name, t in zip(diamond, times):
                diamond[name].append(t)
        report(
            f"Diamond chain of {args.diamonds} levels ({end + 1} nodes, 2^{args.diamonds} paths)",
            diamond,
            "bfsvtab, no limit",
        )
        conn.close()

    ours_2hop = statistics.median(two_hop["bfsvtab max_depth = 2"])
    cte_2hop = statistics.median(two_hop["recursive CTE, depth-bounded (d < 2)"])
    ours_full = statistics.median(full["bfsvtab, no limit (reads all edges once)"])
    nx_full = statistics.median(full["networkx BFS incl. reading the edges"])
    ours_diamond = statistics.median(diamond["bfsvtab, no limit"])
    union_all = statistics.median(diamond["recursive CTE, UNION ALL"])
    print("\nTargets")
    print(f"  2-hop faster than depth-bounded CTE:      {cte_2hop / ours_2hop:8.1f}x faster")
    print(
        f"  full reachability within 2x of networkx:  {ours_full / nx_full:8.2f}x networkx's time"
    )
    print(f"  diamond chain >= 100x faster than UNION ALL: {union_all / ours_diamond:8.0f}x faster")


if __name__ == "__main__":
    main()
