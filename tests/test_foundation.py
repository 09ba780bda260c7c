"""The foundation: packaging, connections, schema, embeddings and ingestion through llm."""

import json
import pathlib
import subprocess
import sqlite3 as stdlib_sqlite3

import llm
import pytest
import sqlite_utils
from click.testing import CliRunner
from llm.cli import cli

from llm_graphrag.db import ExtensionsUnavailable, load_extensions, open_database, sqlite3
from llm_graphrag.embeddings import get_embedder
from llm_graphrag.schema import schema_version, migrations

LAKE = "Damming a river can cause a lake to form behind the dam."
LAKE_NEIGHBOUR = "Reservoirs are lakes that form when a dam blocks a river."
OTHER = "The quarterly budget review covers travel expenses and invoices."


def run(args, **kwargs):
    result = CliRunner().invoke(cli, args, catch_exceptions=False, **kwargs)
    return result


@pytest.fixture
def corpus(tmp_path):
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "lake.md").write_text(f"# Lakes\n\n{LAKE}\n")
    (folder / "reservoir.txt").write_text(f"Reservoirs\n\n{LAKE_NEIGHBOUR}\n")
    (folder / "budget.md").write_text(f"# Budget\n\n{OTHER}\n")
    return folder


@pytest.mark.parametrize("command", [["llm", "plugins"], ["datasette", "plugins"]])
def test_installed_package_is_listed_as_a_plugin(command):
    # A separate process loads plugins from the installed entry points, as users see them
    output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    names = [plugin["name"] for plugin in json.loads(output)]
    assert "datasette-graphrag" in names


def test_init_and_status(tmp_path, user_path):
    path = str(tmp_path / "g.db")
    result = run(["graphrag", "init", "-d", path, "--json"])
    assert result.exit_code == 0
    info = json.loads(result.output)
    assert info["counts"] == {
        "docs": 0,
        "chunks": 0,
        "mentions": 0,
        "entities": 0,
        "relations": 0,
        "embeddings": 0,
        "chunk_vec": 0,
        "entity_vec": 0,
        "fact_vec": 0,
    }
    assert info["embedding_model"] == "graphrag"
    assert info["dimensions"] == 256
    assert info["schema_version"] == len(migrations._migrations)
    assert info["last_ingest"] is None
    # Connection settings every toolkit connection gets
    db = open_database(path)
    assert db.execute("pragma journal_mode").fetchone()[0] == "wal"
    assert db.execute("pragma foreign_keys").fetchone()[0] == 1
    assert db.execute("pragma synchronous").fetchone()[0] == 1
    assert db.execute("pragma busy_timeout").fetchone()[0] == 5000
    modules = {row[0] for row in db.execute("select name from pragma_module_list")}
    assert {"vec0", "bfsvtab", "fts5"} <= modules


def test_status_on_missing_database_is_a_clear_error(tmp_path):
    result = run(["graphrag", "status", "-d", str(tmp_path / "nope.db")])
    assert result.exit_code == 1
    assert "does not exist: create it with 'llm graphrag init" in result.output


def test_a_query_or_lookup_that_finds_nothing_says_why(tmp_path, corpus):
    empty = str(tmp_path / "empty.db")
    assert run(["graphrag", "init", "-d", empty]).exit_code == 0
    result = run(["graphrag", "query", "lakes", "-d", empty])
    assert result.exit_code == 0
    assert f"No results: {empty} holds no documents yet; add some with 'llm graphrag ingest FOLDER -d {empty}'" in result.output
    path = str(tmp_path / "g.db")
    run(["graphrag", "ingest", str(corpus), "-d", path, "--json"])
    result = run(["graphrag", "query", "zyzzyva", "-d", path, "--mode", "bm25"])
    assert "No results: no chunk shares a word or a meaning with the question" in result.output
    assert json.loads(run(["graphrag", "query", "zyzzyva", "-d", path, "--mode", "bm25", "--json"]).output)["chunks"] == []
    assert "No entity matches 'zyzzyva': try fewer or other words" in run(["graphrag", "lookup", "zyzzyva", "-d", path]).output
    assert "No entity of type code matches 'lake'" in run(["graphrag", "lookup", "lake", "--type", "code", "-d", path]).output


