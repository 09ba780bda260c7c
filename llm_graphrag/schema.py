"""The graphrag schema, created and changed through versioned migrations.

Tables follow seed 004 (docs, chunks, mentions, entities, relations) with seed 003's
lexical graph. Vectors live in llm's ``collections``/``embeddings`` tables and are
mirrored by triggers into sqlite-vec ``vec0`` indexes.
"""

import contextlib
import json

from llm.embeddings_migrations import embeddings_migrations
from sqlite_utils import Migrations

migrations = Migrations("graphrag")

EVIDENCE_TRIGGER = "relation_evidence_added"  # relations.evidence_count + 1 per evidence row


DEFAULT_MODEL = "graphrag"
DEFAULT_DIMENSIONS = 256

# llm collection name -> (vec0 table, primary key column, source table)
VECTOR_INDEXES = {
    "chunks": ("chunk_vec", "chunk_id", "chunks"),
    "entities": ("entity_vec", "entity_id", "entities"),
    "facts": ("fact_vec", "relation_id", "relations"),
}
# Vectors per vec0 chunk: sqlite-vec's default, written out. 128 cut the instructions of
# writing 60,000 entity vectors by a tenth (an insert reaches its offset through 32 pages,
# not 256), but made exact k=50 scans of 1M vectors about 15% slower
# (bench/bench_retrieval.py knn): not worth 1% of an extraction run.
VECTOR_CHUNK_SIZE = 1024
# ``embeddings_vec_insert_<collection>`` copies a collection's new vectors into its index.
VECTOR_INSERT_TRIGGER = "embeddings_vec_insert_"


def get_setting(db, key, default=None):
    if not db["graphrag_settings"].exists():
        return default
    row = db.execute(
        "select value from graphrag_settings where key = ?", [key]
    ).fetchone()
    return json.loads(row[0]) if row else default


def set_setting(db, key, value):
    db["graphrag_settings"].upsert({"key": key, "value": json.dumps(value)}, pk="key")


DEFERRED_TRIGGERS = "deferred_triggers"  # setting: {table: [[trigger, SQL], ...]} while suspended
_LEGACY_DEFERRED = ("fts_deferred",)  # the same setting as earlier code (1d94e10) named it


@contextlib.contextmanager
def triggers_deferred(db, triggers):
    """Write without some triggers, doing their work in bulk, then put them back.

    ``triggers`` maps a table to the names of its triggers to suspend. Indexing full text
    row by row through triggers cost a bulk extraction more than writing the rows; one
    ``rebuild`` at the end costs a tenth of it. Full-text search of those tables misses
    the rows written meanwhile. The triggers' SQL is kept in the ``deferred_triggers``
    setting, so a run that dies midway is mended by ``restore_triggers``.
    """
    suspend_triggers(db, triggers)
    try:
        yield
    finally:
        restore_triggers(db)


def suspend_triggers(db, triggers):
    """Drop the named triggers (``{table: names}``), keeping their SQL in a setting."""
    with db.atomic():
        kept = get_setting(db, DEFERRED_TRIGGERS, {})
        for table, names in triggers.items():
            marks = ", ".join("?" for _ in names)
            rows = db.execute(
                f"select name, sql from sqlite_master where type = 'trigger' and tbl_name = ? "
                f"and name in ({marks}) order by name",
                [table, *names],
            ).fetchall()
            if rows:
                kept[table] = kept.get(table, []) + [list(row) for row in rows]
            for name, _ in rows:
                db.execute(f'DROP TRIGGER "{name}"')
        set_setting(db, DEFERRED_TRIGGERS, kept)


DEFERRED_INDEXES = "deferred_indexes"  # setting: {index: its SQL} while dropped


@contextlib.contextmanager
def indexes_deferred(db, names):
    """Write without the named indexes, then create them again, each in one sorted pass.

    A bulk extraction's first pass only inserts, and looks nothing up by these: keeping
    them up to date row by row, in random key order, wrote most of its index pages. Their
    SQL is kept in the ``deferred_indexes`` setting, so a run that dies midway is mended
    by ``restore_indexes`` (``extract_and_link`` calls it first)."""
    suspend_indexes(db, names)
    try:
        yield
    finally:
        restore_indexes(db)


