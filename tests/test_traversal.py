"""The bfsvtab traversal extension, against exact rows and a Python reference BFS."""

import importlib.machinery
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llm_graphrag import traversal
from llm_graphrag.db import sqlite3

ALL = "select id, parent, distance, shortest_path, weight, path from bfsvtab where "
EDGES = "tablename = 'edges' and fromcolumn = 'src' and tocolumn = 'dst' and "


def connect(path):
    conn = sqlite3.connect(str(path))
    traversal.load(conn)
    return conn


@pytest.fixture
def conn(tmp_path):
    conn = connect(tmp_path / "graph.db")
    yield conn
    conn.close()


def make_edges(conn, rows, indexed=True, name="edges"):
    quoted = '"' + name.replace('"', '""') + '"'
    conn.execute(f"create table {quoted} (src, dst, rel, weight)")
    if indexed:
        conn.execute(f"create index idx_src on {quoted}(src)")
        conn.execute(f"create index idx_dst on {quoted}(dst)")
    conn.executemany(
        f"insert into {quoted} values (?, ?, ?, ?)",
        [tuple(row) + (None,) * (4 - len(row)) for row in rows],
    )


# The diamond 1 -> {2, 3} -> 4, then 4 -> 5 -> 6 and a cycle 6 -> 1.
DIAMOND = [(1, 2), (1, 3), (2, 4), (3, 4), (4, 5), (5, 6), (6, 1)]


def test_original_interface_table_valued(conn):
    make_edges(conn, DIAMOND)
    rows = conn.execute(ALL + EDGES + "root = 1").fetchall()
    assert rows == [
        (1, None, 0, "/1/", 1.0, "[1]"),
        (2, 1, 1, "/1/2/", 1.0, "[1,2]"),
        (3, 1, 1, "/1/3/", 1.0, "[1,3]"),
        (4, 2, 2, "/1/2/4/", 1.0, "[1,2,4]"),
        (5, 4, 3, "/1/2/4/5/", 1.0, "[1,2,4,5]"),
        (6, 5, 4, "/1/2/4/5/6/", 1.0, "[1,2,4,5,6]"),
    ]


def test_original_interface_create_virtual_table(conn):
    conn.execute("create table graph(fromNode integer, toNode integer)")
    conn.executemany("insert into graph values (?, ?)", DIAMOND)
    conn.execute(
        "create virtual table bfs using bfsvtab("
        "tablename='graph', fromcolumn='fromNode', tocolumn='toNode',)"
    )
    assert conn.execute(
        "select id, parent, shortest_path, distance from bfs where root = 1 and distance <= 2"
    ).fetchall() == [
        (1, None, "/1/", 0),
        (2, 1, "/1/2/", 1),
        (3, 1, "/1/3/", 1),
        (4, 2, "/1/2/4/", 2),
    ]
    # select * returns the visible columns only
    assert conn.execute("select * from bfs where root = 5 and id = 2").fetchall() == [
        (2, 1, 3, "/5/6/1/2/", 1.0, "[5,6,1,2]")
    ]


def test_seed_graph_edges_view_example(conn):
    conn.executescript("""
        create table relations (src_id integer, dst_id integer, rel text, weight real);
        create index idx_rel_src_rel on relations(src_id, rel);
        create index idx_rel_dst_rel on relations(dst_id, rel);
        insert into relations values (1, 2, 'uses', 0.5), (2, 3, 'uses', 0.5),
          (3, 4, 'uses', 0.5), (1, 5, 'part_of', 0.9);
        create view graph_edges as
          select src_id as src, dst_id as dst, rel, weight from relations;
        create virtual table bfs using bfsvtab(graph_edges);
        """)
    assert conn.execute("select * from bfs where start = ? and max_depth = 2", [1]).fetchall() == [
        (1, None, 0, "/1/", 1.0, "[1]"),
        (2, 1, 1, "/1/2/", 1.0, "[1,2]"),
        (5, 1, 1, "/1/5/", 1.0, "[1,5]"),
        (3, 2, 2, "/1/2/3/", 1.0, "[1,2,3]"),
    ]
    assert conn.execute(
        "select id, weight from bfs where start = 1 and weightcolumn = 'weight' "
        "and rels = 'uses' and max_depth = 3"
    ).fetchall() == [(1, 1.0), (2, 0.5), (3, 0.25), (4, 0.125)]


