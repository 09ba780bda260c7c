"""Ingestion: files to documents, chunks and vectors, one short transaction per file.

A pipeline of two processes: one loads, de-duplicates and chunks files in order; the
calling one embeds several files' chunks per call and writes them.
"""

import concurrent.futures
import datetime
import errno
import functools
import hashlib
import json
import os
import pathlib
import stat
from dataclasses import dataclass, field

from . import dedup_store
from . import limits as limits_module
from . import parallel
from .chunking import chunk_document
from .dedup import NearDuplicateFilter
from .dedup_store import DEDUP_KINDS
from .dense import forget_dense
from .embeddings import EMBED_BATCH, chunk_vectors, embedder_for, write_embeddings
from .loaders import LINK_HINT, LoadError, expand_paths, load_document, refusal
from .normalize import GENERATED_KINDS
from .redact import SETTING as REDACT_SETTING
from .redact import Redactor, redact_document
from .schema import get_setting, set_setting


@dataclass
class IngestResult:
    ingested: int = 0
    skipped: int = 0
    skipped_files: list = field(default_factory=list)
    pruned: int = 0
    duplicates_skipped: int = 0
    chunks: int = 0
    errors: list = field(default_factory=list)
    doc_ids: list = field(default_factory=list)
    extraction: dict = None
    dense: dict = None  # ``dense.embed_chunks``'s result, when the database has dense vectors

    def to_dict(self):
        result = {
            "ingested": self.ingested,
            "skipped": self.skipped,
            "skipped_files": self.skipped_files,
            "errors": self.errors,
            "pruned": self.pruned,
            "duplicates_skipped": self.duplicates_skipped,
            "chunks": self.chunks,
        }
        if self.extraction is not None:
            result["extraction"] = self.extraction
        if self.dense is not None:
            result["dense"] = self.dense
        return result


def _now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def _returning_roots(function):
    """Run ``function(db, ...)`` inside ``extract.returning_roots(db)``: the documents an
    ingest takes back to extract again keep their names for the run that extracts them."""

    @functools.wraps(function)
    def ingest(db, *args, **kwargs):
        from .extract import returning_roots

        with returning_roots(db):
            return function(db, *args, **kwargs)

    return ingest


