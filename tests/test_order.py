"""Order effects on real text: 32 python3.11-doc pages ingested in three orders give
the same graph (``bench/bench_order.py`` does the same on more pages); three pages whose
paragraphs repeat each other keep what a clean ingest keeps, whatever the order, the
batches, the workers, and the edits, renames and deletes of a watched folder."""

import os
import pathlib
import shutil

import pytest

from test_watch import LINKED, ORDER_FREE, assert_consistent, ingest_in_orders, settle, snapshot

from llm_graphrag.db import open_database
from llm_graphrag.ingest import ingest_docs
from llm_graphrag.watch import Watcher

PAGES = pathlib.Path(__file__).parent / "data" / "python-docs"


@pytest.fixture(scope="module")
def orders(tmp_path_factory):
    """``{order: database}``: the pages all at once, one at a time in reverse, in two halves."""
    dbs, _ = ingest_in_orders(PAGES, tmp_path_factory.mktemp("order"), lambda folder, files: {
        "all at once": [[folder]],
        "one at a time, reversed": [[f] for f in reversed(files)],
        "two halves": [files[: len(files) // 2], files[len(files) // 2 :]],
    })
    return dbs


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
        facts.append(db.execute("select fact, meta from relations where rel = 'related_to'").fetchall())
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
    assert db.execute("select fact from relations where rel = 'related_to'").fetchall() == []
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


NEAR = pathlib.Path(__file__).parent / "data" / "near-duplicates"
# The "See also" paragraphs of grp, pwd and spwd: pwd repeats grp's SHADOW, spwd pwd's GROUP.
SHADOW = "Module `spwd`: An interface to the shadow password database, similar to this."
GROUP = "Module `grp`: An interface to the group database, similar to this."


def holding(db, text):
    """The names of the documents whose chunks hold ``text``."""
    rows = db.execute(
        "select distinct d.path from chunks c join docs d on d.id = c.doc_id where instr(c.content, ?) order by 1",
        [text],
    ).fetchall()
    return [pathlib.Path(path).name for (path,) in rows]


def near_folder(tmp_path):
    folder = tmp_path / "kb"
    folder.mkdir()
    for page in sorted(NEAR.glob("*.rst.txt")):
        shutil.copy(page, folder / page.name)
    return folder, [folder / name for name in ("grp.rst.txt", "pwd.rst.txt", "spwd.rst.txt")]


def assert_clean(db, folder, path):
    """``db`` equals a clean ingest of ``folder`` (made at ``path``) in every table."""
    clean = open_database(path)
    ingest_docs(clean, [str(folder)], workers=0)
    assert_consistent(db)
    assert differing(snapshot(db), snapshot(clean)) == set()
    return clean


@pytest.mark.parametrize(
    "order, workers",
    [("one at a time, reversed", 0), ("the middle one last", 0), ("one at a time, a loading process", 2)],
)
def test_near_duplicate_paragraphs_are_dropped_whatever_the_order(tmp_path, order, workers):
    """A paragraph is dropped when it nearly repeats one of a page whose path sorts
    before (dropped or not), however the pages came in: a page ingested before the one
    it repeats is loaded again when that one comes. ``workers=2`` loads in a forked
    process, which reads the stored paragraphs at the start."""
    folder, (grp, pwd, spwd) = near_folder(tmp_path)
    runs = {
        "one at a time, reversed": [[spwd], [pwd], [grp]],
        "the middle one last": [[grp, spwd], [pwd]],
        "one at a time, a loading process": [[pwd], [spwd], [grp]],
    }[order]
    db = open_database(tmp_path / "one.db")
    for run in runs:
        ingest_docs(db, [str(p) for p in run], roots=[str(folder)], workers=workers)
    clean = assert_clean(db, folder, tmp_path / "clean.db")
    assert (holding(clean, SHADOW), holding(clean, GROUP)) == (["grp.rst.txt"], ["pwd.rst.txt"])
    names = lambda db: db.execute(  # noqa: E731
        "select d.path, p.seq, p.dropped, p.pending from dedup_paragraphs p join docs d on d.id = p.doc_id "
        "where p.dropped or p.pending order by d.path, p.seq"
    ).fetchall()
    assert names(db) == names(clean) == [(str(pwd), 8, 1, 0), (str(spwd), 8, 1, 0)]
    assert db.execute("select count(*) from dedup_removed").fetchone()[0] == 0


def test_a_watched_folder_keeps_what_a_clean_ingest_keeps(tmp_path):
    """A watcher's edit, rename and delete of one page each (only that page is given to
    ``ingest_docs``) load again the pages after it whose near-duplicates changed."""
    folder, (grp, pwd, spwd) = near_folder(tmp_path)
    db = open_database(tmp_path / "live.db")
    for page in (spwd, pwd, grp):
        ingest_docs(db, [str(page)], roots=[str(folder)], workers=0)
    db.close()
    watcher = Watcher(tmp_path / "live.db", [folder], debounce_ms=200).start()
    settle(watcher)
    db = open_database(tmp_path / "live.db")
    kept = []

    def step(change):
        change()
        settle(watcher)
        assert watcher.state["last_error"] is None
        # A reader of its own each time (``assert_consistent`` leaves a transaction open).
        live = open_database(tmp_path / "live.db")
        assert_clean(live, folder, tmp_path / f"clean{len(kept)}.db")
        kept.append((holding(live, SHADOW), holding(live, GROUP)))
        live.close()

    try:
        # grp no longer names spwd: pwd's paragraph is no repeat any more.
        step(lambda: grp.write_text(grp.read_text().replace(
            "   Module :mod:`spwd`\n      An interface to the shadow password database, similar to this.\n", ""
        )))
        # A rename that keeps its place before pwd: moved, not extracted again.
        before = db.execute("select id, extracted_hash from docs where path = ?", [str(grp)]).fetchone()
        step(lambda: os.rename(grp, folder / "group.rst.txt"))
        assert db.execute("select id, extracted_hash from docs where path = ?", [str(folder / "group.rst.txt")]).fetchone() == before
        # spwd renamed before pwd: now pwd repeats spwd's paragraph, not the reverse.
        step(lambda: os.rename(spwd, folder / "a-spwd.rst.txt"))
        # Gone: pwd keeps its paragraph again.
        step(lambda: os.unlink(folder / "a-spwd.rst.txt"))
    finally:
        watcher.stop()
    assert kept == [
        (["pwd.rst.txt"], ["pwd.rst.txt"]),
        (["pwd.rst.txt"], ["pwd.rst.txt"]),
        (["pwd.rst.txt"], ["a-spwd.rst.txt"]),
        (["pwd.rst.txt"], ["pwd.rst.txt"]),
    ]


def test_documents_stored_before_their_paragraphs_were_are_loaded_again_once(tmp_path):
    """A database from before ``dedup_paragraphs`` has no paragraphs stored (the
    migration drops ``dedup_sketches``, which held only one run's): the next ingest of a
    file loads it again, and writes only that state when its chunks come out the same."""
    folder, (grp, pwd, spwd) = near_folder(tmp_path)
    db = open_database(tmp_path / "old.db")
    ingest_docs(db, [str(pwd)], roots=[str(folder)], workers=0)
    ingest_docs(db, [str(grp), str(spwd)], roots=[str(folder)], workers=0)
    with db.atomic():
        db.execute("delete from dedup_paragraphs")
        db.execute("delete from dedup_docs")
    # As before: pwd, ingested alone first, kept grp's paragraph.
    db.execute("update chunks set content = content || ? where doc_id = (select id from docs where path = ?) "
               "and seq = (select max(seq) from chunks c join docs d on d.id = c.doc_id where d.path = ?)",
               ["\n\n" + SHADOW, str(pwd), str(pwd)])
    assert holding(db, SHADOW) == ["grp.rst.txt", "pwd.rst.txt"]
    result = ingest_docs(db, [str(folder)], workers=0)
    assert (result.ingested, result.skipped) == (1, 2)  # pwd loses the paragraph; the others are as they were
    assert holding(db, SHADOW) == ["grp.rst.txt"]
    assert_clean(db, folder, tmp_path / "clean.db")


# Lines of python3.11-doc's library/__main__, library/index and library/asyncio-api-index:
# "-c" and "C" have the norm "c", "I/O" and "IO" the norm "io", letters the stop-word list holds.
SHORT_WORDS = {
    "main.rst.txt": "__main__\n========\n\n* Python code passed to the Python interpreter with the "
    ":option:`-c` argument:\n\n  .. code-block:: shell-session\n\n     $ python3 -c \"import this\"\n",
    "library.rst.txt": "The Python Standard Library\n===========================\n\nPython's standard "
    "library is very extensive. The library contains built-in modules (written in C) that "
    "provide access to system functionality such as file I/O that would otherwise be "
    "inaccessible to Python programmers.\n",
    "streams.rst.txt": "Streams\n=======\n\nHigh-level APIs to work with network IO.\n",
}


@pytest.mark.parametrize(
    "names", [["main.rst.txt", "library.rst.txt", "streams.rst.txt"], ["streams.rst.txt", "library.rst.txt", "main.rst.txt"]]
)
def test_a_one_or_two_letter_word_is_generic_or_not_whatever_the_order(tmp_path, names):
    """Whether "io" is a generic word is a matter of its norm, not of the name its first
    mention gave it ("I/O" or "IO"): one page at a time, in either order, gives what a
    clean ingest gives. The option ``-c`` keeps its dash (code), apart from the letter."""
    folder = tmp_path / "kb"
    folder.mkdir()
    for name, text in SHORT_WORDS.items():
        (folder / name).write_text(text)
    db = open_database(tmp_path / "one.db")
    for name in names:
        ingest_docs(db, [str(folder / name)], roots=[str(folder)], workers=0)
    clean = assert_clean(db, folder, tmp_path / "clean.db")
    short = lambda db: db.execute(  # noqa: E731
        "select e.norm, e.name, count(m.id) from entities e join mentions m on m.entity_id = e.id "
        "where e.norm in ('c', '-c', 'io') group by e.id order by 1, 2"
    ).fetchall()
    assert short(db) == short(clean)
    assert short(clean) == [("-c", "-c", 1), ("io", "I/O", 2)]


def test_extracting_again_stops_at_the_round_that_changes_nothing(tmp_path, monkeypatch):
    """A page found again after every second extraction (its near-identical names: see
    tests/data/python-init-config/README.md) stops when a round links it as before and finds
    it again (``extract._again_rounds``): one round less than ``AGAIN_ROUNDS``, and what
    every round would have stored."""
    from llm_graphrag import extract

    page = pathlib.Path(__file__).parent / "data" / "python-init-config" / "c-api_init_config.rst.txt"
    rounds = []
    real_run = extract._run

    def counting(db, pending, *args, **kwargs):
        totals, again = real_run(db, pending, *args, **kwargs)
        rounds.append(again)
        return totals, again

    monkeypatch.setattr(extract, "_run", counting)
    stopped = open_database(tmp_path / "stopped.db")
    ingest_docs(stopped, [str(page)], workers=0)
    assert rounds == [[1], [1], [1]] and extract.AGAIN_ROUNDS == 3
    rounds.clear()
    changing = iter(range(1000))
    monkeypatch.setattr(extract, "_links", lambda db, doc_ids: next(changing))  # never the same
    every = open_database(tmp_path / "every.db")
    ingest_docs(every, [str(page)], workers=0)
    assert rounds == [[1], [1], [1], [1]]
    assert_consistent(stopped)
    a, b = snapshot(stopped), snapshot(every)
    assert {t for t in ORDER_FREE + LINKED if a[t] != b[t]} == set()


def test_a_changed_page_whose_names_come_back_sends_no_other_page_back(tmp_path):
    """A page taken back to be extracted again makes its names anew; one that had mentions
    of its own before ("Bit Masks", near the other pages' "bitmask") was in when the other
    pages were linked, so they are not extracted again (``extract._absorbing``,
    ``returning``): their mention rows stay as they were, and the database still equals a
    clean ingest of the folder."""
    folder = tmp_path / "docs"
    shutil.copytree(pathlib.Path(__file__).parent / "data" / "python-bitmasks", folder)
    (folder / "README.md").unlink()
    db = open_database(tmp_path / "live.db")
    ingest_docs(db, [str(folder)], workers=0)
    assert db.execute("select count(*) from entities where name = 'Bit Masks'").fetchone()[0] == 1
    mention_rows = "select d.path, group_concat(m.id) from docs d join mentions m on m.doc_id = d.id group by d.path"
    before = dict(db.execute(mention_rows).fetchall())
    changed = folder / "c-api_typeobj.rst.txt"
    with open(changed, "a") as fp:
        fp.write("\n\nA closing note: the quasar heron counts seven pebbles.\n")
    ingest_docs(db, [str(changed)], roots=[str(folder)], workers=0)
    assert not db.conn.in_transaction
    after = dict(db.execute(mention_rows).fetchall())
    assert after[str(changed)] != before[str(changed)]
    assert {p: after[p] for p in after if p != str(changed)} == {p: before[p] for p in before if p != str(changed)}
    clean = open_database(tmp_path / "clean.db")
    ingest_docs(clean, [str(folder)], workers=0)
    assert_consistent(db)
    a, b = snapshot(db), snapshot(clean)
    assert {t for t in ORDER_FREE + LINKED if a[t] != b[t]} == set()
