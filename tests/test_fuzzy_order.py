"""Fuzzy links on real text: seven python3.11-doc pages that name "Python Packaging
Authority" and "the Python Packaging Authority", "Python/C API" and "Python's C API",
"Queue" and "Queues" (near-identical names, ``linking.Linker.best_fuzzy``) give the same
graph whatever order they come in (PSF licence, see tests/data/python-packaging/README.md)."""

import pathlib
import shutil

import pytest
from test_watch import LINKED, ORDER_FREE, assert_consistent, ingest_in_orders, snapshot

from llm_graphrag.db import open_database
from llm_graphrag.ingest import ingest_docs

PAGES = pathlib.Path(__file__).parent / "data" / "python-packaging"


@pytest.fixture(scope="module")
def orders(tmp_path_factory):
    return ingest_in_orders(PAGES, tmp_path_factory.mktemp("fuzzy"), lambda folder, files: {
        "all at once": [[folder]],
        "two halves": [files[: len(files) // 2], files[len(files) // 2 :]],
        "one at a time": [[f] for f in files],
        "reversed": [[f] for f in reversed(files)],
    })


def test_near_identical_names_link_one_way(orders):
    """Every link to a near-identical name (``linking.Linker.best_fuzzy``): to the fuller
    one ("the Python Packaging User Guide", named by its most frequent surface), with a
    score of the two names alone (0.45 cosine + 0.25 string similarity + 0.15 type)."""
    dbs, _ = orders
    rows = dbs["all at once"].execute(
        "select m.surface, e.name, e.norm, m.link_score, count(*) from mentions m "
        "join entities e on e.id = m.entity_id where m.link_score < 1 "
        "and m.features not like '%\"coref\": true%' group by 1, 2, 3, 4 order by 1, 3"
    ).fetchall()
    assert rows == [
        ("Backwards Compatibility Policy", "Backwards Compatibility Policy", "thebackwardscompatibilitypolicy", 0.8131, 1),
        ("Limited API", "Limited API", "thelimitedapi", 0.7746, 18),
        ("Python Distribution Utilities", "Python Distribution Utilities", "thepythondistributionutilities", 0.8147, 1),
        ("Python Packaging Authority", "Python Packaging Authority", "thepythonpackagingauthority", 0.8128, 2),
        ("Python Packaging User Guide", "Python Packaging User Guide", "thepythonpackaginguserguide", 0.8139, 7),
        ("Python/C API", "Python's C API", "pythonscapi", 0.8063, 1),
        ("Queue", "Queues", "queues", 0.8182, 2),
    ]
    # No entity is left with only the mentions of near-identical names (extract._orphaned).
    assert dbs["all at once"].execute(
        "select count(*) from entities e where not exists (select 1 from mentions m "
        "where m.entity_id = e.id and json_extract(m.meta, '$.norm') = e.norm)"
    ).fetchone() == (0,)


@pytest.mark.parametrize("order", ["two halves", "one at a time", "reversed"])
def test_every_order_equals_a_clean_ingest(orders, order):
    dbs, _ = orders
    assert_consistent(dbs[order])
    whole, other = snapshot(dbs["all at once"]), snapshot(dbs[order])
    assert {t for t in ORDER_FREE + LINKED if whole[t] != other[t]} == set()


def test_a_fuller_name_gone_gives_the_shorter_its_own_entity(orders, tmp_path):
    """"Python/C API" links to "Python's C API" while c-api_stable.rst.txt names it;
    once that page is deleted and pruned, it has an entity of its own, as a clean ingest
    of the pages left gives."""
    _, folder = orders
    kb = tmp_path / "kb"
    shutil.copytree(folder, kb)
    db = open_database(tmp_path / "pruned.db")
    ingest_docs(db, [str(kb)], workers=0)
    (kb / "c-api_stable.rst.txt").unlink()
    assert ingest_docs(db, [str(kb)], prune=True, workers=0).pruned == 1
    assert db.execute(
        "select e.name, e.norm, m.link_score from mentions m join entities e on e.id = m.entity_id "
        "where m.surface = 'Python/C API'"
    ).fetchall() == [("Python/C API", "pythoncapi", 1.0)]
    clean = open_database(tmp_path / "clean.db")
    ingest_docs(clean, [str(kb)], workers=0)
    assert_consistent(db)
    whole, other = snapshot(clean), snapshot(db)
    assert {t for t in ORDER_FREE + LINKED if whole[t] != other[t]} == set()


def test_an_entity_left_with_only_near_identical_names_goes(tmp_path):
    """"Tidewater Harbour Authority" links to "the Tidewater Harbour Authority", the
    fuller name of a-notes.md; pruned, that page leaves the entity with one mention, of
    the shorter name (the gazetteer is the same: no page is linked again for it), which
    is linked again to an entity of its own (``extract._orphaned``), as a clean ingest of
    b-boats.md alone gives."""
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "a-notes.md").write_text(
        "# Harbour notes\n\nThe ships report to the Tidewater Harbour Authority every morning. "
        "The Tidewater Harbour Authority keeps the tide tables.\n"
    )
    (kb / "b-boats.md").write_text("# Boats\n\nBoats moor where Tidewater Harbour Authority allows.\n")
    db = open_database(tmp_path / "pruned.db")
    ingest_docs(db, [str(kb)], workers=0)
    links = lambda: db.execute(  # noqa: E731
        "select substr(d.path, ?), m.surface, e.norm, m.link_score from mentions m join entities e on e.id = m.entity_id "
        "join docs d on d.id = m.doc_id where m.surface like '%Tidewater%' order by 1, m.span_start",
        [len(str(kb)) + 2],
    ).fetchall()
    assert links() == [
        ("a-notes.md", "the Tidewater Harbour Authority", "thetidewaterharbourauthority", 1.0),
        ("a-notes.md", "Tidewater Harbour Authority", "thetidewaterharbourauthority", 0.8182),
        ("a-notes.md", "The Tidewater Harbour Authority", "thetidewaterharbourauthority", 1.0),
        ("a-notes.md", "Tidewater Harbour Authority", "thetidewaterharbourauthority", 0.8182),
        ("b-boats.md", "Tidewater Harbour Authority", "thetidewaterharbourauthority", 0.8182),
    ]
    (kb / "a-notes.md").unlink()
    assert ingest_docs(db, [str(kb)], prune=True, workers=0).pruned == 1
    assert links() == [("b-boats.md", "Tidewater Harbour Authority", "tidewaterharbourauthority", 1.0)]
    clean = open_database(tmp_path / "clean.db")
    ingest_docs(clean, [str(kb)], workers=0)
    assert_consistent(db)
    whole, other = snapshot(clean), snapshot(db)
    assert {t for t in ORDER_FREE + LINKED if whole[t] != other[t]} == set()