@_returning_roots
def ingest_docs(
    db,
    paths,
    *,
    tags=None,
    skip_if_seen=True,
    prune=False,
    extract=True,
    progress=None,
    workers=None,
    include=(),
    root=None,
    roots=None,
    within=None,
    follow_symlinks=False,
    expanded=None,
):
    """Ingest files, folders and globs into ``db``; the engine behind every face.

    Unchanged files (same content hash) are skipped when ``skip_if_seen``; changed files
    replace their rows; ``prune`` deletes documents under the given folders whose files
    are gone. A file that cannot be loaded is reported in ``errors`` and leaves what is
    already stored for it untouched. ``progress(path)`` is called once per file.
    Generated pages (index, search and source-listing pages: ``normalize.page_kind()``)
    are left out and listed in ``skipped_files`` with the reason, unless their kind is in
    ``include`` (``"index"``, ``"search"``, ``"code"``); a stored copy of one is deleted.
    Files are loaded, de-duplicated and chunked in a second process while this one embeds
    and writes (``workers=0`` keeps everything here); ``workers`` is passed on to
    ``extract_and_link``. ``roots`` are the folders relative paths, preludes and
    breadcrumbs start from when ``paths`` lists files picked out of them (``root``: one
    such folder; default: the folder arguments, or a file's own); special files (FIFOs,
    sockets, devices, links that leave their folder unless ``follow_symlinks``) are listed
    in ``skipped_files`` without being opened. ``within`` (the HTTP and MCP faces'
    ``ingest_roots``) confines reading to those folders: a file that resolves outside them
    is an error starting "refused:", checked again when it is read. Files over the
    database's ``limits`` (``limits.py``) are errors naming the limit. ``expanded``: the
    ``(files, errors, skipped)`` a caller's own ``expand_paths`` of ``paths`` found (the
    CLI's, which checks them first), so they are not walked twice. With ``extract``,
    what a run that died left undone for the files is finished too
    (``extract.unfinished_work``): a run killed anywhere, run again, stores what one
    uninterrupted run stores. Files are loaded in path order, each document's
    near-duplicate paragraphs judged against the stored paths before it; the stored
    documents after the ones that changed (here, or by a purge or move since) whose
    decisions that changes are loaded again from their files (``dedup_store.py``).
    Returns an ``IngestResult``.
    """
    started = _now()
    result = IngestResult()
    if expanded is None:
        files, errors = expand_paths(
            paths, within=within, follow_symlinks=follow_symlinks, skipped=result.skipped_files
        )
    else:
        files, errors, skipped = expanded
        result.skipped_files.extend(skipped)
    result.errors.extend(errors)
    embedder = embedder_for(db)
    unknown = set(include) - set(GENERATED_KINDS)
    if unknown:
        raise ValueError(
            f"unknown page kinds to include: {', '.join(sorted(unknown))}; "
            f"choose from {', '.join(GENERATED_KINDS)}"
        )
    roots = [str(p) for p in ([root] if root is not None else roots or paths)]
    redactor = Redactor.from_setting(get_setting(db, REDACT_SETTING))
    limits = limits_module.Limits.from_setting(get_setting(db, limits_module.SETTING))
    skipped_ids = []  # of unchanged files: their extraction may not have finished
    decided = set()  # paths whose near-duplicates the first load judged (dedup_store)

    def load(files, again=frozenset(), written=None):
        """Load, chunk, embed and write ``files`` in path order (each document's
        near-duplicates are judged against the paths before it); ``again``: paths to load
        even when unchanged, whose near-duplicate decisions changed; ``written``: a set
        the paths of the documents written are added to."""
        written = set() if written is None else written
        known = {
            row[0]: (row[1], row[2], row[3], row[4])
            for row in db.execute(
                "select path, id, hash, "
                "case when json_valid(meta) then json_extract(meta, '$.kind') end, "
                "exists(select 1 from dedup_docs s where s.doc_id = docs.id) from docs"
            ).fetchall()
        }
        pending = []  # loaded documents waiting for one embedding call
        embedding = None  # the previous batch, being embedded in a thread: (future, batch)

        def write(batch, vectors):
            start = 0
            for document, chunks in batch:
                doc_id = _write_document(
                    db, document, chunks, vectors[start : start + len(chunks)], tags or []
                )
                start += len(chunks)
                result.ingested += 1
                result.chunks += len(chunks)
                result.doc_ids.append(doc_id)
                written.add(document.path)

        def flush():
            # Embed several files' chunks in one call, outside any transaction, in a thread:
            # while it runs, the batch before is written here, each file in its own short
            # transaction (SQLite and the tokenizer both let go of the interpreter lock).
            # With nothing pending, this only writes the batch being embedded.
            nonlocal embedding
            batch = list(pending)
            pending.clear()
            previous, embedding = embedding, None
            if batch:
                embedding = (encoder.submit(chunk_vectors, embedder, [c for _, cs in batch for c in cs]), batch)
            if previous is not None:
                write(previous[1], previous[0].result())

        # One loading process at most, so near-duplicates are found in path order;
        # ``workers`` other than 0 sizes extraction, not loading.
        loaders = 0 if workers == 0 else parallel.worker_count(None, len(files), most=1)
        # A forked loader must not use this connection: it gets the stored paragraphs read now.
        stored = (dedup_store.LoadedParagraphs if loaders else dedup_store.StoredParagraphs)(db.conn)
        loader_state = (
            NearDuplicateFilter(), skip_if_seen, known, roots, frozenset(include), redactor, limits,
            None if within is None else [str(r) for r in within], follow_symlinks, stored, frozenset(again),
        )
        prepared = parallel.ordered_map(
            _prepare_file, sorted(files, key=str), loaders,
            initializer=_start_loader, initargs=loader_state, ahead=LOAD_AHEAD,
        )
        encoder = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="graphrag-embed")
        try:
            for path, outcome, value in prepared:
                if progress:
                    progress(path)
                if outcome == "error":
                    result.errors.append({"path": str(path), "error": value})
                    continue
                if outcome == "skipped":
                    result.skipped += 1
                    skipped_ids.append(known[str(path)][0])
                    continue
                if outcome == "special":
                    result.skipped_files.append({"path": str(path), "reason": value})
                    continue
                if outcome == "generated":
                    result.skipped_files.append({"path": str(path), "reason": value})
                    if str(path) in known:
                        purge_documents(db, [known[str(path)][0]])
                    continue
                document, chunks, dropped = value
                if document.unchanged and _same_chunks(db, known[document.path][0], chunks):
                    # Loaded again for its near-duplicate state only: nothing else changes.
                    with db.atomic():
                        dedup_store.write_paragraphs(
                            db.conn, known[document.path][0], document.path, document.paragraphs
                        )
                    result.skipped += 1
                    skipped_ids.append(known[document.path][0])
                    written.add(document.path)
                    continue
                result.duplicates_skipped += dropped
                pending.append((document, chunks))
                if sum(len(c) for _, c in pending) >= EMBED_BATCH:
                    flush()
            flush()
            flush()
        finally:
            encoder.shutdown(cancel_futures=True)
            _LOADER.clear()  # loading here held the connection, which would never be closed

    load(files, written=decided)
    if prune:
        result.pruned = prune_missing(db, paths, {str(f) for f in files})
        if result.pruned and extract:
            from .extract import settle

            settle(db, workers=workers)  # what the documents' going changes elsewhere
    # Documents after those that changed (here, or by a purge, a move or a run that died)
    # whose near-duplicate decisions that changes are loaded again, from their files.
    # Those this run cannot read (gone, or outside ``within``) are left, with what changed
    # before them, to a later run.
    tried = set()
    while True:
        with db.atomic():
            stale, token = dedup_store.stale_documents(db.conn, NearDuplicateFilter(), decided)
        readable = [
            p for p in stale
            if p not in tried and os.path.isfile(p) and (within is None or not refusal(p, within))
        ]
        tried.update(readable)
        if readable:
            load([pathlib.Path(p) for p in readable], again=set(readable))
        if len(readable) == len(stale):
            with db.atomic():
                dedup_store.settle(db.conn, token)
        if not readable:
            break
    if extract:
        from .extract import extract_and_link, unfinished_work

        # What a run that died left of the unchanged files' extraction is finished too.
        doc_ids = sorted(result.doc_ids + skipped_ids)
        if result.doc_ids or any(unfinished_work(db, skipped_ids).values()):
            result.extraction = extract_and_link(db, doc_ids=doc_ids, workers=workers)
    result.dense = _keep_dense(db, workers)
    _record_run(db, started, paths, result)
    return result


