"""Crash safety: SIGKILL at seeded random moments, then the same command converges.

Each trial starts ``llm graphrag ingest`` or ``llm graphrag extract`` (the click command, in
a forked process, so the interpreter and model are loaded once for all trials), kills it
with SIGKILL at a moment drawn from a seeded generator, and checks that the database
passes ``integrity_check`` and ``foreign_key_check``, that none of its worker processes
outlives it, and that running the same command again stores exactly what one
uninterrupted run stores (``test_watch.snapshot``: every table, ids replaced by what they
name, plus the triggers and the near-duplicate state).
"""

import multiprocessing
import os
import pathlib
import random
import shutil
import signal
import sqlite3
import time

import pytest

from llm_graphrag import dedup_store, extract, ingest
from llm_graphrag.cli import graphrag
from llm_graphrag.db import open_database
from llm_graphrag.embeddings import get_embedder
from llm_graphrag.extraction import spacy_pipeline
from llm_graphrag.schema import DEFAULT_MODEL
from llm_graphrag.status import status
from test_watch import snapshot

SAMPLE = pathlib.Path(__file__).parent.parent / "sample-corpus"
SEED = 20
# (command, workers, phase) of each trial: ingest into an empty database, extract a
# database ingested with --no-extract; 0 runs everything in the killed process, 2 forks
# workers; the kill comes at a random moment of the phase: "loading" (loading, chunking,
# embedding and writing documents: once a random number of them is stored) or
# "extraction" (extraction, linking, refinement: a random time after the last is stored).
TRIALS = [
    ("ingest", 0, "loading"), ("ingest", 0, "extraction"), ("ingest", 2, "loading"),
    ("ingest", 2, "extraction"), ("ingest", 0, "loading"), ("ingest", 2, "extraction"),
    ("extract", 0, "extraction"), ("extract", 2, "extraction"), ("extract", 0, "extraction"),
    ("extract", 2, "extraction"),
]
# Documents written per extraction transaction: 64 would write these 17 in one, so a kill
# could never land between two; a large corpus has many.
BATCH_DOCUMENTS = 3
EMBED_CHUNKS = 4  # chunks embedded per call while ingesting, then written: 256 by default


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """17 files of the sample corpus: a bulk extraction (at least ``parallel.MIN_ITEMS``
    documents into an empty graph), quick enough to run a dozen times."""
    folder = tmp_path_factory.mktemp("crash") / "corpus"
    for sub in ("services", "runbooks", "adr"):
        shutil.copytree(SAMPLE / sub, folder / sub)
    # Near-duplicates of paragraphs an earlier file holds: dropped only while the
    # near-duplicate state of that file is known, whether this run read it or not.
    adr = (SAMPLE / "adr/0001-dedicated-time-series-store.md").read_text().split("\n\n")
    context = next(p for p in adr if p.startswith("Until early 2021"))
    (folder / "services/tidepool-notes.md").write_text(
        "# Tidepool notes\n\n" + context + "\n\n" + context.replace("fine.", "fine, at first.")
        + "\n\nTidepool answers dashboard queries from the compacted hourly partitions.\n"
    )
    # Loaded here once, before any fork, not by every run (spaCy alone takes seconds).
    spacy_pipeline()
    get_embedder(DEFAULT_MODEL).encode(["warm up"])
    return folder


def _main(args):
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    graphrag.main(args, prog_name="llm graphrag")


def start(args):
    """``llm graphrag ARGS`` in a forked process."""
    process = multiprocessing.get_context("fork").Process(target=_main, args=(args,))
    process.start()
    return process


def run(args, timeout=300):
    process = start(args)
    process.join(timeout)
    assert process.exitcode == 0, f"llm graphrag {' '.join(args)} exited with {process.exitcode}"


def descendants(pid):
    """The processes ``pid`` started, and theirs, from /proc."""
    found, stack = [], [pid]
    while stack:
        for task in pathlib.Path(f"/proc/{stack.pop()}/task").glob("*/children"):
            try:
                children = [int(c) for c in task.read_text().split()]
            except OSError:
                continue
            found += children
            stack += children
    return found