def suspend_indexes(db, names):
    """Drop the named indexes, keeping their SQL in a setting."""
    with db.atomic():
        kept = get_setting(db, DEFERRED_INDEXES, {})
        marks = ", ".join("?" for _ in names)
        for name, sql in db.execute(
            f"select name, sql from sqlite_master where type = 'index' and name in ({marks}) order by name", list(names)
        ).fetchall():
            kept[name] = sql
            db.execute(f'DROP INDEX "{name}"')
        set_setting(db, DEFERRED_INDEXES, kept)


def restore_indexes(db):
    """Create again the indexes ``indexes_deferred`` dropped; does nothing when none are."""
    kept = get_setting(db, DEFERRED_INDEXES)
    if not kept:
        return
    with db.atomic():
        for name, sql in sorted(kept.items()):
            if db.execute("select 1 from sqlite_master where type = 'index' and name = ?", [name]).fetchone() is None:
                db.execute(sql)
        db.execute("delete from graphrag_settings where key = ?", [DEFERRED_INDEXES])


def has_trigger(db, name):
    """Whether ``db`` has a trigger called ``name``."""
    return db.execute("select 1 from sqlite_master where type = 'trigger' and name = ?", [name]).fetchone() is not None


def restore_triggers(db):
    """Put back the triggers ``suspend_triggers`` left out, rebuilding the full-text
    index of each of their tables that has one; does nothing when none are suspended."""
    keys = (DEFERRED_TRIGGERS, *_LEGACY_DEFERRED)
    suspended = [get_setting(db, key) or {} for key in keys]
    if not any(suspended):
        return
    with db.atomic():
        for kept in suspended:
            for table, triggers in kept.items():
                if db[table].detect_fts():
                    db[table].rebuild_fts()
                if table == "relation_evidence":
                    recount_evidence(db)  # rows someone else added meanwhile
                if table == "embeddings":
                    for name, _ in triggers:
                        mirror_missing_vectors(db, name.removeprefix(VECTOR_INSERT_TRIGGER))
                for name, sql in triggers:
                    db.execute(f'DROP TRIGGER IF EXISTS "{name}"')
                    db.execute(sql)
        db.execute(
            f"delete from graphrag_settings where key in ({', '.join('?' for _ in keys)})", keys
        )


def recount_evidence(db):
    """Set ``relations.evidence_count`` from the evidence rows wherever it differs."""
    db.execute(
        "update relations set evidence_count = e.n from (select relation_id, count(*) as n "
        "from relation_evidence group by relation_id) as e "
        "where e.relation_id = relations.id and relations.evidence_count != e.n"
    )


def mirror_missing_vectors(db, collection):
    """Copy into the collection's vec0 index the vectors of ``embeddings`` it lacks:
    those another writer added while its insert trigger was suspended."""
    table, pk, _ = VECTOR_INDEXES[collection]
    db.execute(
        f"insert into {table} ({pk}, embedding) select cast(e.id as integer), e.embedding "
        "from embeddings e where e.collection_id = (select id from collections where name = ?) "
        f"and e.id glob '[0-9]*' and e.embedding is not null and cast(e.id as integer) not in "
        f"(select {pk} from {table})",
        [collection],
    )


def schema_version(db):
    """The number of graphrag migrations applied to ``db``."""
    return len(migrations.applied(db))


def ensure_schema(db, model_id=None, dimensions=None):
    """Create or upgrade the graphrag schema in ``db``; cheap when already current.

    ``model_id`` and ``dimensions`` pick the embedding model for a new database;
    an existing database keeps the one it was created with.
    """
    if not db["graphrag_settings"].exists():
        db["graphrag_settings"].create({"key": str, "value": str}, pk="key")
    if get_setting(db, "embedding_model") is None:
        set_setting(db, "embedding_model", model_id or DEFAULT_MODEL)
        set_setting(db, "dimensions", dimensions or DEFAULT_DIMENSIONS)
    if embeddings_migrations.pending(db):
        embeddings_migrations.apply(db)
    if migrations.pending(db):
        migrations.apply(db)
    # llm's own migrations rebuild the embeddings table, which drops triggers:
    # recreate ours whenever they are missing.
    # Not while a bulk extraction has them suspended: it mirrors vectors itself meanwhile.
    suspended = get_setting(db, DEFERRED_TRIGGERS, {})
    if not has_trigger(db, "embeddings_vec_insert_facts") and "embeddings" not in suspended:
        with db.atomic():
            create_vector_triggers(db)
    return db