def _keep_dense(db, workers=None):
    """Dense vectors for the new chunks of a database that has them (``llm graphrag
    dense``), encoded in ``workers`` processes; None when it has none. Without the
    transformer here, the chunks wait (and searches use the static vectors until a run
    that has it embeds them)."""
    from .dense import dense_model, embed_chunks, missing_chunks
    from .minilm import available

    if not dense_model(db.conn):
        return None
    if not available():
        return {"embedded": 0, "missing": len(missing_chunks(db)), "error": "transformer not installed"}
    return embed_chunks(db, workers=workers)


LOAD_AHEAD = 64  # files the loading process may run ahead: more than one embedding batch
# The loading stage's state (one process, so near-duplicates are found in path order).
_LOADER = {}


def _start_loader(
    duplicates, skip_if_seen, known, paths, include, redactor, limits, within, follow, stored, again
):
    _LOADER.update(
        duplicates=duplicates, skip_if_seen=skip_if_seen, known=known, paths=paths,
        include=include, redactor=redactor, limits=limits, within=within, follow=follow,
        stored=stored, again=again,
        # Paths of this run whose stored paragraphs are being replaced or deleted: the
        # filter remembers the new ones instead.
        replaced=set(),
    )
    limits_module.activate(limits)


def _prepare_file(path):
    """Read, load, de-duplicate and chunk one file: ``(path, outcome, value)``."""
    key = str(path)
    within = _LOADER["within"]
    source = path
    if within is not None:  # again, now: a link may have been put in the file's place
        problem = refusal(path, within)
        if problem:
            return path, "error", problem
        source = os.path.realpath(path)  # and read without following a link put there since
    reason = special_file(path, _LOADER["paths"], follow_links=_LOADER["follow"])
    if reason:
        return path, "special", reason
    try:
        data = limits_module.read_file(source, _LOADER["limits"], follow=within is None)
    except LoadError as ex:
        return path, "error", str(ex)
    except OSError as ex:
        return path, "error", f"cannot read file: {ex.strerror}"
    digest = hashlib.sha256(data).hexdigest()
    known = _LOADER["known"]
    unchanged = (
        _LOADER["skip_if_seen"]
        and key in known
        and known[key][1] == digest
        # A generated page stored when it was included is looked at again when it is not.
        and (known[key][2] not in GENERATED_KINDS or known[key][2] in _LOADER["include"])
    )
    # Loaded again although unchanged: its near-duplicate decisions may have changed, or
    # it was stored before they were (``dedup_store.py``).
    if unchanged and known[key][3] and key not in _LOADER["again"]:
        return path, "skipped", None
    try:
        document = load_document(path, root=_root_for(path, _LOADER["paths"]), data=data)
    except LoadError as ex:
        return path, "error", str(ex)
    replaced = _LOADER["replaced"]
    if document.generated and document.kind not in _LOADER["include"]:
        replaced.add(document.path)  # a stored copy is deleted
        return path, "generated", document.generated
    document.redactions = redact_document(document, _LOADER["redactor"])
    stored = _LOADER["stored"]
    document.blocks, document.paragraphs = _LOADER["duplicates"].filter_document(
        document.blocks, DEDUP_KINDS, lambda keys: stored.lookup(keys, document.path, replaced)
    )
    replaced.add(document.path)
    document.unchanged = unchanged
    dropped = sum(p.dropped for p in document.paragraphs)
    chunks = chunk_document(document)
    try:
        limits_module.check_chunks(len(chunks), _LOADER["limits"])
    except LoadError as ex:
        return path, "error", str(ex)
    document.blocks = []  # the chunks hold the text now: half as much to send back
    return path, "loaded", (document, chunks, dropped)