def alive(pid):
    """Whether ``pid`` runs (a zombie waiting to be reaped does not)."""
    try:
        stat = pathlib.Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def state(path):
    """``test_watch.snapshot`` plus the triggers and the near-duplicate state."""
    db = open_database(path, create=False)
    try:
        out = snapshot(db)
        out["triggers"] = db.execute(
            "select name, sql from sqlite_master where type = 'trigger' order by name"
        ).fetchall()
        if db["dedup_paragraphs"].exists():
            out["dedup_paragraphs"] = sorted(
                db.execute(
                    "select d.path, p.seq, p.dropped, p.pending, p.sketch from dedup_paragraphs p "
                    "join docs d on d.id = p.doc_id"
                ).fetchall()
            )
            out["dedup_docs"] = sorted(db.execute("select d.path from dedup_docs s join docs d on d.id = s.doc_id").fetchall())
            out["dedup_removed"] = db.execute("select count(*) from dedup_removed").fetchall()
        out["settings"] = db.execute(
            "select key, value from graphrag_settings where key not in ('last_ingest') order by key"
        ).fetchall()
        return out
    finally:
        db.close()


def checks(path):
    """``(integrity_check, foreign_key_check)`` rows, on a plain connection."""
    conn = sqlite3.connect(path)
    try:
        return conn.execute("pragma integrity_check").fetchall(), conn.execute("pragma foreign_key_check").fetchall()
    finally:
        conn.close()


def phase(path, files):
    """Where a killed run was, read from what it stored."""
    conn = sqlite3.connect(path)
    try:
        try:
            docs, extracted = conn.execute("select count(*), count(extracted_hash) from docs").fetchone()
        except sqlite3.OperationalError:
            return "setup (no schema yet)"
    finally:
        conn.close()
    if docs < files:
        return f"loading and embedding ({docs}/{files} documents stored)"
    if extracted < files:
        return f"extraction and linking ({extracted}/{files} documents extracted)"
    return "refinement or after"