@migrations()
def m001_initial(db):
    db.executescript(
        """
        CREATE TABLE docs (
          id INTEGER PRIMARY KEY,
          path TEXT NOT NULL UNIQUE,
          source TEXT,
          mtime_ms INTEGER,
          meta JSON,
          title TEXT,
          hash TEXT,
          size INTEGER,
          ingested_at TEXT
        );
        CREATE TABLE chunks (
          id INTEGER PRIMARY KEY,
          doc_id INTEGER NOT NULL REFERENCES docs(id) ON DELETE CASCADE,
          seq INTEGER NOT NULL,
          content TEXT NOT NULL,
          prelude TEXT,
          section TEXT,
          hash TEXT,
          token_count INTEGER,
          meta JSON,
          UNIQUE (doc_id, seq)
        );
        CREATE INDEX idx_chunks_doc ON chunks(doc_id);
        CREATE TABLE entities (
          id INTEGER PRIMARY KEY,
          type TEXT NOT NULL,
          name TEXT NOT NULL,
          norm TEXT NOT NULL,
          aliases JSON NOT NULL DEFAULT '[]',
          description TEXT,
          popularity INTEGER NOT NULL DEFAULT 0,
          meta JSON,
          status TEXT NOT NULL DEFAULT 'active',
          created_at TEXT
        );
        CREATE INDEX idx_entities_norm ON entities(norm);
        CREATE INDEX idx_entities_type_name ON entities(type, name);
        CREATE TABLE mentions (
          id INTEGER PRIMARY KEY,
          entity_id INTEGER REFERENCES entities(id) ON DELETE SET NULL,
          doc_id INTEGER NOT NULL REFERENCES docs(id) ON DELETE CASCADE,
          chunk_id INTEGER NOT NULL REFERENCES chunks(id) ON DELETE CASCADE,
          span_start INTEGER,
          span_end INTEGER,
          surface TEXT NOT NULL,
          type TEXT,
          score REAL,
          link_score REAL,
          features JSON,
          snippet TEXT,
          meta JSON
        );
        CREATE INDEX idx_mentions_doc ON mentions(doc_id);
        CREATE INDEX idx_mentions_chunk ON mentions(chunk_id);
        CREATE INDEX idx_mentions_entity ON mentions(entity_id);
        CREATE TABLE relations (
          id INTEGER PRIMARY KEY,
          src_id INTEGER NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
          dst_id INTEGER NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
          rel TEXT NOT NULL,
          weight REAL NOT NULL DEFAULT 1.0,
          confidence REAL NOT NULL DEFAULT 1.0,
          fact TEXT,
          chunk_id INTEGER REFERENCES chunks(id) ON DELETE SET NULL,
          evidence_count INTEGER NOT NULL DEFAULT 0,
          meta JSON,
          UNIQUE (src_id, dst_id, rel)
        );
        CREATE INDEX idx_rel_src_rel ON relations(src_id, rel);
        CREATE INDEX idx_rel_dst_rel ON relations(dst_id, rel);
        -- One row per sentence that supports a relation; deleting a document's
        -- chunks removes its evidence, and a relation with none left goes too.
        CREATE TABLE relation_evidence (
          id INTEGER PRIMARY KEY,
          relation_id INTEGER NOT NULL REFERENCES relations(id) ON DELETE CASCADE,
          chunk_id INTEGER NOT NULL REFERENCES chunks(id) ON DELETE CASCADE,
          doc_id INTEGER NOT NULL REFERENCES docs(id) ON DELETE CASCADE,
          sentence TEXT,
          confidence REAL,
          extractor TEXT
        );
        CREATE INDEX idx_relation_evidence_relation ON relation_evidence(relation_id);
        CREATE INDEX idx_relation_evidence_chunk ON relation_evidence(chunk_id);
        CREATE TRIGGER relation_evidence_added AFTER INSERT ON relation_evidence BEGIN
          UPDATE relations SET evidence_count = evidence_count + 1 WHERE id = NEW.relation_id;
        END;
        CREATE TRIGGER relation_evidence_removed AFTER DELETE ON relation_evidence BEGIN
          UPDATE relations SET evidence_count = evidence_count - 1 WHERE id = OLD.relation_id;
          DELETE FROM relations WHERE id = OLD.relation_id AND evidence_count <= 0;
        END;
        CREATE TABLE ingest_runs (
          id INTEGER PRIMARY KEY,
          started_at TEXT,
          finished_at TEXT,
          paths JSON,
          ingested INTEGER,
          skipped INTEGER,
          pruned INTEGER,
          duplicates_skipped INTEGER,
          chunks INTEGER,
          errors JSON
        );
        -- Seed 004's BFS edge view, also used by hybrid retrieval
        CREATE VIEW graph_edges AS
          SELECT src_id AS src, dst_id AS dst, rel, weight, confidence, id AS relation_id
          FROM relations;
        -- Seed 003's lexical graph as rows: PART_OF, NEXT_CHUNK, MENTIONED_IN, RELATES
        CREATE VIEW lexical_graph AS
          SELECT 'chunk' AS src_kind, id AS src_id, 'doc' AS dst_kind, doc_id AS dst_id,
                 'PART_OF' AS type, NULL AS rel_type, NULL AS fact FROM chunks
          UNION ALL
          SELECT 'chunk', a.id, 'chunk', b.id, 'NEXT_CHUNK', NULL, NULL
            FROM chunks a JOIN chunks b ON b.doc_id = a.doc_id AND b.seq = a.seq + 1
          UNION ALL
          SELECT DISTINCT 'entity', entity_id, 'chunk', chunk_id, 'MENTIONED_IN', NULL, NULL
            FROM mentions WHERE entity_id IS NOT NULL
          UNION ALL
          SELECT 'entity', src_id, 'entity', dst_id, 'RELATES', rel, fact FROM relations;
        """
    )
    db["chunks"].enable_fts(
        ["content", "section"], tokenize="porter", create_triggers=True
    )
    db["entities"].enable_fts(
        ["name", "aliases"], tokenize="porter", create_triggers=True
    )
    db["relations"].enable_fts(["fact"], tokenize="porter", create_triggers=True)
    dimensions = get_setting(db, "dimensions", DEFAULT_DIMENSIONS)
    for table, pk, source in VECTOR_INDEXES.values():
        db.execute(
            f"CREATE VIRTUAL TABLE {table} USING vec0("
            f"{pk} INTEGER PRIMARY KEY, embedding float[{dimensions}] distance_metric=cosine, "
            f"chunk_size={VECTOR_CHUNK_SIZE})"
        )
    # Seed 004 names these map tables; rowid is the chunk or entity id itself.
    db.execute("CREATE VIEW chunk_vec_map AS SELECT chunk_id, chunk_id AS rowid FROM chunk_vec")
    db.execute(
        "CREATE VIEW entity_vec_map AS SELECT entity_id, entity_id AS rowid FROM entity_vec"
    )
    for name in VECTOR_INDEXES:
        db.execute("INSERT OR IGNORE INTO collections (name, model) VALUES (?, ?)", [name, get_setting(db, "embedding_model")])


