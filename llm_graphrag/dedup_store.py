"""Near-duplicate paragraphs of stored documents, so that what a document keeps depends on
the folder alone, not on the order or the batches its files came in.

A paragraph (``DEDUP_KINDS``, at least ``min_words`` words) is dropped when it nearly
repeats (``NearDuplicateFilter.threshold``) a paragraph earlier in its document, or any
paragraph, dropped or kept, of a document whose path sorts before its own. Decisions do
not chain, so a document's change can only change those of later documents that share
near-duplicates with it.

Every such paragraph is stored (``dedup_paragraphs``) with its complete sketch and whether
it was dropped, and its index keys in ``dedup_keys`` (indexed): a lookup finds candidates
by key and compares their sketches exactly. When a document's paragraphs change at a
path (written, purged, moved), the change is recorded in the same transaction: new
paragraphs are ``pending`` and gone ones are rows of ``dedup_removed``, until
``stale_documents()`` has found the later documents whose decisions that changes (for
``ingest_docs`` to load again) and ``settle()`` has cleared them. A document listed in
``dedup_docs`` has its paragraphs stored; one that is not (stored before this table
existed) is loaded again the next time its file is ingested.
"""

import json

import numpy as np

DEDUP_KINDS = ("paragraph", "list", "quote")


def to_blob(sketch) -> bytes:
    return np.asarray(sketch, dtype="<u8").tobytes()


def from_blob(blob):
    return np.frombuffer(blob, dtype="<u8").astype(np.uint64)


class StoredParagraphs:
    """Candidates among the stored documents' paragraphs, looked up in the database.

    ``lookup(keys, before, excluded)``: ``{key: [(id, sketch), ...]}`` for paragraphs of
    documents whose path sorts before ``before`` and is not in ``excluded``.
    """

    def __init__(self, conn):
        self.conn = conn

    def lookup(self, keys, before, excluded=()):
        found = {}
        rows = self.conn.execute(
            "select k.key, p.id, p.sketch from dedup_keys k "
            "join dedup_paragraphs p on p.id = k.paragraph_id join docs d on d.id = p.doc_id "
            "where k.key in (select value from json_each(?)) and d.path < ? "
            "and d.path not in (select value from json_each(?))",
            [json.dumps(list(keys)), before, json.dumps(sorted(p for p in excluded if p < before))],
        ).fetchall()
        sketches = {}
        for key, ident, blob in rows:
            sketch = sketches.get(ident)
            if sketch is None:
                sketch = sketches[ident] = from_blob(blob)
            found.setdefault(key, []).append((ident, sketch))
        return found


class LoadedParagraphs(StoredParagraphs):
    """The same lookups over every stored paragraph read at once: for a loading process
    forked from the writing one, which must not use its database connection. Keys are
    kept as a sorted array and sketches as stored, converted when one is a candidate."""

    def __init__(self, conn):
        self.rows = {
            ident: (path, blob)
            for ident, path, blob in conn.execute(
                "select p.id, d.path, p.sketch from dedup_paragraphs p join docs d on d.id = p.doc_id"
            )
        }
        pairs = np.array(conn.execute("select key, paragraph_id from dedup_keys order by key").fetchall(), dtype=np.int64)
        pairs = pairs.reshape(-1, 2)
        self.keys, self.idents = pairs[:, 0], pairs[:, 1]

    def lookup(self, keys, before, excluded=()):
        found = {}
        wanted = np.array(keys, dtype=np.int64)
        starts = np.searchsorted(self.keys, wanted, side="left").tolist()
        stops = np.searchsorted(self.keys, wanted, side="right").tolist()
        for key, start, stop in zip(keys, starts, stops):
            for ident in self.idents[start:stop].tolist():
                path, blob = self.rows[ident]
                if path < before and path not in excluded:
                    found.setdefault(key, []).append((ident, from_blob(blob)))
        return found


def write_paragraphs(conn, doc_id, path, paragraphs, moved_from=None):
    """Store a document's paragraphs (``dedup.Paragraph``) in place of its old ones, in the
    caller's transaction. What changed at ``path`` is recorded for ``stale_documents()``;
    ``moved_from``: the document was at that path until now, so all of it changed at both.
    Rows of paragraphs it still has are kept (an edit rewrites few keys)."""
    old = {}
    for ident, blob, pending in conn.execute(
        "select id, sketch, pending from dedup_paragraphs where doc_id = ? order by id", [doc_id]
    ):
        old.setdefault(blob, []).append((ident, pending))
    new = [to_blob(p.sketch) for p in paragraphs]
    if moved_from is not None:
        conn.executemany("insert into dedup_removed (path, sketch) values (?, ?)", [(moved_from, b) for b in sorted(old)])
    else:
        conn.executemany(
            "insert into dedup_removed (path, sketch) values (?, ?)", [(path, b) for b in sorted(set(old) - set(new))]
        )
    updates, keys = [], []
    for paragraph, blob in zip(paragraphs, new):
        # New at this path, or still pending from before (a run that died).
        kept = old.get(blob)
        if kept:
            ident, pending = kept.pop(0)
            updates.append((paragraph.seq, int(paragraph.dropped), int(bool(pending) or moved_from is not None), ident))
            continue
        ident = conn.execute(
            "insert into dedup_paragraphs (doc_id, seq, dropped, pending, sketch) values (?, ?, ?, ?, ?)",
            [doc_id, paragraph.seq, int(paragraph.dropped), int(moved_from is not None or blob not in old), blob],
        ).lastrowid
        keys.extend((key, ident) for key in set(paragraph.keys))
    gone = [ident for rows in old.values() for ident, _ in rows]
    conn.execute("delete from dedup_paragraphs where id in (select value from json_each(?))", [json.dumps(gone)])
    conn.executemany("update dedup_paragraphs set seq = ?, dropped = ?, pending = ? where id = ?", updates)
    conn.executemany("insert into dedup_keys (key, paragraph_id) values (?, ?)", keys)
    conn.execute("insert or ignore into dedup_docs (doc_id) values (?)", [doc_id])


