"""The ``status`` tool: what a graphrag database holds and how it was last updated."""

import json
import os

from .schema import VECTOR_INDEXES, get_setting, schema_version

COUNTED_TABLES = ("docs", "chunks", "mentions", "entities", "relations", "embeddings")
# What runs that died left undone, with its value when there is none (``unfinished_work``).
UNFINISHED_WORK = (("pending_extraction", 0), ("pending_refinement", 0), ("suspended_triggers", []))


def status(db, watcher=None):
    """Counts per table, the embedding model, the schema version, the last ingest, the
    secrets redacted from stored documents per kind, and what runs that died left undone
    (``extract.unfinished_work``: the next ``ingest`` or ``extract`` finishes it).

    With a watcher running on the database (``watcher``, a ``watch.Watcher`` in this
    process, or the state another process's watcher keeps in ``graphrag_settings``):
    its queue depth, last file, last error and ingest rate (seed 004 §15).
    """
    counts = {table: db[table].count for table in COUNTED_TABLES}
    for table, _, _ in VECTOR_INDEXES.values():
        counts[table] = db.execute(f"select count(*) from {table}").fetchone()[0]
    last_run = db.execute(
        "select * from ingest_runs order by id desc limit 1"
    ).fetchone()
    last_ingest = None
    last_error = None
    if last_run:
        columns = [d[0] for d in db.execute("select * from ingest_runs limit 0").description]
        last_ingest = dict(zip(columns, last_run))
        last_ingest["paths"] = json.loads(last_ingest["paths"] or "[]")
        last_ingest["errors"] = json.loads(last_ingest["errors"] or "[]")
        if last_ingest["errors"]:
            last_error = last_ingest["errors"][-1]
    last_file = db.execute(
        "select path from docs order by ingested_at desc, id desc limit 1"
    ).fetchone()
    from .extract import unfinished_work
    from .ingest import orphaned_entities

    watching = watcher.live_state() if watcher is not None else _watcher_state(db)
    queue_depth = 0
    ingest_rate = None
    if watching:
        if watching["running"]:
            queue_depth = watching["queue_depth"]
        last_file = [watching["last_file"]] if watching["last_file"] else last_file
        last_error = watching["last_error"] or last_error
        ingest_rate = watching["ingest_rate"]
    # Secrets replaced in the stored documents, per kind (see redact.py)
    redactions = dict(
        db.execute(
            "select r.key, sum(r.value) from docs, json_each(docs.meta, '$.redactions') r "
            "where json_valid(docs.meta) group by r.key order by r.key"
        ).fetchall()
    )
    return {
        "counts": counts,
        "embedding_model": get_setting(db, "embedding_model"),
        "dense": _dense_state(db),
        "dimensions": get_setting(db, "dimensions"),
        "schema_version": schema_version(db),
        "last_ingest": last_ingest,
        "last_file": last_file[0] if last_file else None,
        "last_error": last_error,
        "queue_depth": queue_depth,
        "orphaned_entities": orphaned_entities(db),
        "ingest_rate": ingest_rate,
        "watcher": watching,
        "redactions": redactions,
        **unfinished_work(db),
    }


def _dense_state(db):
    """The dense chunk vectors' model and how many chunks have one (``dense.py``), or None."""
    from .dense import COLLECTION, dense_model

    model = dense_model(db.conn)
    if not model:
        return None
    vectors = db.execute(
        "select count(*) from embeddings where collection_id = (select id from collections where name = ?)",
        [COLLECTION],
    ).fetchone()[0]
    return {"model": model, "chunks_with_vectors": vectors}


def _watcher_state(db):
    """The state a watcher keeps in the database; not running when its process is gone."""
    from .watch import WATCHER_SETTING

    state = get_setting(db, WATCHER_SETTING)
    if state and state.get("running") and not _alive(state.get("pid")):
        state["running"] = False
    return state


def _alive(pid):
    try:
        os.kill(int(pid), 0)
    except (ProcessLookupError, TypeError, ValueError):
        return False
    except PermissionError:
        return True
    return True
