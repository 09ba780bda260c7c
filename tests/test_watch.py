"""The watcher: events to index, move and purge jobs; deletes cascade; special files; stops."""

import json
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

import httpx
import pytest
from click.testing import CliRunner

from llm_graphrag import parallel
from llm_graphrag.cli import graphrag
from llm_graphrag.db import open_database
from llm_graphrag.ingest import ingest_docs, orphaned_entities
from llm_graphrag.status import status
from llm_graphrag.watch import Watcher

SAMPLE = pathlib.Path(__file__).parent.parent / "sample-corpus"
A, B, C, D, E, X = (
    SAMPLE / name
    for name in (
        "services/tidepool.md",
        "services/basin.md",
        "runbooks/tidepool-compaction.rst",
        "adr/0001-dedicated-time-series-store.md",
        "services/service-dependencies.md",
        "science/turbidity.md",
    )
)


def snapshot(db):
    """Every table that ingest and extraction write, with ids replaced by what they name."""
    rows = lambda sql: db.execute(sql).fetchall()  # noqa: E731
    doc = dict(rows("select id, path from docs"))
    chunk = {i: (doc[d], seq) for i, d, seq in rows("select id, doc_id, seq from chunks")}
    entity = {i: key for i, *key in rows("select id, type, norm, name from entities")}
    relation = {i: (entity[s], entity[d], r) for i, s, d, r in rows("select id, src_id, dst_id, rel from relations")}
    keys = {"chunks": chunk, "entities": entity, "facts": relation}
    out = {
        "docs": rows("select path, source, mtime_ms, meta, title, hash, size, extracted_hash from docs"),
        "chunks": [
            (chunk[r[0]], *r[1:])
            for r in rows("select id, content, prelude, section, hash, token_count, meta from chunks")
        ],
        "gazetteer_terms": [(doc[r[0]], *r[1:]) for r in rows("select * from gazetteer_terms")],
        # Where mentions are and what was found there; linking is compared separately.
        "mention_spans": [
            (chunk[r[0]], *r[1:])
            for r in rows("select chunk_id, span_start, span_end, surface, type, score, features, snippet, meta from mentions")
        ],
        "chunks_fts": rows("select content, section from chunks_fts"),
        "entities": [
            (entity[r[0]], *r[1:])
            for r in rows("select id, aliases, description, popularity, meta, status from entities")
        ],
        "mentions": [
            (entity.get(r[0]), chunk[r[1]], r[2], r[3], r[4])
            for r in rows("select entity_id, chunk_id, span_start, surface, link_score from mentions")
        ],
        "relations": [
            (relation[r[0]], r[1], r[2], r[3], chunk.get(r[4]), r[5])
            for r in rows("select id, weight, confidence, fact, chunk_id, evidence_count from relations")
        ],
        "relation_evidence": [
            (relation[r[0]], chunk[r[1]], *r[2:])
            for r in rows("select relation_id, chunk_id, sentence, confidence, extractor from relation_evidence")
        ],
        "entities_fts": rows("select name, aliases from entities_fts"),
        "relations_fts": rows("select fact from relations_fts"),
    }
    for name, key in keys.items():
        out[f"embeddings:{name}"] = [
            (key[int(i)], bytes(v))
            for i, v in rows(
                "select e.id, e.embedding from embeddings e join collections c on c.id = e.collection_id "
                f"where c.name = '{name}'"
            )
        ]
    for table, pk, name in (("chunk_vec", "chunk_id", "chunks"), ("entity_vec", "entity_id", "entities"), ("fact_vec", "relation_id", "facts")):
        out[table] = [(keys[name][i], bytes(v)) for i, v in rows(f"select {pk}, embedding from {table}")]
    return {table: sorted(values, key=repr) for table, values in out.items()}


# What does not depend on the order documents were linked in, and what does.
ORDER_FREE = ("docs", "chunks", "embeddings:chunks", "chunk_vec", "chunks_fts", "gazetteer_terms")
LINKED = (
    "mention_spans", "entities", "mentions", "relations", "relation_evidence", "entities_fts", "relations_fts",
    "embeddings:entities", "entity_vec", "embeddings:facts", "fact_vec",
)