def create_vector_triggers(db):
    """Mirror llm ``embeddings`` rows of the graphrag collections into vec0 indexes.

    Works for any writer, including ``llm embed-multi`` from the terminal, as long as
    sqlite-vec is loaded in its connection (the sqlite-utils plugin does that).
    Also removes embeddings when their chunk, entity or relation is deleted. One trigger
    per collection and event, guarded by ``WHEN``, so a row only touches its own index.
    """
    for name in ("embeddings_vec_insert", "embeddings_vec_update", "embeddings_vec_delete"):
        db.execute(f"DROP TRIGGER IF EXISTS {name}")  # the single triggers of earlier versions
    for name, (table, pk, source) in VECTOR_INDEXES.items():
        collection = f"(SELECT id FROM collections WHERE name = '{name}')"
        insert = (
            f"DELETE FROM {table} WHERE {pk} = CAST(NEW.id AS INTEGER);\n"
            f"  INSERT INTO {table} ({pk}, embedding) VALUES (CAST(NEW.id AS INTEGER), NEW.embedding);"
        )
        wanted = f"NEW.collection_id = {collection} AND NEW.id GLOB '[0-9]*' AND NEW.embedding IS NOT NULL"
        for event in ("insert", "update", "delete"):
            db.execute(f"DROP TRIGGER IF EXISTS embeddings_vec_{event}_{name}")
        db.execute(
            f"CREATE TRIGGER {VECTOR_INSERT_TRIGGER}{name} AFTER INSERT ON embeddings "
            f"WHEN {wanted} BEGIN\n  {insert}\nEND"
        )
        db.execute(
            f"CREATE TRIGGER embeddings_vec_delete_{name} AFTER DELETE ON embeddings "
            f"WHEN OLD.collection_id = {collection} BEGIN\n"
            f"  DELETE FROM {table} WHERE {pk} = CAST(OLD.id AS INTEGER);\nEND"
        )
        db.execute(
            f"CREATE TRIGGER embeddings_vec_update_{name} AFTER UPDATE OF embedding, id, collection_id "
            f"ON embeddings WHEN OLD.collection_id = {collection} OR NEW.collection_id = {collection} "
            f"BEGIN\n  DELETE FROM {table} WHERE OLD.collection_id = {collection} "
            f"AND {pk} = CAST(OLD.id AS INTEGER);\n"
            f"  DELETE FROM {table} WHERE {wanted} AND {pk} = CAST(NEW.id AS INTEGER);\n"
            f"  INSERT INTO {table} ({pk}, embedding) SELECT CAST(NEW.id AS INTEGER), NEW.embedding "
            f"WHERE {wanted};\nEND"
        )
        db.execute(f"DROP TRIGGER IF EXISTS {source}_embedding_cleanup")
        db.execute(
            f"""CREATE TRIGGER {source}_embedding_cleanup AFTER DELETE ON {source} BEGIN
              DELETE FROM embeddings WHERE collection_id = {collection} AND id = CAST(OLD.id AS TEXT);
            END"""
        )