def _root_for(path, paths):
    """The folder argument ``path`` was found under, for relative paths in preludes."""
    for given in paths:
        given = pathlib.Path(given)
        if given.is_dir():
            try:
                path.resolve().relative_to(given.resolve())
                return given.resolve()
            except ValueError:
                continue
    return path.resolve().parent


def _meta(document, tags):
    meta = {
        "format": document.format,
        "kind": document.kind,
        "lang": document.lang,
        "title": document.title,
        "breadcrumbs": document.breadcrumbs,
        "tags": sorted(set(document.tags) | set(tags)),
        "hash": document.hash,
    }
    if getattr(document, "redactions", None):
        meta["redactions"] = document.redactions
    return meta


def _write_document(db, document, chunks, vectors, tags):
    meta = _meta(document, tags)
    values = [
        document.path, "file", document.mtime_ms, json.dumps(meta), document.title,
        document.hash, document.size, _now(),
    ]
    with db.atomic():
        conn = db.conn
        row = conn.execute("select id from docs where path = ?", [document.path]).fetchone()
        if row:
            doc_id = row[0]
            # Its new chunks are searchable sooner: their extraction refines what this takes.
            from .extract import release_extraction

            release_extraction(db, [doc_id], refine=False)
            conn.execute("delete from chunks where doc_id = ?", [doc_id])
            conn.execute(
                "update docs set path = ?, source = ?, mtime_ms = ?, meta = ?, title = ?, "
                "hash = ?, size = ?, ingested_at = ?, extracted_hash = null where id = ?",
                values + [doc_id],
            )
        else:
            doc_id = conn.execute(
                "insert into docs (path, source, mtime_ms, meta, title, hash, size, ingested_at) "
                "values (?, ?, ?, ?, ?, ?, ?, ?)",
                values,
            ).lastrowid
        first = (conn.execute("select coalesce(max(id), 0) from chunks").fetchone()[0]) + 1
        chunk_ids = list(range(first, first + len(chunks)))
        conn.executemany(
            "insert into chunks (id, doc_id, seq, content, prelude, section, hash, token_count, "
            "meta) values (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    chunk_id,
                    doc_id,
                    chunk.seq,
                    chunk.text,
                    chunk.prelude,
                    chunk.section,
                    hashlib.sha256(chunk.text.encode("utf8")).hexdigest(),
                    chunk.token_count,
                    json.dumps({"headings": list(chunk.headings)}),
                )
                for chunk_id, chunk in zip(chunk_ids, chunks)
            ],
        )
        write_embeddings(
            db, "chunks", chunk_ids, vectors, [chunk.embed_text for chunk in chunks]
        )
        dedup_store.write_paragraphs(conn, doc_id, document.path, document.paragraphs)
    return doc_id


