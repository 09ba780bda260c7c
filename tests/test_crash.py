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

from llm_graphrag.cli import graphrag
from llm_graphrag.db import open_database
from llm_graphrag.embeddings import get_embedder
from llm_graphrag.extraction import spacy_pipeline
from llm_graphrag.schema import DEFAULT_MODEL
from llm_graphrag.status import status
from test_watch import snapshot

SAMPLE = pathlib.Path(__file__).parent.parent / "sample-corpus"
SEED = 20
# (command, workers) of each trial: ingest into an empty database, extract a database
# ingested with --no-extract; 0 runs everything in the killed process, 2 forks workers.
TRIALS = [("ingest", 0)] * 3 + [("ingest", 2)] * 3 + [("extract", 0)] * 2 + [("extract", 2)] * 2


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """17 files of the sample corpus: a bulk extraction (at least ``parallel.MIN_ITEMS``
    documents into an empty graph), quick enough to run a dozen times."""
    folder = tmp_path_factory.mktemp("crash") / "corpus"
    for sub in ("services", "runbooks", "adr"):
        shutil.copytree(SAMPLE / sub, folder / sub)
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
        out["dedup_sketches"] = sorted(
            db.execute("select d.path, s.sketches from dedup_sketches s join docs d on d.id = s.doc_id").fetchall()
        )
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


def test_sigkill_converges(corpus, tmp_path):
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
    durations = {"ingest": time.monotonic() - began - loading}
    durations["extract"] = durations["ingest"] - loading
    expected = dict.fromkeys(commands, state(path))

    rng = random.Random(SEED)
    outcomes = []
    for number, (command, workers) in enumerate(TRIALS):
        path = tmp_path / f"trial-{number}.db"
        if command == "extract":
            shutil.copy(loaded, path)
        args = commands[command](path, workers)
        moment = rng.uniform(0.05, 0.95) * durations[command]
        process = start(args)
        time.sleep(moment)
        children = descendants(process.pid)
        finished = process.exitcode is not None
        os.kill(process.pid, signal.SIGKILL)
        process.join()
        deadline = time.monotonic() + 10
        while any(map(alive, children)) and time.monotonic() < deadline:
            time.sleep(0.05)
        outcome = {
            "trial": number, "command": command, "workers": workers, "moment": round(moment, 2),
            "finished before the kill": finished, "workers seen": len(children),
            "survivors": [c for c in children if alive(c)], "phase": phase(path, files),
        }
        for pid in outcome["survivors"]:
            os.kill(pid, signal.SIGKILL)  # not left behind when the test fails
        outcome["integrity"], outcome["foreign keys"] = checks(path)
        outcome["status"] = {key: status(db)[key] for db in [open_database(path)] for key in ("pending_extraction", "suspended_triggers") if key in status(db)}
        run(args)
        got = state(path)
        outcome["differs"] = sorted(t for t in expected[command] if got.get(t) != expected[command][t])
        outcomes.append(outcome)
        print(outcome)
    failed = [
        o for o in outcomes
        if o["survivors"] or o["integrity"] != [("ok",)] or o["foreign keys"] != [] or o["differs"]
    ]
    assert failed == []
    assert any(o["workers seen"] for o in outcomes)