def test_create_arguments_set_defaults_that_constraints_override(conn):
    make_edges(conn, DIAMOND)
    conn.execute(
        "create virtual table back using bfsvtab(edges, src, dst, direction=in, max_depth=1)"
    )
    assert conn.execute("select id, distance from back where root = 4").fetchall() == [
        (4, 0),
        (2, 1),
        (3, 1),
    ]
    assert conn.execute(
        "select id, distance, direction, max_depth, tablename from back "
        "where root = 4 and direction = 'out' and max_depth = 2"
    ).fetchall() == [
        (4, 0, "out", 2, "edges"),
        (5, 1, "out", 2, "edges"),
        (6, 2, "out", 2, "edges"),
    ]


def test_directions(conn):
    make_edges(conn, [(1, 2), (3, 2), (2, 4)])
    query = ALL + EDGES + "root = 2 and direction = ?"

    def ids(direction):
        return [row[:3] for row in conn.execute(query, [direction])]

    assert ids("out") == [(2, None, 0), (4, 2, 1)]
    assert ids("in") == [(2, None, 0), (1, 2, 1), (3, 2, 1)]
    assert ids("both") == [(2, None, 0), (1, 2, 1), (3, 2, 1), (4, 2, 1)]


def test_relation_filter_and_weights(conn):
    make_edges(
        conn,
        [
            ("a", "b", "uses", 0.5),
            ("a", "c", "uses", 0.9),
            ("b", "d", "uses", 0.8),  # a-b-d weighs 0.4
            ("c", "d", "uses", 0.5),  # a-c-d weighs 0.45: the heavier one wins
            ("a", "d", "cites", 0.1),
            ("d", "e", "part_of", None),  # NULL weight counts as 1.0
        ],
    )
    query = (
        "select id, parent, distance, weight, path from bfsvtab where "
        + EDGES
        + "root = 'a' and weightcolumn = 'weight' and relcolumn = 'rel' and rels = ?"
    )
    assert conn.execute(query, ["uses, part_of"]).fetchall() == [
        ("a", None, 0, 1.0, '["a"]'),
        ("b", "a", 1, 0.5, '["a","b"]'),
        ("c", "a", 1, 0.9, '["a","c"]'),
        ("d", "c", 2, 0.45, '["a","c","d"]'),
        ("e", "d", 3, 0.45, '["a","c","d","e"]'),
    ]
    assert conn.execute(query, ["cites"]).fetchall() == [
        ("a", None, 0, 1.0, '["a"]'),
        ("d", "a", 1, 0.1, '["a","d"]'),
    ]
    # relcolumn defaults to "rel"; an empty list filters nothing
    assert conn.execute(
        "select count(*) from bfsvtab where " + EDGES + "root = 'a' and rels = ''"
    ).fetchone() == (5,)


def test_equal_weights_tie_break_on_smallest_parent_id(conn):
    make_edges(conn, [(1, 9), (1, 3), (9, 4), (3, 4)])
    assert conn.execute(
        "select parent from bfsvtab where " + EDGES + "root = 1 and id = 4"
    ).fetchall() == [(3,)]


def test_text_ids_cycles_self_loops_and_nulls(conn):
    make_edges(
        conn,
        [
            ("x", "x"),
            ("x", "y/z"),
            ("y/z", 'q"uote'),
            ('q"uote', "x"),
            ("x", None),
            (None, "x"),
            (None, None),
        ],
    )
    assert conn.execute(ALL + EDGES + "root = 'x'").fetchall() == [
        ("x", None, 0, "/x/", 1.0, '["x"]'),
        ("y/z", "x", 1, "/x/y/z/", 1.0, '["x","y/z"]'),
        ('q"uote', "y/z", 2, '/x/y/z/q"uote/', 1.0, '["x","y/z","q\\"uote"]'),
    ]