@migrations()
def m002_extraction(db):
    """Extraction bookkeeping: which content a document was extracted from, and the
    salient terms (titles, headings, bold, code) each document adds to the gazetteer."""
    db.executescript(
        """
        ALTER TABLE docs ADD COLUMN extracted_hash TEXT;
        CREATE TABLE gazetteer_terms (
          doc_id INTEGER NOT NULL REFERENCES docs(id) ON DELETE CASCADE,
          norm TEXT NOT NULL,
          term TEXT NOT NULL,
          type TEXT NOT NULL,
          PRIMARY KEY (doc_id, norm)
        );
        CREATE INDEX idx_gazetteer_terms_norm ON gazetteer_terms(norm);
        -- Seed 004 §6.2: auto-gazetteer, terms by the number of documents using them
        CREATE VIEW gazetteer AS
          SELECT norm, min(term) AS term, min(type) AS type, count(*) AS freq
          FROM gazetteer_terms GROUP BY norm;
        """
    )


@migrations()
def m003_fts_update_of_indexed_columns(db):
    """Full-text triggers that fire only when an indexed column changes.

    Extraction updates ``entities.popularity`` and ``relations.evidence_count`` for every
    document; re-indexing unchanged text each time made those updates the slowest writes.
    """
    for table, columns in (("entities", ("name", "aliases")), ("relations", ("fact",))):
        names = ", ".join(f'"{c}"' for c in columns)
        old = ", ".join(f'old."{c}"' for c in columns)
        new = ", ".join(f'new."{c}"' for c in columns)
        db.execute(f'DROP TRIGGER IF EXISTS "{table}_au"')
        db.execute(
            f'CREATE TRIGGER "{table}_au" AFTER UPDATE OF {names} ON "{table}" BEGIN\n'
            f'  INSERT INTO "{table}_fts" ("{table}_fts", rowid, {names}) VALUES(\'delete\', old.rowid, {old});\n'
            f'  INSERT INTO "{table}_fts" (rowid, {names}) VALUES (new.rowid, {new});\n'
            "END"
        )


@migrations()
def m004_indexes_for_deletes(db):
    """Indexes that deleting a document needs: ``relations.chunk_id`` (set to null with its
    chunk) and ``relation_evidence.doc_id`` (deleted with its document) were found by full
    scans, a tenth of a second per chunk on python3.11-doc (195,234 relations)."""
    db.execute("CREATE INDEX IF NOT EXISTS idx_relations_chunk ON relations(chunk_id)")
    db.execute("CREATE INDEX IF NOT EXISTS idx_relation_evidence_doc ON relation_evidence(doc_id)")


@migrations()
def m005_dedup_sketches(db):
    """The near-duplicate state each document added (``dedup.NearDuplicateFilter``): a
    run that skips an unchanged document remembers its paragraphs from here, so a run
    resumed after a crash drops the paragraphs one uninterrupted run drops."""
    db.execute(
        "CREATE TABLE IF NOT EXISTS dedup_sketches (\n"
        "  doc_id INTEGER PRIMARY KEY REFERENCES docs(id) ON DELETE CASCADE,\n"
        "  sketches BLOB NOT NULL\n"
        ")"
    )