@pytest.mark.parametrize("command", [["status"], ["dense"], ["query", "tea"]])
def test_a_file_that_is_no_database_is_a_clear_error_and_stays_as_it_was(tmp_path, command):
    path = tmp_path / "notes.db"
    path.write_text("hello\n")
    result = run(["graphrag", *command, "-d", str(path)])
    assert result.exit_code == 1
    assert f"Error: {path} is not an SQLite database (file is not a database)" in result.output
    assert path.read_text() == "hello\n"


@pytest.mark.parametrize("command", [["status"], ["dense"], ["query", "tea"], ["extract"]])
def test_an_sqlite_file_of_other_tables_is_a_clear_error_and_gets_no_graphrag_tables(tmp_path, command):
    path = tmp_path / "notes.db"
    conn = stdlib_sqlite3.connect(path)
    conn.execute("create table notes (id integer primary key, body text)")
    conn.execute("insert into notes (body) values ('keep me')")
    conn.commit()
    conn.close()
    result = run(["graphrag", *command, "-d", str(path)])
    assert result.exit_code == 1, result.output
    assert f"Error: {path} is an SQLite database but not a graphrag one (its tables: notes)" in result.output
    conn = stdlib_sqlite3.connect(path)
    assert conn.execute("select name from sqlite_master").fetchall() == [("notes",)]
    assert conn.execute("select body from notes").fetchall() == [("keep me",)]


def test_stdlib_sqlite_without_extension_support_gets_one_sentence():
    conn = stdlib_sqlite3.connect(":memory:")
    if hasattr(conn, "enable_load_extension"):
        pytest.skip("this Python's sqlite3 can load extensions")
    with pytest.raises(ExtensionsUnavailable) as excinfo:
        load_extensions(conn)
    assert "pip install pysqlite3-binary" in str(excinfo.value)


def test_llm_embed_uses_bundled_model(user_path):
    result = run(["embed", "-m", "graphrag", "-c", "hello"])
    assert result.exit_code == 0, result.output
    vector = json.loads(result.output)
    assert len(vector) == 256
    assert llm.get_embedding_model("graphrag").model_id == "graphrag-minilm-256"


def test_new_databases_get_larger_pages_and_existing_ones_keep_theirs(tmp_path):
    from llm_graphrag.db import PAGE_SIZE

    db = open_database(tmp_path / "new.db")
    assert db.execute("pragma page_size").fetchone()[0] == PAGE_SIZE == 16384
    assert db.execute("pragma journal_mode").fetchone()[0] == "wal"
    older = stdlib_sqlite3.connect(tmp_path / "older.db")
    older.execute("create table kept (x)")
    older.execute("insert into kept values (1)")
    older.commit()
    older.close()
    db = open_database(tmp_path / "older.db")
    assert db.execute("pragma page_size").fetchone()[0] == 4096
    assert db.execute("select x from kept").fetchall() == [(1,)]


def test_sqlite_utils_connections_get_sqlite_vec(tmp_path):
    db = sqlite_utils.Database(tmp_path / "plain.db")
    assert db.execute("select vec_length(vec_f32('[1, 2, 3]'))").fetchone()[0] == 3