def ingest_in_orders(pages, base, orders):
    """``({order: database}, folder)``: the ``*.rst.txt`` pages of ``pages`` copied to one
    folder, ingested by ``orders(files)``'s runs (``{order: [[path, ...], ...]}``), each order
    into its own database, with no worker processes."""
    folder = base / "docs"
    folder.mkdir()
    for page in sorted(pages.glob("*.rst.txt")):
        shutil.copy(page, folder / page.name)
    out = {}
    for name, runs in orders(folder, sorted(folder.iterdir())).items():
        db = out[name] = open_database(base / f"{len(out)}.db")
        for run in runs:
            ingest_docs(db, [str(p) for p in run], roots=[str(folder)], workers=0)
    return out, folder


def assert_consistent(db):
    """No orphans, and every count, vector and index agrees with the rows it stands for."""
    one = lambda sql: db.execute(sql).fetchone()[0]  # noqa: E731
    assert orphaned_entities(db) == 0
    assert one("select count(*) from entities e where popularity != (select count(*) from mentions m where m.entity_id = e.id)") == 0
    assert one("select count(*) from relations r where evidence_count != (select count(*) from relation_evidence v where v.relation_id = r.id) or evidence_count = 0") == 0
    assert db.execute("pragma foreign_key_check").fetchall() == []
    assert db.execute("pragma integrity_check").fetchall() == [("ok",)]
    for name, table, pk, source in (("chunks", "chunk_vec", "chunk_id", "chunks"), ("entities", "entity_vec", "entity_id", "entities")):
        ids = {r[0] for r in db.execute(f"select id from {source}")}
        assert {int(r[0]) for r in db.execute("select e.id from embeddings e join collections c on c.id = e.collection_id where c.name = ?", [name])} == ids
        assert {r[0] for r in db.execute(f"select {pk} from {table}")} == ids
    facts = {r[0] for r in db.execute("select id from relations")}
    assert {r[0] for r in db.execute("select relation_id from fact_vec")} <= facts
    for fts in ("chunks_fts", "entities_fts", "relations_fts"):
        db.execute(f"insert into {fts}({fts}) values ('integrity-check')")


def settle(watcher):
    time.sleep(0.3)  # longer than the debounce: the events are queued
    assert watcher.wait_idle(120)


@pytest.fixture(scope="module")
def live_and_clean(tmp_path_factory):
    """A watched folder through adds, a change, a rename, a restore and a delete, and a
    clean ingest of the folder it ended as."""
    base = tmp_path_factory.mktemp("live")
    folder = base / "knowledge"
    folder.mkdir()
    watcher = Watcher(base / "live.db", [folder], debounce_ms=200).start()
    db = open_database(base / "live.db")
    orphans = []

    def step(change):
        change()
        settle(watcher)
        orphans.append(orphaned_entities(db))

    step(lambda: (shutil.copy(C, folder / C.name), shutil.copy(D, folder / "draft.md")))
    step(lambda: (shutil.copy(X, folder / X.name), (folder / B.name).write_text(B.read_text().replace("Basin", "Lagoon"))))
    # Taken just before the rename: documents that came since may have had it linked again.
    moved = db.execute("select id, extracted_hash from docs where path = ?", [str(folder / "draft.md")]).fetchone()
    mentions = db.execute("select id, entity_id from mentions where doc_id = ? order by id", [moved[0]]).fetchall()
    step(lambda: os.rename(folder / "draft.md", folder / D.name))
    after_move = (
        db.execute("select id, extracted_hash from docs where path = ?", [str(folder / D.name)]).fetchone(),
        db.execute("select id, entity_id from mentions where doc_id = ? order by id", [moved[0]]).fetchall(),
    )
    step(lambda: (shutil.copy(A, folder / A.name), shutil.copy(E, folder / E.name), shutil.copy(B, folder / B.name), os.unlink(folder / X.name)))
    watcher.stop()
    clean = open_database(base / "clean.db")
    ingest_docs(clean, [str(folder)], workers=0)
    return {
        "live": db, "clean": clean, "watcher": watcher, "orphans": orphans, "folder": folder,
        "move": ((moved, mentions), after_move),
    }