@migrations()
def m006_held_cooccurrence(db):
    """What refinement (``refine.py``) takes out but a later document may bring back, so
    the graph does not depend on the order documents came in: evidence of co-occurrence
    edges judged too weak, held instead of deleted (a later document's evidence for the
    same pair brings it back; it goes with its chunk, document or either entity), and
    the names of compound heads and generic words dropped per document."""
    db.executescript(
        """
        CREATE TABLE IF NOT EXISTS held_evidence (
          src_id INTEGER NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
          dst_id INTEGER NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
          rel TEXT NOT NULL,
          chunk_id INTEGER NOT NULL REFERENCES chunks(id) ON DELETE CASCADE,
          doc_id INTEGER NOT NULL REFERENCES docs(id) ON DELETE CASCADE,
          sentence TEXT,
          confidence REAL,
          extractor TEXT
        );
        CREATE INDEX IF NOT EXISTS idx_held_evidence_pair ON held_evidence(src_id, dst_id, rel);
        CREATE INDEX IF NOT EXISTS idx_held_evidence_dst ON held_evidence(dst_id);
        CREATE INDEX IF NOT EXISTS idx_held_evidence_chunk ON held_evidence(chunk_id);
        CREATE INDEX IF NOT EXISTS idx_held_evidence_doc ON held_evidence(doc_id);
        -- Names whose mentions in a document refinement dropped as compound heads with no
        -- entity of their own: a later entity of that name has the document linked again.
        CREATE TABLE IF NOT EXISTS dropped_heads (
          doc_id INTEGER NOT NULL REFERENCES docs(id) ON DELETE CASCADE,
          norm TEXT NOT NULL,
          PRIMARY KEY (norm, doc_id)
        );
        CREATE INDEX IF NOT EXISTS idx_dropped_heads_doc ON dropped_heads(doc_id);
        -- Generic words (setting generic_words) each document mentioned, left out: their
        -- document frequency, judged again as the corpus changes.
        CREATE TABLE IF NOT EXISTS dropped_words (
          doc_id INTEGER NOT NULL REFERENCES docs(id) ON DELETE CASCADE,
          norm TEXT NOT NULL,
          PRIMARY KEY (norm, doc_id)
        );
        CREATE INDEX IF NOT EXISTS idx_dropped_words_doc ON dropped_words(doc_id);
        """
    )


@migrations()
def m007_dedup_paragraphs(db):
    """Every near-duplicate candidate paragraph of each document, whether it was dropped,
    and its index keys (``dedup_store.py``), so that what a document keeps depends on the
    paths before it, not on the run it came in; ``dedup_sketches`` (what one run's filter
    remembered) goes. Documents stored before have no row in ``dedup_docs`` and are loaded
    again the next time their file is ingested."""
    db.executescript(
        """
        DROP TABLE IF EXISTS dedup_sketches;
        CREATE TABLE IF NOT EXISTS dedup_paragraphs (
          id INTEGER PRIMARY KEY AUTOINCREMENT,
          doc_id INTEGER NOT NULL REFERENCES docs(id) ON DELETE CASCADE,
          seq INTEGER NOT NULL,
          dropped INTEGER NOT NULL,
          -- New at its document's path: the documents after it are not checked yet.
          pending INTEGER NOT NULL DEFAULT 0,
          sketch BLOB NOT NULL
        );
        CREATE INDEX IF NOT EXISTS idx_dedup_paragraphs_doc ON dedup_paragraphs(doc_id, seq);
        CREATE INDEX IF NOT EXISTS idx_dedup_paragraphs_pending ON dedup_paragraphs(id) WHERE pending;
        -- In paragraph order (new rows go at the end), found by key through the index.
        CREATE TABLE IF NOT EXISTS dedup_keys (
          paragraph_id INTEGER NOT NULL REFERENCES dedup_paragraphs(id) ON DELETE CASCADE,
          key INTEGER NOT NULL,
          PRIMARY KEY (paragraph_id, key)
        ) WITHOUT ROWID;
        CREATE INDEX IF NOT EXISTS idx_dedup_keys_key ON dedup_keys(key);
        -- Paragraphs gone from a path: the documents after it are not checked yet.
        CREATE TABLE IF NOT EXISTS dedup_removed (
          id INTEGER PRIMARY KEY,
          path TEXT NOT NULL,
          sketch BLOB NOT NULL
        );
        -- Documents whose paragraphs are stored.
        CREATE TABLE IF NOT EXISTS dedup_docs (
          doc_id INTEGER PRIMARY KEY REFERENCES docs(id) ON DELETE CASCADE
        );
        """
    )