def test_embed_multi_fills_vec0_index_and_knn_finds_neighbour(tmp_path, corpus, user_path):
    path = str(tmp_path / "g.db")
    result = run(["graphrag", "ingest", str(corpus), "-d", path, "--no-extract", "--json"])
    assert result.exit_code == 0, result.output
    db = open_database(path)
    # Replace the ingest's vectors with ones llm embed-multi writes from the terminal
    db.execute("delete from embeddings")
    db.conn.commit()
    assert db.execute("select count(*) from chunk_vec").fetchone()[0] == 0
    result = run(
        [
            "embed-multi",
            "chunks",
            "--sql",
            "select id, content from chunks",
            "-d",
            path,
            "-m",
            "graphrag",
        ]
    )
    assert result.exit_code == 0, result.output
    db = open_database(path)
    assert db.execute("select count(*) from chunk_vec").fetchone()[0] == 3
    query = get_embedder("graphrag").encode([LAKE])[0].astype("<f4").tobytes()
    rows = db.execute(
        """
        select docs.path from chunk_vec join chunks on chunks.id = chunk_vec.chunk_id
        join docs on docs.id = chunks.doc_id
        where embedding match ? and k = 3 order by distance
        """,
        [query],
    ).fetchall()
    assert [row[0].rsplit("/", 1)[1] for row in rows] == ["lake.md", "reservoir.txt", "budget.md"]


def test_ingest_then_reingest_changes_nothing(tmp_path, corpus, user_path):
    path = str(tmp_path / "g.db")
    first = json.loads(run(["graphrag", "ingest", str(corpus), "-d", path, "--json"]).output)
    assert (first["ingested"], first["skipped"], first["errors"]) == (3, 0, [])
    db = open_database(path)
    tables = ["docs", "chunks", "mentions", "entities", "relations", "embeddings", "chunk_vec"]
    before = {t: db.execute(f"select count(*) from {t}").fetchone()[0] for t in tables}
    assert before["docs"] == 3 and before["chunks"] == 3 and before["chunk_vec"] == 3
    second = json.loads(run(["graphrag", "ingest", str(corpus), "-d", path, "--json"]).output)
    assert (second["ingested"], second["skipped"], second["errors"]) == (0, 3, [])
    after = {t: db.execute(f"select count(*) from {t}").fetchone()[0] for t in tables}
    assert after == before


def test_changed_file_replaces_rows_and_prune_removes_missing(tmp_path, corpus, user_path):
    path = str(tmp_path / "g.db")
    run(["graphrag", "ingest", str(corpus), "-d", path, "--json"])
    (corpus / "budget.md").write_text("# Budget\n\nThe annual budget now includes hardware.\n")
    (corpus / "reservoir.txt").unlink()
    result = json.loads(
        run(["graphrag", "ingest", str(corpus), "-d", path, "--prune", "--json"]).output
    )
    assert (result["ingested"], result["skipped"], result["pruned"]) == (1, 1, 1)
    db = open_database(path)
    contents = [row[0] for row in db.execute("select content from chunks order by doc_id")]
    assert contents == ["# Budget\n\nThe annual budget now includes hardware.", f"# Lakes\n\n{LAKE}"]
    assert db.execute("select count(*) from chunk_vec").fetchone()[0] == 2
    assert db.execute("select count(*) from embeddings").fetchone()[0] == db.execute(
        "select count(*) from chunk_vec"
    ).fetchone()[0] + db.execute("select count(*) from entity_vec").fetchone()[0] + db.execute(
        "select count(*) from fact_vec"
    ).fetchone()[0]


def test_bad_files_are_reported_and_good_ones_land(tmp_path, corpus, user_path):
    (corpus / "binary.md").write_bytes(b"\x00\x01\x02PNG\x00")
    (corpus / "latin1.txt").write_bytes("Caf\xe9 au lait".encode("latin-1"))
    (corpus / "empty.html").write_text("<html><body><nav>menu</nav></body></html>")
    path = str(tmp_path / "g.db")
    result = run(["graphrag", "ingest", str(corpus), "-d", path, "--json"])
    assert result.exit_code == 0
    data = json.loads(result.output)
    assert data["ingested"] == 3
    assert sorted(error["path"].rsplit("/", 1)[1] for error in data["errors"]) == [
        "binary.md",
        "empty.html",
        "latin1.txt",
    ]
    assert all(error["error"] for error in data["errors"])
    db = open_database(path)
    assert db.execute("select count(*) from docs").fetchone()[0] == 3