def test_mixed_and_real_ids(conn):
    make_edges(conn, [(1, "1"), ("1", 2.0), (2, 2.5)])
    assert conn.execute(ALL + EDGES + "root = 1.0").fetchall() == [
        (1, None, 0, "/1/", 1.0, "[1]"),
        ("1", 1, 1, "/1/1/", 1.0, '[1,"1"]'),
        (2, "1", 2, "/1/1/2/", 1.0, '[1,"1",2]'),
        (2.5, 2, 3, "/1/1/2/2.5/", 1.0, '[1,"1",2,2.5]'),
    ]


def test_depth_from_distance_constraints(conn):
    make_edges(conn, [(i, i + 1) for i in range(10)])

    def ids(where):
        sql = f"select id from bfsvtab where {EDGES}root = 0 and {where}"
        return [row[0] for row in conn.execute(sql)]

    assert ids("distance <= 2") == [0, 1, 2]
    assert ids("distance < 2") == [0, 1]
    assert ids("distance < 2.5") == [0, 1, 2]
    assert ids("distance = 3") == [3]
    assert ids("distance <= 5 and max_depth = 1") == [0, 1]
    assert ids("max_depth = '2'") == [0, 1, 2]
    assert ids("distance <= -1") == []
    assert ids("distance <= null") == []


def test_target_returns_only_the_target_and_its_shortest_path(conn):
    make_edges(conn, DIAMOND)
    query = ALL + EDGES + "root = ? and id = ?"
    assert conn.execute(query, [1, 6]).fetchall() == [(6, 5, 4, "/1/2/4/5/6/", 1.0, "[1,2,4,5,6]")]
    assert conn.execute(query, [1, 1]).fetchall() == [(1, None, 0, "/1/", 1.0, "[1]")]
    assert conn.execute(query, [1, 99]).fetchall() == []
    assert conn.execute(query + " and max_depth = 3", [1, 6]).fetchall() == []


def counting_view(conn, counter, name="edges"):
    """A view over ``name`` that counts the edge rows SQLite reads through it."""

    def tick(value):
        counter.append(value)
        return 1

    conn.create_function("tick", 1, tick)
    conn.execute(f"create view counted as select src, dst from {name} where tick(src)")


def test_depth_limit_and_target_stop_reading_edges(conn):
    # A chain of 1000 nodes: a 2-hop expansion reads a handful of edge rows
    make_edges(conn, [(i, i + 1) for i in range(1000)])
    seen = []
    counting_view(conn, seen)
    where = "tablename = 'counted' and fromcolumn = 'src' and tocolumn = 'dst' and root = 10"
    ids = conn.execute(f"select id from bfsvtab where {where} and max_depth = 2").fetchall()
    assert ids == [(10,), (11,), (12,)]
    # one row finds the root, one row per expanded node (10 and 11)
    assert seen == [10, 10, 11]
    seen.clear()
    assert conn.execute(f"select distance from bfsvtab where {where} and id = 14").fetchall() == [
        (4,)
    ]
    assert seen == [10, 10, 11, 12, 13]


def test_without_an_index_edges_are_read_once(conn):
    make_edges(conn, [(i, i + 1) for i in range(1000)], indexed=False)
    seen = []
    counting_view(conn, seen)
    rows = conn.execute(
        "select count(*), max(distance) from bfsvtab where tablename = 'counted' "
        "and fromcolumn = 'src' and tocolumn = 'dst' and root = 10 and max_depth = 2"
    ).fetchall()
    assert rows == [(3, 2)]
    assert sorted(seen) == list(range(1000))


def test_many_roots_in_one_query(conn):
    make_edges(conn, DIAMOND)
    conn.execute("create table seeds(id)")
    conn.executemany("insert into seeds values (?)", [(2,), (5,)])
    assert conn.execute(
        "select seeds.id, b.id, b.distance from seeds join bfsvtab b "
        "on b.root = seeds.id where b.tablename = 'edges' and b.max_depth = 1"
    ).fetchall() == [(2, 2, 0), (2, 4, 1), (5, 5, 0), (5, 6, 1)]
    assert conn.execute(
        "select root, id from bfsvtab where " + EDGES + "root in (3, 6) and distance = 1"
    ).fetchall() == [(3, 4), (6, 1)]