def _same_chunks(db, doc_id, chunks):
    """Whether a stored document's chunks are ``chunks``, text, headings and counts."""
    stored = db.execute(
        "select seq, content, prelude, section, token_count, meta from chunks where doc_id = ? order by seq",
        [doc_id],
    ).fetchall()
    return stored == [
        (c.seq, c.text, c.prelude, c.section, c.token_count, json.dumps({"headings": list(c.headings)}))
        for c in chunks
    ]


def prune_missing(db, paths, found):
    """Delete documents under the folder arguments in ``paths`` whose files are gone."""
    folders = [str(pathlib.Path(p).resolve()) for p in paths if pathlib.Path(p).is_dir()]
    if not folders:
        return 0
    gone = [
        doc_id
        for doc_id, path in db.execute("select id, path from docs").fetchall()
        if path not in found
        and any(path.startswith(folder.rstrip("/") + "/") for folder in folders)
        and not pathlib.Path(path).exists()
    ]
    return purge_documents(db, gone)


def purge_documents(db, doc_ids):
    """Delete documents with everything that came from them, in one transaction: chunks,
    vectors, mentions, evidence, relations left without evidence, and entities nothing
    mentions any more (with their relations and vectors). Returns how many were deleted."""
    doc_ids = list(doc_ids)
    if not doc_ids:
        return 0
    from .extract import release_extraction

    with db.atomic():
        release_extraction(db, doc_ids)
        dedup_store.record_removal(db.conn, doc_ids)
        db.conn.execute(
            "delete from docs where id in (select value from json_each(?))", [json.dumps(doc_ids)]
        )
    return len(doc_ids)


def purge_orphans(db):
    """Delete entities no mention links to, with their relations and vectors (call inside
    a transaction); returns how many. Earlier versions left them behind after a prune."""
    return db.conn.execute(
        "delete from entities where not exists (select 1 from mentions m where m.entity_id = entities.id)"
    ).rowcount


def orphaned_entities(db):
    """How many entities no mention links to."""
    return db.execute(
        "select count(*) from entities where not exists "
        "(select 1 from mentions m where m.entity_id = entities.id)"
    ).fetchone()[0]