def test_bad_file_keeps_what_was_stored(tmp_path, corpus, user_path):
    path = str(tmp_path / "g.db")
    run(["graphrag", "ingest", str(corpus), "-d", path, "--json"])
    (corpus / "lake.md").write_bytes(b"\xff\xfe broken")
    data = json.loads(run(["graphrag", "ingest", str(corpus), "-d", path, "--json"]).output)
    assert [e["path"].rsplit("/", 1)[1] for e in data["errors"]] == ["lake.md"]
    db = open_database(path)
    assert f"# Lakes\n\n{LAKE}" in [row[0] for row in db.execute("select content from chunks")]


def test_schema_version_counts_applied_migrations(tmp_path):
    db = open_database(tmp_path / "g.db")
    assert schema_version(db) == len(migrations._migrations)
    assert migrations.pending(db) == []


def test_vector_triggers_follow_inserts_updates_and_deletes(tmp_path):
    import numpy as np

    from llm_graphrag.embeddings import write_embeddings

    db = open_database(tmp_path / "g.db")
    triggers = {
        row[0]
        for row in db.execute("select name from sqlite_master where type = 'trigger' and name like 'embeddings_vec_%'")
    }
    assert triggers == {
        f"embeddings_vec_{event}_{name}"
        for event in ("insert", "update", "delete")
        for name in ("chunks", "entities", "facts")
    }
    with db.atomic():
        db["docs"].insert({"id": 1, "path": "/a"})
        db["chunks"].insert({"id": 7, "doc_id": 1, "seq": 0, "content": "x"})
        db["entities"].insert({"id": 7, "type": "concept", "name": "x", "norm": "x"})
        first, second = np.eye(256, dtype=np.float32)[:2]
        write_embeddings(db, "chunks", [7], [first])
        write_embeddings(db, "entities", [7], [second])

    def stored(table, pk):
        return [
            (row[0], np.frombuffer(row[1], dtype="<f4").argmax())
            for row in db.execute(f"select {pk}, embedding from {table}")
        ]

    assert stored("chunk_vec", "chunk_id") == [(7, 0)]
    assert stored("entity_vec", "entity_id") == [(7, 1)]
    chunks = db.execute("select id from collections where name = 'chunks'").fetchone()[0]
    with db.atomic():
        db.execute(
            "update embeddings set embedding = ? where collection_id = ? and id = '7'",
            [second.astype("<f4").tobytes(), chunks],
        )
    assert stored("chunk_vec", "chunk_id") == [(7, 1)]
    assert stored("entity_vec", "entity_id") == [(7, 1)]
    with db.atomic():
        db.execute("delete from chunks where id = 7")
    assert stored("chunk_vec", "chunk_id") == []
    assert stored("entity_vec", "entity_id") == [(7, 1)]