def test_unknown_or_null_root_gives_no_rows(conn):
    make_edges(conn, [(1, 2), (3, None)])
    for root in (99, None, "1", 3):
        assert conn.execute(ALL + EDGES + "root = ?", [root]).fetchall() == []
    # a node that is only the end of edges still reaches itself
    assert conn.execute(ALL + EDGES + "root = 2").fetchall() == [(2, None, 0, "/2/", 1.0, "[2]")]


@pytest.mark.parametrize(
    "where,message",
    [
        ("tablename = 'edges'", "bfsvtab: a root is required, e.g. WHERE root = 1"),
        ("root = 1", "bfsvtab: tablename is required, e.g. WHERE tablename = 'graph_edges'"),
        ("tablename = 'nope' and root = 1", "bfsvtab: no such table: nope"),
        (
            "tablename = 'edges' and fromcolumn = 'nope' and root = 1",
            "bfsvtab: no such column: nope",
        ),
        (
            "tablename = 'edges' and root = 1 and weightcolumn = 'w'",
            "bfsvtab: no such column: w",
        ),
        (
            "tablename = 'edges' and root = 1 and direction = 'up'",
            "bfsvtab: direction must be 'out', 'in' or 'both', not 'up'",
        ),
        (
            "tablename = 'edges' and root = 1 and max_depth = -1",
            "bfsvtab: max_depth must be a non-negative integer or NULL",
        ),
        (
            "tablename = 'edges' and root = 1 and max_depth = 'two'",
            "bfsvtab: max_depth must be a non-negative integer or NULL",
        ),
        (
            "tablename = 'edges\"; drop table edges; --' and root = 1",
            'bfsvtab: no such table: edges"; drop table edges; --',
        ),
    ],
)
def test_misuse_is_a_clear_error(conn, where, message):
    make_edges(conn, DIAMOND)
    with pytest.raises(sqlite3.OperationalError) as excinfo:
        conn.execute("select * from bfsvtab where " + where).fetchall()
    assert str(excinfo.value) == message
    assert conn.execute("select count(*) from edges").fetchone() == (7,)


@pytest.mark.parametrize(
    "args,message",
    [
        (
            "edges, colour=red",
            'bfsvtab: unknown argument "colour"; expected tablename, '
            "fromcolumn, tocolumn, max_depth, direction, relcolumn, rels or weightcolumn",
        ),
        (
            "edges, direction=sideways",
            "bfsvtab: direction must be 'out', 'in' or 'both', not 'sideways'",
        ),
        ("edges, max_depth=x", "bfsvtab: max_depth must be a non-negative integer, not 'x'"),
        ("a, b, c, d", "bfsvtab: too many positional arguments; use key=value"),
    ],
)
def test_bad_create_arguments(conn, args, message):
    with pytest.raises(sqlite3.OperationalError) as excinfo:
        conn.execute(f"create virtual table bad using bfsvtab({args})")
    assert str(excinfo.value) == message


def test_quoted_identifiers(conn):
    name = 'we"ird `name'
    make_edges(conn, [(1, 2)], name=name)
    assert conn.execute(
        "select id from bfsvtab where tablename = ? and root = 1", [name]
    ).fetchall() == [(1,), (2,)]


def test_edge_table_that_uses_bfsvtab_is_refused(conn):
    make_edges(conn, DIAMOND)
    conn.execute(
        "create view loop as select root as src, id as dst from bfsvtab "
        "where tablename = 'edges' and root = 1"
    )
    with pytest.raises(sqlite3.OperationalError) as excinfo:
        conn.execute("select * from bfsvtab where tablename = 'loop' and root = 1").fetchall()
    assert str(excinfo.value) == "bfsvtab: the edge table cannot itself query bfsvtab"


