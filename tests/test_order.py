"""Order effects on real text: 32 python3.11-doc pages ingested in three orders give
the same graph (``bench/bench_order.py`` does the same on more pages)."""

import pathlib
import shutil

import pytest
from test_watch import LINKED, ORDER_FREE, assert_consistent, snapshot

from llm_graphrag.db import open_database
from llm_graphrag.ingest import ingest_docs

PAGES = pathlib.Path(__file__).parent / "data" / "python-docs"


@pytest.fixture(scope="module")
def orders(tmp_path_factory):
    """``{order: database}``: the pages all at once, one at a time in reverse, in two halves."""
    base = tmp_path_factory.mktemp("order")
    folder = base / "docs"
    folder.mkdir()
    for page in sorted(PAGES.glob("*.rst.txt")):
        shutil.copy(page, folder / page.name)
    files = sorted(folder.iterdir())
    batches = {
        "all at once": [[folder]],
        "one at a time, reversed": [[f] for f in reversed(files)],
        "two halves": [files[: len(files) // 2], files[len(files) // 2 :]],
    }
    out = {}
    for name, runs in batches.items():
        db = out[name] = open_database(base / f"{len(out)}.db")
        for run in runs:
            ingest_docs(db, [str(p) for p in run], roots=[str(folder)], workers=0)
    return out


def differing(a, b):
    return {t for t in ORDER_FREE + LINKED if a[t] != b[t]}


def test_the_pages_make_a_graph_worth_comparing(orders):
    whole = snapshot(orders["all at once"])
    assert len(whole["docs"]) == 32
    assert len(whole["entities"]) > 300 and len(whole["relations"]) > 20
    # Words the pages share, found generic however they came in (refine.generic_entity_ids).
    db = orders["all at once"]
    norms = {n for (n,) in db.execute("select norm from entities where norm in ('return', 'modul', 'module')")}
    assert norms == set()


@pytest.mark.parametrize("order", ["one at a time, reversed", "two halves"])
def test_every_order_equals_a_clean_ingest(orders, order):
    assert_consistent(orders[order])
    assert differing(snapshot(orders[order]), snapshot(orders["all at once"])) == set()


@pytest.mark.parametrize("order", ["one at a time, reversed", "two halves"])
def test_cooccurrence_scores_equal_a_clean_ingest(orders, order):
    """Relations' meta (their co-occurrence scores, refine.score_cooccurrence) too: a
    document added anywhere changes every pair's, mentioned or not."""
    rows = lambda db: sorted(  # noqa: E731
        db.execute(
            "select s.type, s.norm, d.type, d.norm, r.rel, r.meta from relations r "
            "join entities s on s.id = r.src_id join entities d on d.id = r.dst_id"
        ).fetchall()
    )
    whole = rows(orders["all at once"])
    assert sum(1 for r in whole if r[4] == "related_to") > 5
    assert rows(orders[order]) == whole


HARBOUR = pathlib.Path(__file__).parent / "data" / "harbour"


def test_a_pair_held_as_weak_comes_back_when_the_corpus_grows_and_goes_when_it_shrinks(tmp_path):
    """"Kestrel cache" and "Heron index" share two sentences of one page: too few of the
    corpus's sentences while that page is alone for their co-occurrence to be significant
    (refine.score_cooccurrence holds it back), enough once the other pages come, which
    never mention either. Ingested page by page, the pair comes back as a clean ingest
    has it, scored with the counts of the corpus as it is; pruned back to that page, it
    is held again."""
    folder = tmp_path / "kb"
    shutil.copytree(HARBOUR, folder)
    db = open_database(tmp_path / "one.db")
    facts = []
    for name in ("z-harbour.md", "c-tides.md", "b-gulls.md", "a-boats.md"):
        ingest_docs(db, [str(folder / name)], roots=[str(folder)], workers=0)
        facts.append(db.execute("select fact, meta from relations").fetchall())
    fact = "Heron index is related to Kestrel cache"
    assert facts == [
        [],
        [(fact, '{"kind": "cooccurrence", "llr": 11.78, "pmi": 2.907}')],
        [(fact, '{"kind": "cooccurrence", "llr": 13.59, "pmi": 3.524}')],
        [(fact, '{"kind": "cooccurrence", "llr": 14.831, "pmi": 3.954}')],
    ]
    clean = open_database(tmp_path / "clean.db")
    ingest_docs(clean, [str(folder)], workers=0)
    assert_consistent(db)
    assert differing(snapshot(db), snapshot(clean)) == set()
    for name in ("a-boats.md", "b-gulls.md", "c-tides.md"):
        (folder / name).unlink()
    assert ingest_docs(db, [str(folder)], prune=True, workers=0).pruned == 3
    assert db.execute("select fact from relations").fetchall() == []
    alone = open_database(tmp_path / "alone.db")
    ingest_docs(alone, [str(folder)], workers=0)
    assert_consistent(db)
    assert differing(snapshot(db), snapshot(alone)) == set()


def test_a_page_linked_before_a_term_entered_the_gazetteer_is_linked_again(tmp_path):
    """"Tern Relay" is a salient term (a heading, bold) of two pages: the gazetteer has it
    once both are in (``gazetteer_min_freq`` 2). A page that only mentions it in passing,
    ingested before them, is extracted again then (``extract.gazetteer_changed``), as a
    clean ingest finds the term there; and again when one of the two goes."""
    folder = tmp_path / "kb"
    folder.mkdir()
    pages = {
        "a-relay.md": "# Tern Relay\n\nThe relay forwards buoy readings to the shore station every minute.\n",
        "b-buoys.md": "# Buoys\n\nEach buoy reports through the **Tern Relay** when the sea is calm.\n",
        "c-notes.md": "# Notes\n\nOn stormy nights the tern relay drops a reading or two.\n",
    }
    for name, text in pages.items():
        (folder / name).write_text(text)
    db = open_database(tmp_path / "one.db")
    for name in ("c-notes.md", "a-relay.md", "b-buoys.md"):
        ingest_docs(db, [str(folder / name)], roots=[str(folder)], workers=0)
    hits = lambda db: db.execute(  # noqa: E731
        "select d.path, m.surface from mentions m join docs d on d.id = m.doc_id "
        "where m.features like '%isGazetteerHit%' order by 1, 2"
    ).fetchall()
    assert hits(db) == [
        (str(folder / "a-relay.md"), "Tern Relay"),
        (str(folder / "b-buoys.md"), "Tern Relay"),
        (str(folder / "c-notes.md"), "tern relay"),
    ]
    clean = open_database(tmp_path / "clean.db")
    ingest_docs(clean, [str(folder)], workers=0)
    assert_consistent(db)
    assert differing(snapshot(db), snapshot(clean)) == set()
    (folder / "b-buoys.md").unlink()
    assert ingest_docs(db, [str(folder)], prune=True, workers=0).pruned == 1
    assert hits(db) == []
    left = open_database(tmp_path / "left.db")
    ingest_docs(left, [str(folder)], workers=0)
    assert_consistent(db)
    assert differing(snapshot(db), snapshot(left)) == set()
