"""Fuzzy links on real text: python3.11-doc pages that name "Python Packaging Authority",
"the Python Packaging Authority", "Python Packaging User Guide" and "the Python Packaging
User Guide" (near-identical names, ``linking.Linker.best_fuzzy``) give the same graph
whatever order they come in (PSF licence, see tests/data/python-docs/README.md)."""

import pathlib
import shutil

import pytest
from test_watch import LINKED, ORDER_FREE, assert_consistent, snapshot

from llm_graphrag.db import open_database
from llm_graphrag.ingest import ingest_docs

PAGES = pathlib.Path(__file__).parent / "data" / "python-packaging"


@pytest.fixture(scope="module")
def orders(tmp_path_factory):
    base = tmp_path_factory.mktemp("fuzzy")
    folder = base / "docs"
    shutil.copytree(PAGES, folder)
    files = sorted(folder.iterdir())
    batches = {
        "all at once": [[folder]],
        "two halves": [files[: len(files) // 2], files[len(files) // 2 :]],
        "one at a time": [[f] for f in files],
        "reversed": [[f] for f in reversed(files)],
    }
    out = {}
    for name, runs in batches.items():
        db = out[name] = open_database(base / f"{len(out)}.db")
        for run in runs:
            ingest_docs(db, [str(p) for p in run], roots=[str(folder)], workers=0)
    return out, folder


def test_near_identical_names_link_one_way(orders):
    dbs, folder = orders
    rows = dbs["all at once"].execute(
        "select m.surface, e.name, e.norm, m.link_score, substr(d.path, ?) from mentions m "
        "join entities e on e.id = m.entity_id join docs d on d.id = m.doc_id "
        "where m.surface like '%Python Packaging%' order by 5, m.span_start",
        [len(str(folder)) + 2],
    ).fetchall()
    # "Python Packaging User Guide" links to the fuller "the Python Packaging User Guide"
    # (linking.fuzzy_order), named by its most frequent surface (refine.canonical_names).
    guide = ("Python Packaging User Guide", "thepythonpackaginguserguide")
    authority = ("Python Packaging Authority", "thepythonpackagingauthority")
    assert rows == [
        ("Python Packaging User Guide", *guide, 0.7539, "distributing_index.rst.txt"),
        ("the Python Packaging User Guide", *guide, 1.0, "distributing_index.rst.txt"),
        ("Python Packaging User Guide", *guide, 0.7539, "distributing_index.rst.txt"),
        ("Python Packaging Authority", *authority, 0.7528, "distributing_index.rst.txt"),
        ("the Python Packaging User Guide", *guide, 1.0, "distributing_index.rst.txt"),
        ("Python Packaging User Guide", *guide, 0.7539, "distributing_index.rst.txt"),
        ("Python Packaging User Guide", *guide, 0.7539, "distutils_index.rst.txt"),
        ("the Python Packaging Authority", *authority, 1.0, "library_distutils.rst.txt"),
        ("Python Packaging Authority", *authority, 0.7528, "library_distutils.rst.txt"),
        ("the Python Packaging User Guide", *guide, 1.0, "library_distutils.rst.txt"),
        ("Python Packaging User Guide", *guide, 0.7539, "library_distutils.rst.txt"),
    ]


@pytest.mark.parametrize("order", ["two halves", "one at a time", "reversed"])
def test_every_order_equals_a_clean_ingest(orders, order):
    dbs, _ = orders
    assert_consistent(dbs[order])
    whole, other = snapshot(dbs["all at once"]), snapshot(dbs[order])
    assert {t for t in ORDER_FREE + LINKED if whole[t] != other[t]} == set()