@pytest.mark.parametrize("max_depth", [2, None])  # index lookups, then one read of all edges
def test_project_schema_graph_edges(tmp_path, max_depth):
    from llm_graphrag.db import open_database

    db = open_database(tmp_path / "g.db")
    db["entities"].insert_all(
        [{"id": i, "name": f"e{i}", "norm": f"e{i}", "type": "thing"} for i in (1, 2, 3)]
    )
    db["relations"].insert_all(
        [
            {"src_id": 1, "dst_id": 2, "rel": "uses", "weight": 0.5},
            {"src_id": 3, "dst_id": 2, "rel": "part_of", "weight": 0.8},
        ]
    )
    query = (
        "select id, parent, distance, weight from bfsvtab where tablename = 'graph_edges' "
        "and root = ? and direction = 'both' and weightcolumn = 'weight' and max_depth = ?"
    )
    expected = [(1, None, 0, 1.0), (2, 1, 1, 0.5), (3, 2, 2, 0.4)]
    assert db.execute(query, [1, max_depth]).fetchall() == expected
    # src_id has INTEGER affinity, so the text '1' is entity 1
    assert db.execute(query, ["1", max_depth]).fetchall() == expected


@pytest.mark.asyncio
async def test_datasette_connections_have_bfsvtab(tmp_path):
    from datasette.app import Datasette

    path = tmp_path / "graph.db"
    conn = sqlite3.connect(str(path))
    make_edges(conn, DIAMOND)
    conn.commit()
    conn.close()
    ds = Datasette([str(path)])
    await ds.invoke_startup()
    response = await ds.client.get(
        "/graph.json",
        params={
            "sql": "select id, distance, shortest_path from bfsvtab "
            "where tablename = 'edges' and root = 1 and id = 5",
            "_shape": "array",
        },
    )
    assert response.status_code == 200
    assert response.json() == [{"id": 5, "distance": 3, "shortest_path": "/1/2/4/5/"}]


def test_extension_path_and_missing_build(monkeypatch):
    assert traversal.extension_path().endswith(
        tuple("_bfsvtab" + s for s in importlib.machinery.EXTENSION_SUFFIXES)
    )
    monkeypatch.setattr(importlib.machinery, "EXTENSION_SUFFIXES", [".nothing"])
    with pytest.raises(traversal.ExtensionMissing) as excinfo:
        traversal.extension_path()
    assert "pip install -e ." in str(excinfo.value)
    assert "apt-get install libsqlite3-dev" in str(excinfo.value)


# --- Property test: the extension agrees with a Python BFS ---------------------


def sort_key(node):
    """SQLite's order for the ids used here: integers before text, text by bytes."""
    return (0, node) if isinstance(node, int) else (1, node.encode("utf-8"))


def reference_bfs(
    edges, root, direction="out", max_depth=None, rels=None, weighted=False, target=None
):
    """Rows {id: (parent, distance, weight, path)} per the semantics in bfsvtab.c."""
    adjacency = {}
    for src, dst, rel, weight in edges:
        if src is None or dst is None or (rels and rel not in rels):
            continue
        w = weight if weighted and weight is not None else 1.0
        adjacency.setdefault(src, [])
        adjacency.setdefault(dst, [])
        if direction in ("out", "both"):
            adjacency[src].append((dst, w))
        if direction in ("in", "both"):
            adjacency[dst].append((src, w))
    if root not in adjacency:
        return {}
    dist, parent, best = {root: 0}, {root: None}, {root: 1.0}
    level = [root]
    while level and (max_depth is None or dist[level[0]] < max_depth):
        if target is not None and target in dist:
            break
        following = []
        for u in level:
            for v, w in adjacency[u]:
                candidate = best[u] * w
                if v not in dist:
                    dist[v], parent[v], best[v] = dist[u] + 1, u, candidate
                    following.append(v)
                elif dist[v] == dist[u] + 1 and (
                    candidate > best[v]
                    or (candidate == best[v] and sort_key(u) < sort_key(parent[v]))
                ):
                    parent[v], best[v] = u, candidate
        level = following

    def path(node):
        return [node] if parent[node] is None else path(parent[node]) + [node]

    rows = {node: (parent[node], dist[node], best[node], path(node)) for node in dist}
    if target is not None:
        return {target: rows[target]} if target in rows else {}
    return rows


