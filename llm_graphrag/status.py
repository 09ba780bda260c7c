"""The ``status`` tool: what a graphrag database holds and how it was last updated."""

import json

from .schema import VECTOR_INDEXES, get_setting, schema_version

COUNTED_TABLES = ("docs", "chunks", "mentions", "entities", "relations", "embeddings")


def status(db):
    """Counts per table, the embedding model, the schema version, the last ingest and
    the secrets redacted from stored documents per kind."""
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
        "dimensions": get_setting(db, "dimensions"),
        "schema_version": schema_version(db),
        "last_ingest": last_ingest,
        "last_file": last_file[0] if last_file else None,
        "last_error": last_error,
        "queue_depth": 0,
        "redactions": redactions,
    }
