"""Fuzzy links on real text: seven python3.11-doc pages that name "Python Packaging
Authority" and "the Python Packaging Authority", "Python/C API" and "Python's C API",
"Queue" and "Queues" (near-identical names, ``linking.Linker.best_fuzzy``) give the same
graph whatever order they come in (PSF licence, see tests/data/python-packaging/README.md)."""

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
    folder.mkdir()
    for page in sorted(PAGES.glob("*.rst.txt")):
        shutil.copy(page, folder / page.name)
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