INT_IDS = list(range(8))
WIDE_INT_IDS = [-(2**63), -5, 0, 1, 7, 10**12, 2**62, 2**63 - 1]
TEXT_IDS = ["a", "b", "c", "d", "e", "ä", "a/b", 'q"']


@st.composite
def graphs(draw):
    pool = draw(st.sampled_from([INT_IDS, WIDE_INT_IDS, TEXT_IDS, INT_IDS[:4] + TEXT_IDS[:4]]))
    node = st.sampled_from(pool)
    maybe_node = st.sampled_from(pool + [None])
    edge = st.tuples(
        maybe_node,
        maybe_node,
        st.sampled_from(["uses", "part_of", "cites", None]),
        st.one_of(st.none(), st.floats(-1, 2, allow_nan=False).map(lambda x: round(x, 3))),
    )
    return {
        "edges": draw(st.lists(edge, max_size=30)),
        "root": draw(node),
        "target": draw(st.one_of(st.none(), node)),
        "direction": draw(st.sampled_from(["out", "in", "both"])),
        "max_depth": draw(st.one_of(st.none(), st.integers(0, 4))),
        "depth_form": draw(st.sampled_from(["max_depth", "distance <=", "distance <"])),
        "rels": draw(
            st.one_of(st.none(), st.sets(st.sampled_from(["uses", "part_of", "cites"]), min_size=1))
        ),
        "weighted": draw(st.booleans()),
        "indexed": draw(st.booleans()),
        "created": draw(st.booleans()),
    }


@pytest.fixture(scope="module")
def property_conn(tmp_path_factory):
    conn = connect(tmp_path_factory.mktemp("property") / "graph.db")
    conn.execute("create table edges(src, dst, rel, weight)")
    conn.execute(
        "create virtual table created using bfsvtab(tablename=edges, fromcolumn=src, tocolumn=dst)"
    )
    yield conn
    conn.close()


@settings(
    max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(case=graphs())
def test_matches_python_bfs(property_conn, case):
    conn = property_conn
    conn.execute("delete from edges")
    conn.execute("drop index if exists edges_src")
    conn.execute("drop index if exists edges_dst")
    if case["indexed"]:
        conn.execute("create index edges_src on edges(src)")
        conn.execute("create index edges_dst on edges(dst)")
    conn.executemany("insert into edges values (?, ?, ?, ?)", case["edges"])

    table = "created" if case["created"] else "bfsvtab"
    where = ["root = :root", "direction = :direction"]
    if not case["created"]:
        where.append("tablename = 'edges' and fromcolumn = 'src' and tocolumn = 'dst'")
    if case["max_depth"] is not None:
        if case["depth_form"] == "max_depth":
            where.append("max_depth = :max_depth")
        elif case["depth_form"] == "distance <=":
            where.append("distance <= :max_depth")
        else:
            where.append("distance < :max_depth + 1")
    if case["rels"]:
        where.append("rels = :rels")
    if case["weighted"]:
        where.append("weightcolumn = 'weight'")
    if case["target"] is not None:
        where.append("id = :target")
    params = dict(case, rels=",".join(sorted(case["rels"] or [])))
    rows = conn.execute(
        f"select id, parent, distance, weight, shortest_path, path from {table} where "
        + " and ".join(where),
        params,
    ).fetchall()

    expected = reference_bfs(
        case["edges"],
        case["root"],
        direction=case["direction"],
        max_depth=case["max_depth"],
        rels=case["rels"],
        weighted=case["weighted"],
        target=case["target"],
    )
    got = {row[0]: (row[1], row[2], row[3], json.loads(row[5])) for row in rows}
    assert got == expected
    assert len(rows) == len(expected)
    assert [row[2] for row in rows] == sorted(row[2] for row in rows)
    for row in rows:
        assert row[4] == "/" + "".join(f"{node}/" for node in json.loads(row[5]))
    if rows and case["target"] is None:
        assert rows[0][:3] == (case["root"], None, 0)