def test_every_step_leaves_no_orphans_and_a_consistent_database(live_and_clean):
    assert live_and_clean["orphans"] == [0, 0, 0, 0]
    assert_consistent(live_and_clean["live"])
    assert_consistent(live_and_clean["clean"])
    watcher = live_and_clean["watcher"]
    assert watcher.state["last_error"] is None
    assert watcher.state["running"] is False
    # 2 added, then 2 added or changed, 1 moved, then 2 added, 1 restored, 1 deleted
    assert watcher.state["files_processed"] == 9


def test_rename_moves_the_document_without_extracting_again(live_and_clean):
    (doc, mentions), (doc_after, mentions_after) = live_and_clean["move"]
    assert doc_after == doc  # same id, still extracted from the same content
    assert mentions_after == mentions and mentions  # the same mention rows: not extracted again
    live = live_and_clean["live"]
    prelude = live.execute("select prelude from chunks where doc_id = ? and seq = 0", [doc[0]]).fetchone()[0]
    assert prelude.startswith(D.name)


def test_documents_chunks_and_chunk_vectors_equal_a_clean_ingest(live_and_clean):
    live, clean = snapshot(live_and_clean["live"]), snapshot(live_and_clean["clean"])
    assert {t: len(clean[t]) for t in ORDER_FREE}["docs"] == 5
    for table in ORDER_FREE:
        assert live[table] == clean[table], table


def test_linked_tables_equal_a_clean_ingest(live_and_clean):
    live, clean = snapshot(live_and_clean["live"]), snapshot(live_and_clean["clean"])
    assert {t for t in LINKED if live[t] != clean[t]} == set()


def test_purge_and_one_at_a_time_equal_a_clean_ingest(tmp_path):
    """What deleting takes back is exactly what ingesting added: a file ingested and purged
    leaves nothing, and files indexed one at a time in the clean order equal a clean ingest
    in every table."""
    folder = tmp_path / "kb"
    folder.mkdir()
    for source in (A, B, C, D, E):
        shutil.copy(source, folder / source.name)
    clean = open_database(tmp_path / "clean.db")
    ingest_docs(clean, [str(folder)], workers=0)
    (tmp_path / "extra").mkdir()
    extra = tmp_path / "extra" / X.name
    shutil.copy(X, extra)
    one = open_database(tmp_path / "one.db")
    ingest_docs(one, [str(extra)], workers=0)
    assert one["entities"].count > 0
    extra.unlink()
    assert ingest_docs(one, [str(tmp_path / "extra")], prune=True, workers=0).pruned == 1
    left = {t: one[t].count for t in ("docs", "chunks", "mentions", "entities", "relations", "relation_evidence", "embeddings", "gazetteer_terms", "chunk_vec", "entity_vec", "fact_vec")}
    assert left == dict.fromkeys(left, 0)
    for path in sorted(folder.iterdir()):
        ingest_docs(one, [str(path)], roots=[str(folder)], workers=0)
    one_at_a_time, whole = snapshot(one), snapshot(clean)
    for table in ORDER_FREE:
        assert one_at_a_time[table] == whole[table], table


def test_one_at_a_time_equals_a_clean_ingest_in_linked_tables(tmp_path):
    folder = tmp_path / "kb"
    folder.mkdir()
    for source in (A, B, C, D, E):
        shutil.copy(source, folder / source.name)
    clean = open_database(tmp_path / "clean.db")
    ingest_docs(clean, [str(folder)], workers=0)
    one = open_database(tmp_path / "one.db")
    for path in sorted(folder.iterdir()):
        ingest_docs(one, [str(path)], roots=[str(folder)], workers=0)
    one_at_a_time, whole = snapshot(one), snapshot(clean)
    assert {t for t in LINKED if one_at_a_time[t] != whole[t]} == set()