def test_vector_indexes_span_several_chunks(tmp_path):
    """vec0 indexes hold VECTOR_CHUNK_SIZE vectors per chunk: writing, replacing and
    searching work across chunk boundaries."""
    import numpy as np

    from llm_graphrag.embeddings import write_embeddings
    from llm_graphrag.schema import VECTOR_CHUNK_SIZE

    db = open_database(tmp_path / "g.db")
    (sql,) = db.execute("select sql from sqlite_master where name = 'entity_vec'").fetchone()
    assert f"chunk_size={VECTOR_CHUNK_SIZE}" in sql and VECTOR_CHUNK_SIZE == 1024
    count = 2 * VECTOR_CHUNK_SIZE + 44  # three chunks, the last one partly filled
    vectors = np.random.default_rng(7).standard_normal((count, 256)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    with db.atomic():
        write_embeddings(db, "entities", range(1, count + 1), vectors)
    with db.atomic():  # replace two vectors, one in the first chunk and one in the last
        write_embeddings(db, "entities", [5, count - 1], vectors[[0, 1]])
    assert db.execute("select count(*) from entity_vec").fetchone() == (count,)
    assert db.execute("select count(*) from entity_vec_chunks").fetchone() == (3,)

    def nearest(vector):
        return [
            entity_id for entity_id, _ in db.execute(
                "select entity_id, distance from entity_vec where embedding match ? and k = 3",
                [vector.astype("<f4").tobytes()],
            )
        ]

    assert nearest(vectors[200])[0] == 201
    assert set(nearest(vectors[0])[:2]) == {1, 5}
    assert set(nearest(vectors[1])[:2]) == {2, count - 1}


def test_chunk_vectors_weight_the_prelude():
    import numpy as np

    from llm_graphrag.chunking import Chunk
    from llm_graphrag.embeddings import PRELUDE_WEIGHT, chunk_vectors

    embedder = get_embedder("graphrag")
    chunks = [
        Chunk(0, LAKE, "science/lakes.md • Lakes", "Lakes", (), 12),
        Chunk(1, OTHER, "", "", (), 10),
    ]
    vectors = chunk_vectors(embedder, chunks)
    text, prelude = embedder.encode([LAKE, "science/lakes.md • Lakes"])
    expected = text + PRELUDE_WEIGHT * prelude
    np.testing.assert_allclose(vectors[0], expected / np.linalg.norm(expected), rtol=1e-6)
    np.testing.assert_allclose(vectors[1], embedder.encode([OTHER])[0], rtol=1e-6)
    assert PRELUDE_WEIGHT == 0.3


def test_loading_process_and_one_process_store_the_same_rows(tmp_path, user_path, mapped):
    """From parallel.MIN_ITEMS files on, a second process loads files: same rows, same errors,
    near-duplicates found across files in file order, as with --workers 0."""
    import shutil

    from llm_graphrag import parallel

    sample = pathlib.Path(__file__).parent.parent / "sample-corpus"
    folder = tmp_path / "corpus"
    shutil.copytree(sample, folder)
    repeated = "This paragraph appears in two files on purpose, to test the near-duplicate filter here."
    (folder / "zz-a.md").write_text(f"# A\n\n{repeated}\n")
    (folder / "zz-b.md").write_text(f"# B\n\n{repeated}\n")
    (folder / "zz-binary.md").write_bytes(b"\x00\x01\x02PNG\x00")
    assert len(list(folder.rglob("*.*"))) > parallel.MIN_ITEMS
    outputs, rows = [], []
    for workers in ("0", "2"):
        path = str(tmp_path / f"workers{workers}.db")
        result = run(["graphrag", "ingest", str(folder), "-d", path, "--no-extract", "--workers", workers, "--json"])
        outputs.append(json.loads(result.output))
        db = open_database(path)
        rows.append([
            db.execute("select id, path, title, hash from docs order by id").fetchall(),
            db.execute("select id, doc_id, seq, content, prelude, section, meta from chunks order by id").fetchall(),
            db.execute("select id, embedding from embeddings order by collection_id, id").fetchall(),
        ])
    assert mapped == [("_prepare_file", 0), ("_prepare_file", 1)]
    assert outputs[0]["duplicates_skipped"] >= 1
    assert [e["path"].rsplit("/", 1)[1] for e in outputs[0]["errors"]] == ["zz-binary.md"]
    assert outputs[1] == outputs[0]
    assert rows[1] == rows[0]


@pytest.mark.parametrize(
    "args, message",
    [
        (["extract", "--workers", "-1"], "Invalid value for '--workers': -1 is not in the range x>=0."),
        (["ingest", "corpus", "--workers", "two"], "Invalid value for '--workers': 'two' is not a valid integer range."),
    ],
)
def test_bad_workers_option_is_refused_before_anything_is_written(tmp_path, user_path, args, message):
    path = tmp_path / "g.db"
    result = run(["graphrag", *args, "-d", str(path)])
    assert result.exit_code == 2
    assert result.output.splitlines()[-1] == f"Error: {message}"
    assert not path.exists()