def record_removal(conn, doc_ids):
    """Before documents are deleted (in the same transaction): their paragraphs go from
    their paths, which may change the decisions of documents after them."""
    conn.execute(
        "insert into dedup_removed (path, sketch) select d.path, p.sketch from dedup_paragraphs p "
        "join docs d on d.id = p.doc_id where p.doc_id in (select value from json_each(?)) order by p.id",
        [json.dumps(list(doc_ids))],
    )


def stored_paragraphs(conn, doc_id):
    """``[(seq, dropped, sketch blob)]`` of a stored document, or None if it has none stored."""
    if conn.execute("select 1 from dedup_docs where doc_id = ?", [doc_id]).fetchone() is None:
        return None
    return conn.execute(
        "select seq, dropped, sketch from dedup_paragraphs where doc_id = ? order by seq", [doc_id]
    ).fetchall()


def _probe(conn, rows, query):
    """Run ``query`` against ``temp.dedup_probe`` filled with ``rows`` of (source, key,
    path, doc_id, seq); it starts from them (``cross join``: SQLite's planner, without
    statistics on the temporary table, would rather scan every key)."""
    opened = not conn.in_transaction  # else sqlite3 would leave its implicit one open
    if opened:
        conn.execute("begin")
    try:
        conn.execute(
            "create temp table if not exists dedup_probe "
            "(source INTEGER, key INTEGER, path TEXT, doc_id INTEGER, seq INTEGER)"
        )
        conn.executemany("insert into temp.dedup_probe values (?, ?, ?, ?, ?)", rows)
        return conn.execute(query).fetchall()
    finally:
        conn.execute("delete from temp.dedup_probe")
        if opened:
            conn.execute("commit")


def stale_documents(conn, duplicates, decided=frozenset()):
    """The paths of documents whose stored decisions are no longer what the paragraphs
    before them decide, after the changes recorded since the last ``settle()``; and a
    token for ``settle()``. ``duplicates``: a ``NearDuplicateFilter`` (its threshold and
    keys). ``decided``: paths loaded together in path order by the caller, each judged
    against the others as they are now, so their changes need no checking among them."""
    removed = conn.execute("select id, path, sketch from dedup_removed order by id").fetchall()
    pending = conn.execute(
        "select p.id, d.path, p.sketch from dedup_paragraphs p join docs d on d.id = p.doc_id "
        "where p.pending order by p.id"
    ).fetchall()
    token = ([r[0] for r in removed], [p[0] for p in pending])
    sources = [(path, from_blob(blob)) for _, path, blob in removed + pending]
    if not sources:
        return [], token
    if decided and all(path in decided for path, _ in sources):
        others = conn.execute(
            "select 1 from docs where path not in (select value from json_each(?)) limit 1", [json.dumps(sorted(decided))]
        ).fetchone()
        if others is None:  # a whole corpus loaded at once
            return [], token
    # Paragraphs of later documents near a paragraph that came or went.
    rows = [
        (i, key, path, None, None) for i, (path, sketch) in enumerate(sources) for key in duplicates.keys_of(sketch)
    ]
    affected = {}
    for source, ident, doc_id, path, seq, dropped, blob in _probe(
        conn, rows,
        "select distinct t.source, p.id, p.doc_id, d.path, p.seq, p.dropped, p.sketch from temp.dedup_probe t "
        "cross join dedup_keys k on k.key = t.key join dedup_paragraphs p on p.id = k.paragraph_id "
        "join docs d on d.id = p.doc_id where d.path > t.path",
    ):
        if sources[source][0] in decided and path in decided:
            continue
        if ident not in affected:
            sketch = from_blob(blob)
            if duplicates.near(sources[source][1], sketch):
                affected[ident] = (doc_id, path, seq, bool(dropped), sketch)
    if not affected:
        return [], token
    # Their decisions now: near a paragraph before them in their document or an earlier one?
    rows = [
        (ident, key, path, doc_id, seq)
        for ident, (doc_id, path, seq, _, sketch) in affected.items()
        for key in duplicates.keys_of(sketch)
    ]
    now = dict.fromkeys(affected, False)
    for ident, other, blob in _probe(
        conn, rows,
        "select distinct t.source, p.id, p.sketch from temp.dedup_probe t "
        "cross join dedup_keys k on k.key = t.key join dedup_paragraphs p on p.id = k.paragraph_id "
        "join docs d on d.id = p.doc_id where d.path < t.path or (p.doc_id = t.doc_id and p.seq < t.seq)",
    ):
        if not now[ident] and duplicates.near(affected[ident][4], from_blob(blob)):
            now[ident] = True
    return sorted({affected[i][1] for i in affected if now[i] != affected[i][3]}), token


def settle(conn, token):
    """Clear the changes ``stale_documents()`` looked at (in the caller's transaction)."""
    removed, pending = token
    conn.execute("delete from dedup_removed where id in (select value from json_each(?))", [json.dumps(removed)])
    conn.execute(
        "update dedup_paragraphs set pending = 0 where id in (select value from json_each(?))", [json.dumps(pending)]
    )