def test_any_order_worker_count_and_delete_equal_a_clean_ingest_in_linked_tables(tmp_path):
    """Files indexed one at a time in reverse order by worker processes, one of them
    deleted and pruned at the end, equal a clean ingest of what is left in one process."""
    folder = tmp_path / "kb"
    folder.mkdir()
    for source in (A, B, C, D, E, X):
        shutil.copy(source, folder / source.name)
    one = open_database(tmp_path / "one.db")
    for path in sorted(folder.iterdir(), reverse=True):
        ingest_docs(one, [str(path)], roots=[str(folder)], workers=2)
    (folder / D.name).unlink()
    assert ingest_docs(one, [str(folder)], prune=True, workers=2).pruned == 1
    clean = open_database(tmp_path / "clean.db")
    ingest_docs(clean, [str(folder)], workers=0)
    assert_consistent(one)
    one_at_a_time, whole = snapshot(one), snapshot(clean)
    assert len(whole["entities"]) > 300 and len(whole["relations"]) > 50
    assert {t for t in ORDER_FREE + LINKED if one_at_a_time[t] != whole[t]} == set()


def test_prune_purges_orphaned_entities(tmp_path):
    folder = tmp_path / "kb"
    shutil.copytree(SAMPLE / "services", folder)
    database = str(tmp_path / "g.db")
    runner = CliRunner()
    assert runner.invoke(graphrag, ["ingest", str(folder), "-d", database]).exit_code == 0
    db = open_database(database)
    before = db["entities"].count
    (folder / "tidepool.md").unlink()
    (folder / "basin.md").write_text((folder / "basin.md").read_text().replace("Basin", "Lagoon"))
    result = runner.invoke(graphrag, ["ingest", str(folder), "-d", database, "--prune", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert (data["ingested"], data["pruned"], data["skipped"]) == (1, 1, 6)
    assert db["entities"].count < before
    assert_consistent(db)
    info = json.loads(runner.invoke(graphrag, ["status", "-d", database, "--json"]).output)
    assert info["orphaned_entities"] == 0
    assert info["watcher"] is None and info["queue_depth"] == 0


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_special_files_are_skipped_unopened(tmp_path):
    folder = tmp_path / "kb"
    folder.mkdir()
    outside = tmp_path / "outside.md"
    outside.write_text("# Outside\n\nA file outside the watched folder.\n")
    shutil.copy(A, folder / A.name)
    os.mkfifo(folder / "pipe.md")
    os.symlink(outside, folder / "escape.md")
    os.symlink(folder / A.name, folder / "alias.md")  # stays inside: followed
    os.symlink(tmp_path / "nowhere.md", folder / "broken.md")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(folder / "sock.md"))
    reasons = {
        "pipe.md": "skipped: a FIFO (named pipe), not a regular file; graphrag reads only regular files and never opens these",
        "sock.md": "skipped: a socket, not a regular file; graphrag reads only regular files and never opens these",
        "escape.md": f"skipped: a symbolic link to {outside}, outside {folder}; graphrag only follows links that stay inside the folder (ingest --follow-symlinks follows them)",
        "broken.md": f"skipped: a symbolic link to {tmp_path / 'nowhere.md'}, outside {folder}; graphrag only follows links that stay inside the folder (ingest --follow-symlinks follows them)",
    }
    try:
        # The catch-up scan meets them first, then live events.
        watcher = Watcher(tmp_path / "g.db", [folder], debounce_ms=200).start()
        assert watcher.wait_idle(60)
        skipped = {pathlib.Path(s["path"]).name: s["reason"] for s in watcher.state["skipped"]}
        assert skipped == reasons
        os.mkfifo(folder / "later.md")
        (folder / "note.md").write_text("# Note\n\nWritten after the FIFO.\n")
        settle(watcher)
        watcher.stop(30)
    finally:
        sock.close()
    db = open_database(tmp_path / "g.db")
    paths = sorted(pathlib.Path(p).name for (p,) in db.execute("select path from docs"))
    assert paths == sorted(["alias.md", A.name, "note.md"])
    info = status(db)
    assert {pathlib.Path(s["path"]).name for s in info["watcher"]["skipped"]} == set(reasons) | {"later.md"}
    assert info["last_error"] is None


def test_status_reports_the_queue_while_watching(tmp_path):
    folder = tmp_path / "kb"
    folder.mkdir()
    watcher = Watcher(tmp_path / "g.db", [folder], debounce_ms=1500).start()
    try:
        assert watcher.wait_idle(60)
        for source in (A, B, C):
            shutil.copy(source, folder / source.name)
        time.sleep(0.5)
        db = open_database(tmp_path / "g.db")
        info = status(db, watcher)
        assert info["queue_depth"] == 3 and info["watcher"]["running"] is True
        assert watcher.wait_idle(60)
        # Another process sees the state the watcher keeps in the database.
        result = CliRunner().invoke(graphrag, ["status", "-d", str(tmp_path / "g.db"), "--json"])
        info = json.loads(result.output)
        assert info["queue_depth"] == 0
        assert info["counts"]["docs"] == 3
        # copying a file makes several events: which of the three was last is up to them
        assert info["last_file"] in {str(folder / s.name) for s in (A, B, C)}
        assert info["watcher"]["running"] is True and info["watcher"]["pid"] == os.getpid()
        assert info["watcher"]["files_processed"] == 3
        assert info["ingest_rate"] > 0
        assert info["orphaned_entities"] == 0
    finally:
        watcher.stop()
    assert status(db)["watcher"]["running"] is False


def test_sigterm_stops_between_files_and_a_restart_catches_up(tmp_path):
    folder = tmp_path / "kb"
    folder.mkdir()
    database = tmp_path / "g.db"
    command = [sys.executable, "-m", "llm", "graphrag", "watch", str(folder), "-d", str(database), "--debounce-ms", "200", "--json"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # The schema is made before this line; opening the database earlier would race it.
        assert process.stderr.readline() == f"Watching {folder} into {database}\n"
        deadline = time.monotonic() + 60
        while not (status(open_database(database)).get("watcher") or {}).get("running"):
            assert time.monotonic() < deadline and process.poll() is None
            time.sleep(0.2)
        sources = sorted(SAMPLE.rglob("*.md"))[:12]
        for source in sources:
            shutil.copy(source, folder / source.name)
        time.sleep(1.0)  # the first batch is being written
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, err
    assert "Stopping: the file in progress finishes" in err
    assert json.loads(out)["running"] is False
    db = open_database(database)
    assert db.execute("pragma integrity_check").fetchall() == [("ok",)]
    assert db.execute("pragma foreign_key_check").fetchall() == []
    # A restart catches up with whatever the stop left: every file indexed and extracted.
    watcher = Watcher(database, [folder]).start()
    assert watcher.wait_idle(120)
    watcher.stop()
    assert db.execute("select count(*) from docs where extracted_hash is not null").fetchone()[0] == len(sources)
    assert_consistent(db)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_datasette_keeps_answering_while_the_watcher_writes(tmp_path, serve):
    folder = tmp_path / "kb"
    shutil.copytree(SAMPLE / "services", folder)
    database = tmp_path / "graphrag.db"
    watcher = Watcher(database, [folder], debounce_ms=200).start()
    assert watcher.wait_idle(120)
    pages = [
        "/graphrag/docs.json?_shape=array",
        "/graphrag.json?sql=select+count(*)+as+n+from+entities&_shape=array",
        "/graphrag/-/graphrag/status",
        "/graphrag/-/graphrag/hybrid_query?q=tidepool+readings&k=3",
        "/graphrag/-/graphrag/explore",
        "/graphrag/entities",
    ]
    answers, failures = [], []
    stop = threading.Event()

    def poll(url):
        with httpx.Client(base_url=url, timeout=30) as client:
            while not stop.is_set():
                for page in pages:
                    response = client.get(page)
                    answers.append(page)
                    if response.status_code != 200:
                        failures.append((page, response.status_code, response.text[:300]))
    try:
        with serve(database) as url:
            poller = threading.Thread(target=poll, args=(url,))
            poller.start()
            extra = sorted(SAMPLE.rglob("*.md"))[:10]
            for round_ in range(3):  # a burst of adds, changes and deletes, three times
                for source in extra:
                    shutil.copy(source, folder / f"{round_}-{source.name}")
                (folder / "basin.md").write_text((folder / "basin.md").read_text() + f"\n\nRound {round_}.\n")
                if round_:
                    for source in extra[:5]:
                        os.unlink(folder / f"{round_ - 1}-{source.name}")
                settle(watcher)
            stop.set()
            poller.join(60)
    finally:
        stop.set()
        watcher.stop()
    assert failures == []
    assert len(answers) >= len(pages) * 3
    assert watcher.state["last_error"] is None
    assert_consistent(open_database(database))


def test_a_rewritten_document_leaves_its_entities_to_its_extraction(tmp_path):
    """Writing a changed file's chunks takes back what its extraction stored, and leaves
    the refinement of the entities that lost mentions (``refine.RELEASED_SETTING``) to the
    extraction that follows: the graph is then that of a clean ingest."""
    from llm_graphrag.extract import extract_and_link
    from llm_graphrag.refine import RELEASED_SETTING
    from llm_graphrag.schema import get_setting

    folder = tmp_path / "corpus"
    shutil.copytree(SAMPLE, folder)
    db = open_database(tmp_path / "graphrag.db")
    ingest_docs(db, [str(folder)], workers=0)
    changed = folder / "services/tidepool.md"
    doc_id = db.execute("select id from docs where path = ?", [str(changed)]).fetchone()[0]
    before = {e for (e,) in db.execute("select distinct entity_id from mentions where doc_id = ?", [doc_id])}
    changed.write_text(changed.read_text() + "\n\nThe archive keeps what the station agent sends.\n")
    assert ingest_docs(db, [str(folder)], workers=0, extract=False).ingested == 1
    assert set(get_setting(db, RELEASED_SETTING)) == before
    assert db.execute("select count(*) from mentions where doc_id = ?", [doc_id]).fetchone() == (0,)
    extract_and_link(db, workers=0)
    assert get_setting(db, RELEASED_SETTING) is None
    clean = open_database(tmp_path / "clean.db")
    ingest_docs(clean, [str(folder)], workers=0)
    assert snapshot(db) == snapshot(clean)


def test_a_burst_is_extracted_by_worker_processes_as_a_clean_ingest_is(tmp_path, monkeypatch, mapped):
    """A batch of ``parallel.MIN_ITEMS`` files or more (here the catch-up of 16 files that
    came while the watcher was stopped: one batch, however events would be grouped) is
    extracted by processes the writer thread forks (``parallel.forking_thread``), one per
    CPU as ``ingest`` does, and stores what a clean ingest of the folder stores."""
    pages = sorted((pathlib.Path(__file__).parent / "data" / "python-docs").glob("*.rst.txt"))[: parallel.MIN_ITEMS]
    folder = tmp_path / "kb"
    folder.mkdir()
    for page in pages:
        shutil.copy(page, folder / page.name)
    watcher = Watcher(tmp_path / "live.db", [folder], debounce_ms=200).start()
    try:
        assert watcher.wait_idle(300)
    finally:
        watcher.stop()
    assert watcher.state["files_processed"] == len(pages)
    assert ("_extract_document", os.cpu_count()) in mapped
    monkeypatch.undo()
    clean = open_database(tmp_path / "clean.db")
    ingest_docs(clean, [str(folder)])
    live = open_database(tmp_path / "live.db")
    assert_consistent(live)
    whole, other = snapshot(clean), snapshot(live)
    assert {t for t in ORDER_FREE + LINKED if whole[t] != other[t]} == set()


def test_a_burst_of_changes_is_one_batch(tmp_path):
    """Files written one after another for longer than the debounce are indexed in one
    batch (one extraction run, one refinement), not the first alone and then the rest."""
    folder = tmp_path / "kb"
    folder.mkdir()
    batches = []
    watcher = Watcher(tmp_path / "g.db", [folder], debounce_ms=200, workers=0, log=batches.append).start()
    try:
        assert watcher.wait_idle(60)
        for i in range(12):
            (folder / f"note-{i:02}.md").write_text(f"# Note {i}\n\nThe kestrel {i} nests on a cliff.\n")
            time.sleep(0.03)  # 12 files over about 0.36 s, the debounce 0.2 s
        settle(watcher)
    finally:
        watcher.stop()
    assert len(batches) == 1, batches
    assert batches[0].startswith("12 indexed, 0 gone, 0 moved in ")
    assert watcher.state["files_processed"] == 12