def move_document(db, old_path, new_path, *, roots=None):
    """Give a stored document the path its file was renamed to, without extracting again.

    When the file at ``new_path`` holds what was stored for ``old_path`` (same hash, same
    title, the same chunk texts with near-duplicates judged at the new path), the
    document keeps its id, chunks, mentions and
    relations: only its path, metadata, chunk preludes and chunk vectors change. Returns
    False, changing nothing, when there is no such document or the content differs: the
    caller then indexes ``new_path`` and purges ``old_path``.
    """
    old_path, new_path = os.path.abspath(old_path), os.path.abspath(new_path)
    row = db.execute("select id, hash, title from docs where path = ?", [old_path]).fetchone()
    if row is None or special_file(new_path, roots or [os.path.dirname(new_path)]):
        return False
    doc_id, digest, title = row
    try:
        data = pathlib.Path(new_path).read_bytes()
    except OSError:
        return False
    if hashlib.sha256(data).hexdigest() != digest:
        return False
    if dedup_store.stored_paragraphs(db.conn, doc_id) is None:
        return False  # stored before near-duplicate state was: loaded again instead
    path = pathlib.Path(new_path)
    try:
        document = load_document(path, root=_root_for(path, [str(r) for r in roots or []]), data=data)
    except LoadError:
        return False
    # What it keeps at its new place among the paths: the same, or it is loaded again.
    stored = dedup_store.StoredParagraphs(db.conn)
    document.blocks, paragraphs = NearDuplicateFilter().filter_document(
        document.blocks, DEDUP_KINDS, lambda keys: stored.lookup(keys, new_path, {old_path})
    )
    chunks = chunk_document(document)
    stored = db.execute("select id, seq, content from chunks where doc_id = ? order by seq", [doc_id]).fetchall()
    if document.title != title or [(s, c) for _, s, c in stored] != [(c.seq, c.text) for c in chunks]:
        return False
    vectors = chunk_vectors(embedder_for(db), chunks) if chunks else []
    meta = _meta(document, json.loads(db.execute("select meta from docs where id = ?", [doc_id]).fetchone()[0] or "{}").get("tags", []))
    chunk_ids = [chunk_id for chunk_id, _, _ in stored]
    with db.atomic():
        existing = db.execute("select id from docs where path = ?", [new_path]).fetchone()
        if existing:
            purge_documents(db, [existing[0]])
        db.conn.execute(
            "update docs set path = ?, mtime_ms = ?, meta = ?, ingested_at = ? where id = ?",
            [new_path, document.mtime_ms, json.dumps(meta), _now(), doc_id],
        )
        db.conn.executemany(
            "update chunks set prelude = ? where id = ?",
            [(chunk.prelude, chunk_id) for chunk, chunk_id in zip(chunks, chunk_ids)],
        )
        if chunks:
            write_embeddings(db, "chunks", chunk_ids, vectors, [chunk.embed_text for chunk in chunks])
            forget_dense(db, chunk_ids)  # their preludes changed: embedded again below
        dedup_store.write_paragraphs(db.conn, doc_id, new_path, paragraphs, moved_from=old_path)
    _keep_dense(db)
    return True


SPECIAL_KINDS = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISDIR, "a folder"),
)


def special_file(path, roots=(), *, follow_links=False):
    """Why ``path`` is not a file to read, found without opening it, or None.

    FIFOs, sockets and devices are never opened (a FIFO would block the reader); a
    symbolic link is followed only when its target stays inside the folder of ``roots``
    the link was found under, or when ``follow_links``.
    """
    path = os.path.abspath(path)
    try:
        info = os.lstat(path)
    except OSError:
        return None  # gone or unreadable: reading it says so
    if stat.S_ISLNK(info.st_mode):
        target = os.path.realpath(path)
        folder = next(
            (r for r in map(os.path.abspath, map(str, roots)) if path.startswith(r.rstrip("/") + "/")),
            os.path.dirname(path),
        )
        real_folder = os.path.realpath(folder)
        if not follow_links and not target.startswith(real_folder.rstrip("/") + "/"):
            return f"skipped: a symbolic link to {target}, outside {folder}; {LINK_HINT}"
        try:
            info = os.stat(path)
        except OSError as ex:
            if ex.errno == errno.ELOOP:
                return "skipped: a symbolic link loop (the link leads back to itself); fix or remove the link"
            return f"skipped: a broken symbolic link (to {target}); fix or remove the link"
    for test, kind in SPECIAL_KINDS:
        if test(info.st_mode):
            return f"skipped: {kind}, not a regular file; graphrag reads only regular files and never opens these"
    return None


def _record_run(db, started, paths, result):
    summary = {
        "started_at": started,
        "finished_at": _now(),
        "paths": json.dumps([str(p) for p in paths]),
        "ingested": result.ingested,
        "skipped": result.skipped,
        "pruned": result.pruned,
        "duplicates_skipped": result.duplicates_skipped,
        "chunks": result.chunks,
        "errors": json.dumps(result.errors),
    }
    with db.atomic():
        db["ingest_runs"].insert(summary)
        set_setting(db, "last_ingest", summary["finished_at"])