def test_sigkill_converges(corpus, tmp_path, monkeypatch):
    monkeypatch.setattr(extract._Batch, "MAX_DOCUMENTS", BATCH_DOCUMENTS)
    monkeypatch.setattr(ingest, "EMBED_BATCH", EMBED_CHUNKS)
    files = sum(1 for p in corpus.rglob("*") if p.is_file())
    commands = {
        "ingest": lambda db, w: ["ingest", str(corpus), "-d", str(db), "--workers", str(w)],
        "extract": lambda db, w: ["extract", "-d", str(db), "--workers", str(w)],
    }
    # The uninterrupted run, timed, and the starting point of extract's trials.
    loaded, path = tmp_path / "loaded.db", tmp_path / "expected.db"
    began = time.monotonic()
    run(["ingest", str(corpus), "-d", str(loaded), "--no-extract", "--workers", "0"])
    loading = time.monotonic() - began
    run(commands["ingest"](path, 0))
    extracting = time.monotonic() - began - 2 * loading
    expected = dict.fromkeys(commands, state(path))

    rng = random.Random(SEED)
    outcomes = []
    for number, (command, workers, moment_in) in enumerate(TRIALS):
        path = tmp_path / f"trial-{number}.db"
        # While loading: once a random number of documents is stored. While extracting:
        # a random moment of the extraction time after the last document was stored.
        stored = rng.randint(1, files // 2) if moment_in == "loading" else files
        high = 0 if moment_in == "loading" else extracting
        while True:  # a run that ends before its moment is tried again, earlier
            for leftover in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
                leftover.unlink(missing_ok=True)
            if command == "extract":
                shutil.copy(loaded, path)
            args = commands[command](path, workers)
            delay = rng.uniform(0, high)
            process = start(args)
            started = time.monotonic()
            wait_for_documents(path, stored, process)
            time.sleep(delay)
            children = descendants(process.pid)
            if process.exitcode is None:
                break
            high = delay
        moment = time.monotonic() - started
        os.kill(process.pid, signal.SIGKILL)
        process.join()
        deadline = time.monotonic() + 10
        while any(map(alive, children)) and time.monotonic() < deadline:
            time.sleep(0.05)
        outcome = {
            "trial": number, "command": command, "workers": workers, "moment": round(moment, 2), "in": moment_in,
            "workers seen": len(children),
            "survivors": [c for c in children if alive(c)], "phase": phase(path, files),
        }
        for pid in outcome["survivors"]:
            os.kill(pid, signal.SIGKILL)  # not left behind when the test fails
        outcome["integrity"], outcome["foreign keys"] = checks(path)
        outcome["unextracted"] = unextracted(path)
        outcome["status"] = unfinished(path)
        run(args)
        got = state(path)
        outcome["differs"] = sorted(t for t in expected[command] if got.get(t) != expected[command][t])
        outcome["status after"] = unfinished(path)
        outcomes.append(outcome)
        print(outcome)
    failed = [
        o for o in outcomes
        if o["survivors"] or o["integrity"] != [("ok",)] or o["foreign keys"] != [] or o["differs"]
        or o["status"].get("pending_extraction") != o["unextracted"] or o["status after"] != FINISHED
    ]
    assert failed == []
    # Kills landed among workers, between stored documents, and between extracted ones.
    assert any(o["workers seen"] for o in outcomes)
    assert any(o["phase"].startswith("loading") and not o["phase"].startswith("loading and embedding (0/") for o in outcomes)
    assert any(o["phase"].startswith("extraction") and o["unextracted"] < files for o in outcomes)


def wait_for_documents(path, count, process):
    """Until at least ``count`` documents are stored in ``path``, or ``process`` ends."""
    while process.exitcode is None:
        try:
            conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
            try:
                if conn.execute("select count(*) from docs").fetchone()[0] >= count:
                    return
            finally:
                conn.close()
        except sqlite3.Error:
            pass  # no file or no schema yet
        time.sleep(0.01)


FINISHED = {"pending_extraction": 0, "pending_refinement": 0, "suspended_triggers": []}


def unfinished(path):
    """What ``status`` says runs left undone."""
    db = open_database(path)
    try:
        return {key: value for key, value in status(db).items() if key in FINISHED}
    finally:
        db.close()


def unextracted(path):
    conn = sqlite3.connect(path)
    try:
        return conn.execute("select count(*) from docs where extracted_hash is null").fetchone()[0]
    except sqlite3.OperationalError:  # killed before it made the schema
        return 0
    finally:
        conn.close()


WORDS = "tidepool compacts the hourly partitions of the basin store every night".split()


class Died(BaseException):
    """A process that dies where this is raised (not an ``Exception``: nothing catches it)."""


def loaded(folder, path):
    """A database at ``path`` with ``folder``'s documents loaded, none extracted yet."""
    from llm_graphrag.ingest import ingest_docs

    db = open_database(path)
    ingest_docs(db, [str(folder)], extract=False)
    return db


def test_a_run_dying_before_it_extracts_again_leaves_that_to_the_next(corpus, tmp_path, monkeypatch):
    """The documents a refined graph links otherwise (``extract.AGAIN_SETTING``) are stored
    in the transaction that refines it: a run that dies before it extracts them again leaves
    them to the next run, which then stores what one uninterrupted run stores."""
    whole = loaded(corpus, tmp_path / "whole.db")
    rounds = []
    real_run = extract._run

    def counting(db, pending, *args, **kwargs):
        rounds.append([p[0] for p in pending])
        return real_run(db, pending, *args, **kwargs)

    monkeypatch.setattr(extract, "_run", counting)
    extract.extract_and_link(whole, workers=0)
    assert len(rounds) > 1  # this corpus has documents to extract again
    expected = state(tmp_path / "whole.db")
    whole.close()

    def dying(db, pending, *args, **kwargs):
        rounds.append([p[0] for p in pending])
        if len(rounds) == 2:
            raise Died
        return real_run(db, pending, *args, **kwargs)

    rounds.clear()
    db = loaded(corpus, tmp_path / "killed.db")
    monkeypatch.setattr(extract, "_run", dying)
    with pytest.raises(Died):
        extract.extract_and_link(db, workers=0)
    again = rounds[1]
    assert extract.unfinished_work(db) == {
        "pending_extraction": 0, "pending_refinement": len(again), "suspended_triggers": [],
    }
    extract.extract_and_link(db, workers=0)
    assert extract.unfinished_work(db) == FINISHED
    db.close()
    assert state(tmp_path / "killed.db") == expected


NEAR = pathlib.Path(__file__).parent / "data" / "near-duplicates"


def test_a_run_dying_before_it_loads_later_pages_again_leaves_that_to_the_next(tmp_path, monkeypatch):
    """A page written records in its own transaction what changed at its path
    (``dedup_store``): a run that dies before it loads again the pages after it whose
    near-duplicates changed leaves that to the next run: the same command, which finds the
    page unchanged, loads them again."""
    from llm_graphrag.ingest import ingest_docs

    folder = tmp_path / "kb"
    folder.mkdir()
    for page in NEAR.glob("*.rst.txt"):
        shutil.copy(page, folder / page.name)
    whole = open_database(tmp_path / "whole.db")
    ingest_docs(whole, [str(folder)], workers=0)
    whole.close()
    expected = state(tmp_path / "whole.db")
    db = open_database(tmp_path / "killed.db")
    ingest_docs(db, [str(folder / "pwd.rst.txt"), str(folder / "spwd.rst.txt")], roots=[str(folder)], workers=0)

    def dying(*args):
        raise Died

    monkeypatch.setattr(dedup_store, "stale_documents", dying)
    with pytest.raises(Died):
        ingest_docs(db, [str(folder / "grp.rst.txt")], roots=[str(folder)], workers=0)
    monkeypatch.undo()
    pending = db.execute("select count(*) from dedup_paragraphs where pending").fetchone()[0]
    assert pending == db.execute(
        "select count(*) from dedup_paragraphs p join docs d on d.id = p.doc_id where d.path like '%grp.rst.txt'"
    ).fetchone()[0] == 9
    assert state(tmp_path / "killed.db") != expected  # pwd still keeps grp's paragraph
    result = ingest_docs(db, [str(folder / "grp.rst.txt")], roots=[str(folder)], workers=0)
    assert (result.skipped, result.ingested) == (1, 1)
    assert result.doc_ids == [db.execute("select id from docs where path like '%/pwd.rst.txt'").fetchone()[0]]
    db.close()
    assert state(tmp_path / "killed.db") == expected


@pytest.mark.parametrize("dies_in", ["_absorbing", "refine_graph"])
def test_a_run_dying_after_it_links_leaves_the_names_to_link_again_to_the_next(corpus, tmp_path, monkeypatch, dies_in):
    """The documents whose mentions a new, fuller name would take (``extract._absorbing``,
    found in memory once every document is linked and written) are stored before the graph
    is refined: a run that dies while it refines leaves them to the next, and one that dies
    before it looks for them leaves the next to look (``extract._absorbing_since``); the
    next stores what one uninterrupted run stores."""
    whole = loaded(corpus, tmp_path / "whole.db")
    absorbed = []
    real_absorbing = extract._absorbing

    def recording(*args):
        absorbed.append(real_absorbing(*args))
        return absorbed[-1]

    monkeypatch.setattr(extract, "_absorbing", recording)
    extract.extract_and_link(whole, workers=0)
    assert absorbed[0]  # this corpus has names a fuller one takes
    expected = state(tmp_path / "whole.db")
    whole.close()

    def dying(*args, **kwargs):
        raise Died

    db = loaded(corpus, tmp_path / "killed.db")
    with monkeypatch.context() as patched:
        patched.setattr(extract, dies_in, dying)
        with pytest.raises(Died):
            extract.extract_and_link(db, workers=0)
    assert extract.unfinished_work(db)["pending_refinement"] > 0
    extract.extract_and_link(db, workers=0)
    assert extract.unfinished_work(db) == FINISHED
    db.close()
    assert state(tmp_path / "killed.db") == expected
