"""``extract_and_link``: documents' chunks to mentions, entities and relations.

The engine behind ``llm graphrag extract`` and the ``extract_and_link`` tool. Worker
processes find each document's mentions and relation candidates; this process links them
in document order and writes a small batch of documents per short transaction, while a
side process embeds new entities and facts outside any transaction. A document whose
content was already extracted by the same extractor version is skipped, so running it
again changes nothing.
"""

from __future__ import annotations

import bisect
import contextlib
import datetime
import functools
import json
import logging
import os
import re
from collections import Counter
from dataclasses import dataclass

from . import parallel, plugins
from .db import ChangedMeanwhile, checkpoints_spaced, foreign_keys_off
from .extraction import (
    ChunkText,
    ExtractionContext,
    ExtractionSettings,
    Gazetteer,
    description_text,
    finish_mentions,
    heading_lines,
    heading_names,
    normalize,
    salient_terms,
    subject_mention,
)
from .linking import GENERIC_TYPES, Linker, entity_text, type_order
from .refine import (
    COOCCURRENCE_MIN_SENTENCES,
    HELD_RELATIONS,
    RELEASED_SETTING,
    defer_refinement,
    generic_norms,
    no_longer_generic,
    refine_graph,
    take_deferred,
)

# Mentions that may name a generic word ("service", "Service" opening a heading): code,
# standards and the like never do.
GENERIC_MENTION_TYPES = frozenset({"concept", "term", "name"})
from .relations import SYMMETRIC, UNTYPED, fact_text
from .schema import DEFERRED_TRIGGERS as SUSPENDED_SETTING
from .schema import (
    EVIDENCE_TRIGGER, VECTOR_INSERT_TRIGGER, get_setting, has_trigger, indexes_deferred, restore_indexes, restore_triggers, set_setting,
    triggers_deferred,
)

# Part of every extracted document's hash: raised when extraction gives other results, so
# that ``extract`` redoes what an earlier version extracted (2: gazetteer single words; 3:
# names as written, refine.py; 4: no gazetteer frequency in mentions' features; 5: stop 35's
# relation rules, a clause's verb told from a noun by agreement, descriptions from headings
# in whole words and from glossary entries; 6: section leads as descriptions, code norms
# keeping their underscores and dashes, identifiers and lower-case phrases in fuzzy linking).
EXTRACTOR_VERSION = "6"
# After an entity's first mention in a sentence: does the sentence define it? (match() anchors)
_DEFINITION = re.compile(
    r"\s*(?:(?:is|are|was|were)\s+(?:a|an|the|one)\b|(?:provides|implements|refers to|means|"
    r"denotes|represents|describes)\b|[:—–-]\s+\w|\()",
)


log = logging.getLogger(__name__)  # each again round: how many documents it links again


def load_settings(db):
    return ExtractionSettings.from_dict(get_setting(db, "extract", {}))


def extract_and_link(db, doc_ids=None, *, progress=None, force=False, workers=None):
    """Extract mentions, link entities and find relations for documents of ``db``.

    ``doc_ids`` limits the run to those documents (default: every document whose content
    has not been extracted yet). ``progress(path)`` is called once per document.
    ``workers`` processes find mentions and relation candidates while this one links and
    writes (default: one per CPU when the run is large enough, see ``worker_count``; 0
    does everything here). Returns ``{"mentions": N, "entities_new": N, "relations": N}``:
    the documents' mentions and the new entities stored once the graph is refined
    (``refine.py``), and the relations the documents gave evidence for. ``force``
    first takes back what the documents gave before, as ingesting them again would.
    Documents linked before in a way the graph now links otherwise (``_misplaced_generic``,
    ``_lost_heads``) are extracted again, so the graph is the same whatever order
    documents came in.
    """
    restore_triggers(db)  # a bulk run that died midway left them out
    restore_indexes(db)
    settings = load_settings(db)
    pending = _pending(db, doc_ids, force)
    if force and any(p[4] for p in pending):
        # What the documents gave the graph goes first, as a new ingest of them would take
        # it: linking them again then finds the graph the others make, not their own.
        _release(db, [p[0] for p in pending if p[4]])
        pending = _pending(db, doc_ids, force)
    # A run that died before it refined the graph: this one refines what it would have.
    unfinished = get_setting(db, RUN_SETTING)
    # Documents a run that died had still to extract again (``AGAIN_SETTING``).
    extracting = {p[0] for p in pending}
    left_again = [d for d in get_setting(db, AGAIN_SETTING, []) or [] if d not in extracting]
    if not pending and not unfinished and not left_again and not get_setting(db, RELEASED_SETTING):
        return {"mentions": 0, "entities_new": 0, "relations": 0}
    last_entity = db.execute("select coalesce(max(id), 0) from entities").fetchone()[0]
    found = _ExtractedCache()
    # A bulk run's triggers stay out through the rounds after it too (``_again_rounds``): those
    # rewrite a third of the documents, and row by row full-text indexing cost them more
    # than the links; the indexes are rebuilt once, when the last round is done. Garbage
    # is collected once too, not after each round (each walked what ``found`` keeps), and
    # the write-ahead log is checkpointed less often (``checkpoints_spaced``).
    bulk = bool(pending or unfinished) and _is_bulk(db, pending, unfinished)
    with contextlib.ExitStack() as stack:
        stack.enter_context(parallel.gc_paused())
        if bulk:
            stack.enter_context(checkpoints_spaced(db))
            stack.enter_context(triggers_deferred(db, DEFERRED_TRIGGERS))
        if pending or unfinished:
            totals, again = _run(db, pending, settings, progress, workers, unfinished, found, triggers_out=bulk)
            again = sorted(set(again) | set(left_again))
        else:
            totals, again = {"relations": 0}, left_again
        _again_rounds(db, again, settings, workers, found, triggers_out=bulk)
    # What is stored once refined: the documents' mentions, and the entities made.
    doc_ids = [p[0] for p in pending]
    totals["mentions"] = db.execute(
        "select count(*) from mentions where doc_id in (select value from json_each(?))", [json.dumps(doc_ids)]
    ).fetchone()[0]
    totals["entities_new"] = db.execute("select count(*) from entities where id > ?", [last_entity]).fetchone()[0]
    return totals


AGAIN_ROUNDS = 3  # how many times documents linked before may be extracted again, at most
# The documents to extract again, stored in the transaction that finds them and cleared
# once they are: a run killed between the two leaves them to the next.
AGAIN_SETTING = "extraction_again"


def _again_rounds(db, again, settings, workers, found=None, triggers_out=False):
    """Extract ``again`` documents again, and those that finds, ``AGAIN_ROUNDS`` times at most
    (what ``found`` kept of them is linked again, not extracted again). A round that links
    them as they were and finds the same documents again has reached where they stay: the
    next would do the same. ``triggers_out``: the caller has suspended ``DEFERRED_TRIGGERS``."""
    for round_number in range(1, AGAIN_ROUNDS + 1):
        if not again:
            break
        log.info("again round %d: %d documents linked again", round_number, len(again))
        before = _links(db, again)
        _, after = _run(
            db, _pending(db, again, True), settings, None, workers, found=found, relink=True, triggers_out=triggers_out,
        )
        if after == again and _links(db, again) == before:
            break
        again = after
    with db.atomic():
        db.execute("delete from graphrag_settings where key = ?", [AGAIN_SETTING])


def _links(db, doc_ids):
    """How the documents' mentions are linked: by span, the entity's norm and type."""
    return db.execute(
        "select m.doc_id, m.chunk_id, m.span_start, m.span_end, m.type, e.norm, e.type, m.link_score "
        "from mentions m left join entities e on e.id = m.entity_id "
        "where m.doc_id in (select value from json_each(?)) order by 1, 2, 3, 4, 5, 6, 7",
        [json.dumps(doc_ids)],
    ).fetchall()


def _run(db, pending, settings, progress, workers, unfinished=None, found=None, relink=False, triggers_out=False):
    """Extract, link and refine the ``pending`` documents; returns their totals and the
    documents to extract again (``_misplaced_generic``, ``_lost_heads``). ``unfinished``:
    the run a process that died left (``RUN_SETTING``), refined with this one. ``relink``:
    the documents are stored ones linked again (``_again_rounds``): only the entities
    whose row or mentions that changes are named again (``_naming_rows``). ``triggers_out``:
    the caller has suspended ``DEFERRED_TRIGGERS`` (a bulk run does, see ``_is_bulk``)."""
    with contextlib.ExitStack() as stack:
        stack.enter_context(parallel.gc_paused())
        bulk = _is_bulk(db, pending, unfinished)
        doc_ids = [p[0] for p in pending]
        refined = sorted(set(doc_ids) | set(unfinished["doc_ids"] if unfinished else ()))
        last_entity = db.execute("select coalesce(max(id), 0) from entities").fetchone()[0]
        if unfinished:  # the entities the dead run made count as this run's
            last_entity = min(last_entity, unfinished.get("last_entity", last_entity))
        set_setting(db, RUN_SETTING, {"bulk": bulk, "doc_ids": refined, "last_entity": last_entity})
        if bulk and not triggers_out:
            stack.enter_context(triggers_deferred(db, DEFERRED_TRIGGERS))
        named_before = _naming_rows(db, doc_ids) if relink and not unfinished else None
        renamed = set() if named_before is not None else None  # entities whose mentions there changed
        # Names these documents had before an ingest took them back, taken by every run:
        # only the one that links right after that ingest's releases may use them.
        returning = take_returning_roots(db)
        if relink or unfinished:
            returning = set()
        if pending:
            since = last_entity if unfinished else None  # the dead run's entities count too
            # A bulk run of documents never extracted only inserts until it refines.
            inserts_only = bulk and not relink and not unfinished and not any(p[4] for p in pending)
            with indexes_deferred(db, DEFERRED_INDEXES) if inserts_only else contextlib.nullcontext():
                totals, linked_before = _extract(
                    db, pending, settings, progress, workers, found, since,
                    least=AGAIN_MIN_DOCUMENTS if relink else parallel.MIN_ITEMS, returning=returning,
                    renamed=renamed,
                )
        else:  # a dead run's documents all written: what its entities take is found here
            totals, linked_before = {"relations": 0}, set()
            if unfinished:
                totals[ABSORBING] = _absorbing_since(db, settings, last_entity)
        absorbing = totals.pop(ABSORBING, [])
        if absorbing:  # found in memory: stored now, a run killed while it refines leaves them to the next
            with db.atomic():
                left = get_setting(db, AGAIN_SETTING, []) or []
                set_setting(db, AGAIN_SETTING, sorted(set(left) | set(absorbing)))
        # What the whole corpus decides: generic entities, significant co-occurrence,
        # canonical names (a bulk run refines everything, a small one what it touched:
        # the entities the documents mention, and those they mentioned before).
        with db.atomic():
            released = take_deferred(db)  # entities rewritten documents mentioned before
            if bulk:
                refine_graph(db, settings)
                orphaned = _orphaned(db)
            else:
                mentioned = [e for (e,) in db.execute(
                    "select distinct entity_id from mentions where entity_id is not null and "
                    "doc_id in (select value from json_each(?))", [json.dumps(refined)]
                )]
                scope = set(mentioned) | linked_before | set(released)
                naming = None
                if named_before is not None:
                    named_after = _naming_rows(db, doc_ids)
                    naming = sorted(
                        ({row[0] for row in named_before ^ named_after} | renamed | set(released) | {
                            e for (e,) in db.execute("select id from entities where id > ?", [last_entity])
                        }) & scope
                    )
                refine_graph(db, settings, entity_ids=sorted(scope), naming_ids=naming)
                orphaned = _orphaned(db, sorted(set(mentioned) | linked_before | set(released)))
            db.execute("delete from graphrag_settings where key = ?", [RUN_SETTING])
            again = set(_misplaced_generic(db, refined)) | set(_lost_heads(db, last_entity))
            again |= set(no_longer_generic(db))
            again |= set(gazetteer_changed(db, settings, doc_ids))
            again |= set(orphaned)
            again |= set(absorbing) & {d for (d,) in db.execute(
                "select id from docs where id in (select value from json_each(?))", [json.dumps(absorbing)]
            )}
            set_setting(db, AGAIN_SETTING, sorted(again))
    return totals, sorted(again)


def settle(db, workers=None):
    """After documents went: extract again those the graph now links otherwise (generic
    mentions whose entity of highest priority went, words no longer generic)."""
    norms = [n for (n,) in db.execute("select norm from entities group by norm having count(*) > 1")]
    with db.atomic():
        again = set(_misplaced_generic(db, norms=norms)) | set(no_longer_generic(db))
        again |= set(gazetteer_changed(db, load_settings(db))) | set(_orphaned(db))
        again |= set(get_setting(db, AGAIN_SETTING, []) or [])
        set_setting(db, AGAIN_SETTING, sorted(again))
    _again_rounds(db, sorted(again), load_settings(db), workers)


def release_extraction(db, doc_ids, refine=True):
    """Take back what extraction stored for documents whose chunks are about to go.

    Their mentions and relation evidence are deleted (a relation left without evidence
    goes with it, by trigger), the entities they mentioned lose that popularity, and those
    no other document mentions are deleted with their relations and vectors; relations
    that keep other evidence get their weight and confidence from what remains. The
    documents are marked as not extracted. Call inside the caller's transaction.
    """
    conn = db.conn
    if not refine:  # extracted again next: the names they had, for ``_absorbing``
        remember_roots(db, doc_ids)
    ids = json.dumps(list(doc_ids))
    in_docs = "doc_id in (select value from json_each(?))"
    counts = conn.execute(
        f"select entity_id, count(*) from mentions where {in_docs} and entity_id is not null "
        "group by entity_id",
        [ids],
    ).fetchall()
    relations = [
        r for (r,) in conn.execute(f"select distinct relation_id from relation_evidence where {in_docs}", [ids])
    ]
    conn.execute(f"delete from relation_evidence where {in_docs}", [ids])
    conn.execute(f"delete from mentions where {in_docs}", [ids])
    conn.executemany(
        "update entities set popularity = popularity - ? where id = ?", [(n, e) for e, n in counts]
    )
    mentioned = json.dumps([e for e, _ in counts])
    conn.execute(
        "delete from entities where id in (select value from json_each(?)) and not exists "
        "(select 1 from mentions m where m.entity_id = entities.id)",
        [mentioned],
    )
    conn.execute(
        "update relations set weight = (select round(total(confidence), 4) from relation_evidence e "
        "where e.relation_id = relations.id), confidence = coalesce((select max(confidence) from "
        "relation_evidence e where e.relation_id = relations.id), confidence), chunk_id = coalesce("
        "(select chunk_id from relation_evidence e where e.relation_id = relations.id and "
        "e.chunk_id = relations.chunk_id and e.doc_id not in (select value from json_each(?))), "
        "(select chunk_id from relation_evidence e where e.relation_id = relations.id "
        "order by confidence desc, id limit 1)) where id in (select value from json_each(?))",
        [ids, json.dumps(relations)],
    )
    conn.execute("update docs set extracted_hash = null where id in (select value from json_each(?))", [ids])
    # What the corpus decides of the entities that lost mentions (their names, whether
    # they are generic, their co-occurrence edges) may change with them.
    # ``refine=False``: the documents are extracted again next, and that run refines them.
    survivors = [e for e, _ in counts]
    if survivors and not refine:
        defer_refinement(db, survivors)
    elif survivors:
        refine_graph(db, load_settings(db), entity_ids=survivors)


def _release(db, doc_ids):
    """Take back what extraction stored for ``doc_ids`` (``release_extraction``),
    held co-occurrence evidence and dropped heads and words included."""
    with db.atomic():
        for table in ("held_evidence", "dropped_heads", "dropped_words"):
            db.conn.execute(f"delete from {table} where doc_id in (select value from json_each(?))", [json.dumps(doc_ids)])
        release_extraction(db, doc_ids)


def _misplaced_generic(db, doc_ids=(), norms=None):
    """Documents whose generic mentions (concepts, terms, names) of a name ``doc_ids``
    mention (or of ``norms``), linked by that name, are not linked to the entity
    ``Linker._exact`` now gives them (the first of their type, else the first of the name
    in ``linking.type_order``): one of higher priority came after they were linked."""
    if norms is None:
        # Only a name of several entities can be linked to the wrong one: those names first
        # (from the norm index), then the ones the documents mention. Joining every mention
        # of the documents to its entity first took a bulk run ten times as long.
        shared = [n for (n,) in db.execute("select norm from entities group by norm having count(*) > 1")]
        norms = [n for (n,) in db.execute(
            "select distinct e.norm from entities e join mentions m on m.entity_id = e.id "
            "where e.norm in (select value from json_each(?)) and m.doc_id in (select value from json_each(?))",
            [json.dumps(shared), json.dumps(doc_ids)],
        )]
    by_norm = {}
    for entity_id, typ, norm in db.execute(
        "select id, type, norm from entities where norm in (select value from json_each(?)) order by id",
        [json.dumps(norms)],
    ):
        by_norm.setdefault(norm, []).append((type_order(typ), entity_id, typ))
    found = set()
    for entities in by_norm.values():
        if len(entities) < 2:
            continue
        first = min(entities)[1]
        linked = {t: min((i for _, i, typ in entities if typ == t), default=first) for t in GENERIC_TYPES}
        for _, entity_id, _ in entities:
            wrong = [t for t in GENERIC_TYPES if linked[t] != entity_id]
            found.update(d for (d,) in db.execute(
                "select distinct m.doc_id from mentions m join entities e on e.id = m.entity_id "
                "where m.entity_id = ? and m.type in (select value from json_each(?)) "
                "and json_extract(m.meta, '$.norm') = e.norm and m.features not like '%\"coref\": true%'",
                [entity_id, json.dumps(wrong)],
            ))
    return found


def _lost_heads(db, last_entity):
    """Documents whose mentions of a name refinement dropped as bare compound heads
    ("clock" of "synchronised clock", with no entity of its own then) when this run made
    an entity of that name: linked again, the heads go with it."""
    return [d for (d,) in db.execute(
        "select distinct h.doc_id from dropped_heads h join entities e on e.norm = h.norm where e.id > ?",
        [last_entity],
    )]


# The run under way: ``{"bulk": bool, "doc_ids": [...], "last_entity": id}``, from before its first write
# until the transaction that refines the graph, so a run that dies is finished by the next.
RUN_SETTING = "extraction_run"


def unfinished_work(db, doc_ids=None):
    """What runs that died left undone (``status`` reports it, ``ingest`` finishes it):
    ``pending_extraction``, the documents (of ``doc_ids``, default all) whose content is
    not extracted; ``pending_refinement``, the documents a run extracted without refining
    the graph after or had still to extract again (``AGAIN_SETTING``);
    ``suspended_triggers``, the triggers a bulk run left out."""
    pending = len(_pending(db, doc_ids, False))
    run = get_setting(db, RUN_SETTING)
    unrefined = set(run["doc_ids"] if run else ()) | set(get_setting(db, AGAIN_SETTING, []) or [])
    suspended = get_setting(db, SUSPENDED_SETTING) or {}
    return {
        "pending_extraction": pending,
        "pending_refinement": len(unrefined),
        "suspended_triggers": sorted(name for triggers in suspended.values() for name, _ in triggers),
    }


# Triggers a bulk run (at least as many documents as were extracted before) suspends:
# it indexes entities' and relations' full text once at the end, counts relations'
# evidence itself (see ``_write``) and writes entity and fact vectors into their vec0
# indexes itself (see ``write_embeddings``).
DEFERRED_TRIGGERS = {
    "entities": ("entities_ai", "entities_ad", "entities_au"),
    "relations": ("relations_ai", "relations_ad", "relations_au"),
    "relation_evidence": (EVIDENCE_TRIGGER,),
    "embeddings": (VECTOR_INSERT_TRIGGER + "entities", VECTOR_INSERT_TRIGGER + "facts"),
}


# Indexes a bulk run of documents never extracted drops while it writes them (``_run``),
# and creates again before it refines: nothing it does meanwhile looks rows up by them
# (mentions by entity, and relations and held evidence by pair, keep theirs). Weak
# co-occurrence evidence is held as it is written (``_too_weak``): most of held_evidence.
DEFERRED_INDEXES = (
    "idx_mentions_doc", "idx_mentions_chunk", "idx_relation_evidence_chunk", "idx_relation_evidence_doc",
    "idx_relations_chunk", "idx_rel_src_rel", "idx_rel_dst_rel",
    "idx_held_evidence_dst", "idx_held_evidence_chunk", "idx_held_evidence_doc",
)


def _is_bulk(db, pending, unfinished=None):
    """Whether a run of ``pending`` documents is bulk: at least as many as were extracted
    before (or finishing a bulk run that died). It refines the whole graph and suspends
    ``DEFERRED_TRIGGERS``."""
    return len(pending) >= max(parallel.MIN_ITEMS, _extracted_count(db)) or bool(unfinished and unfinished["bulk"])


def _extracted_count(db):
    return db.execute("select count(*) from docs where extracted_hash is not null").fetchone()[0]


def _naming_rows(db, doc_ids):
    """What ``refine.canonical_names`` reads of the entities ``doc_ids`` mention, as a set
    of rows each led by the entity id: the entities' own rows (``_write`` compares the
    documents' mentions, see ``_naming_changes``). An entity whose rows and mentions
    are the same after its documents are linked again was named from them already, and
    is not named again."""
    return set(db.execute(
        "select id, type, name, norm, aliases, description, meta from entities where id in "
        "(select entity_id from mentions where doc_id in (select value from json_each(?)))",
        [json.dumps(sorted(doc_ids))],
    ))


def _naming_changes(old, rows, chunks):
    """Entities whose mentions in one document, as ``refine.canonical_names`` reads them
    (``_naming_key``), differ between its stored ``old`` rows (``(id, *row)``) and its
    new ``rows``."""
    seqs = {chunk.id: chunk.seq for chunk in chunks}
    before = {_naming_key(row[1:], seqs) for row in old if row[1] is not None}
    after = {_naming_key(row, seqs) for row in rows if row[0] is not None}
    return {key[0] for key in before ^ after}


def _naming_key(row, seqs):
    """A ``mentions`` row (``MENTION_COLUMNS``) as naming reads it: chunk by its place, no
    id, scores or snippet."""
    entity_id, doc_id, chunk_id, start, end, surface, typ, _, _, features, _, meta = row
    return entity_id, doc_id, seqs.get(chunk_id), start, end, surface, typ, features, meta


def _extract(
    db, pending, settings, progress, workers, found=None, since=None, least=parallel.MIN_ITEMS, returning=frozenset(),
    renamed=None,
):
    """``extract_and_link`` of the ``pending`` documents (see ``_pending``); returns the
    totals and the entities their earlier extraction linked to. ``found`` (an ``_ExtractedCache``)
    keeps what workers found in the documents, and gives it back when one of them comes
    again in the same run (``_run``'s rounds): it is linked again, not extracted again.
    ``since``: resuming a run that died, the entities after this id are ones it made.
    ``returning``: names these documents had before an ingest took them back
    (``take_returning_roots``). ``renamed``: a set that gets the entities whose mentions
    in the documents changed (``_naming_changes``)."""
    totals = {"mentions": 0, "entities_new": 0, "relations": 0}
    from .embeddings import embedder_for

    found = found if found is not None else _ExtractedCache()
    known_before = {p[0] for p in pending if found.has(p[0], p[3])}
    embedder = embedder_for(db)
    wanted, workers = workers, worker_count(workers, len(pending) - len(known_before), settings, least=least)
    # Entity and fact vectors are computed in a process of their own while this one links
    # (a local model only: a service's client and its open connections are not forked),
    # also when every document is linked again from ``found`` and no worker is needed:
    # an again round's embeddings were a tenth of its time in this process.
    side = embedder.local and bool(workers or worker_count(wanted, len(pending), settings, least=least))
    if workers and least < parallel.MIN_ITEMS:
        # Forked workers start with what this process has loaded: load it once, here.
        from .extraction import spacy_pipeline

        if settings.ner != "off":
            spacy_pipeline()
    if workers or side:
        # The tokenizer's own thread pool would compete with the workers for the same
        # cores: every small embedding call here then waits for a busy core.
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    # Pass one: salient terms, in a single transaction (one commit, not one per document).
    texts = (
        (doc_id, title, [c for (c,) in db.execute("select content from chunks where doc_id = ? order by seq", [doc_id])])
        for doc_id, _, title, _, _ in pending if doc_id not in known_before  # the same content: the same terms
    )
    with db.atomic():
        for doc_id, rows in parallel.ordered_map(_salient_rows, texts, workers, ahead=EXTRACT_AHEAD):
            db.conn.execute("delete from gazetteer_terms where doc_id = ?", [doc_id])
            db.conn.executemany(
                "insert into gazetteer_terms (doc_id, norm, term, type) values (?, ?, ?, ?)", rows
            )
    gazetteer = _gazetteer_rows(db, settings)
    if found.gazetteer != gazetteer:  # what extraction sees changed: found again
        found.clear(gazetteer)
        known_before = set()
    context = ExtractionContext(settings, Gazetteer(gazetteer), embedder)
    context.generic = generic_norms(db)
    linker = Linker.from_db(db, embedder=embedder, threshold=settings.link_threshold)
    linker.own_elsewhere = functools.partial(_own_mentions, db, json.dumps([p[0] for p in pending if p[4]]))
    mention_extractors = plugins.get_mention_extractors()
    relation_extractors = plugins.get_relation_extractors()
    known = _KnownRelations(db, hold_weak=getattr(settings, "cooccurrence", "significant") == "significant")
    with parallel.SideProcess(side, _start_embedder, (embedder,)) as embed:
        batch = _Batch()
        chunks_of = {}  # doc id -> its chunks, kept here while a worker extracts them

        def documents():
            for doc_id, path, title, _, _ in pending:
                chunks = chunks_of[doc_id] = _chunks(db, doc_id, title, path)
                if doc_id not in known_before:
                    yield doc_id, title, chunks

        extracted_documents = parallel.ordered_map(
            _extract_document, documents(), workers,
            initializer=_start_worker, initargs=(context, mention_extractors, relation_extractors),
            ahead=EXTRACT_AHEAD, nice=WORKER_NICENESS,
        )
        touched, linked_before, created = set(), set(), []
        for doc_id, path, title, content_hash, extracted_before in pending:
            if doc_id in known_before:
                chunks_of[doc_id] = _chunks(db, doc_id, title, path)
                extracted = found.get(doc_id, content_hash)
            else:
                extracted = next(extracted_documents)
                found.add(doc_id, content_hash, extracted)
            extracted = _leave_out(extracted, context.generic)
            if progress:
                progress(path)
            prepared = _prepare_document(
                db, extracted, chunks_of.pop(doc_id), content_hash, extracted_before, context, linker,
                embed, batch, known,
            )
            batch.add(prepared)
            linked_before.update(prepared.old_counts)
            created.extend(prepared.created)
            totals["mentions"] += prepared.mention_count
            totals["entities_new"] += len(prepared.created)
            if batch.full():
                touched.update(_flush(db, batch, linker, embedder, known, renamed))
                batch = _Batch()
        touched.update(_flush(db, batch, linker, embedder, known, renamed))
    totals["relations"] = len(touched)
    if since is not None:  # resuming a run that died: the entities it made are this run's too
        made = {e.id for e in created}
        created += [e for i, e in sorted(linker.entities.items()) if i > since and i not in made]
    totals[ABSORBING] = _absorbing(db, linker, created, returning, [p[0] for p in pending])
    return totals, linked_before


ABSORBING = "absorbing"  # ``_extract``'s totals: documents ``_absorbing`` found (``_run`` takes them out)


def _own_mentions(db, relinked, entity):
    """Where the database holds mentions of ``entity`` under its own norm (``Linker.is_root``):
    ``"elsewhere"`` (in documents other than ``relinked``, the JSON ids of those a run links
    again), ``"relinked"`` (only in those) or None."""
    (inside,) = db.execute(
        "select min(doc_id in (select value from json_each(?))) from mentions "
        "where entity_id = ? and json_extract(meta, '$.norm') = ?",
        [relinked, entity.id, entity.norm],
    ).fetchone()
    return None if inside is None else "relinked" if inside else "elsewhere"


def _orphaned(db, entity_ids=None):
    """Documents that mention an entity none of whose mentions is of its own norm (its
    own went, with a document or to a fuller name): only near-identical names linked to
    it, which a clean ingest, with no such entity, links otherwise. ``entity_ids``: only
    those entities (default: every entity a mention links to by a near-identical name,
    its link score below 1)."""
    if entity_ids is None:
        # Read in the table's order (``not indexed``): walking the entity index instead read
        # every row out of order, fourteen times as long on python3.11-doc (0.57 s).
        entity_ids = [e for (e,) in db.execute(
            "select distinct entity_id from mentions not indexed "
            "where link_score < 1 and features not like '%\"coref\": true%'"
        )]
    orphans = [e for (e,) in db.execute(
        "select e.id from entities e where e.id in (select value from json_each(?)) and not exists "
        "(select 1 from mentions m where m.entity_id = e.id and json_extract(m.meta, '$.norm') = e.norm)",
        [json.dumps(sorted(entity_ids))],
    )]
    if not orphans:
        return []
    return [d for (d,) in db.execute(
        "select distinct doc_id from mentions where entity_id in (select value from json_each(?)) order by doc_id",
        [json.dumps(orphans)],
    )]


def _absorbing(db, linker, created, returning=frozenset(), run_docs=()):
    """Documents that mention, under a name of its own, an entity that a near-identical
    name would now take (``Linker.best_fuzzy``): one this run made or gave mentions of its
    own to ("Package Index" once "Python Package Index" came), or one this run made that
    an older name takes (which takes no other name's: linked again, its own mentions go
    to that name). Linked again, their mentions go to it, as in a clean ingest where every
    name is in when they are linked.

    A name in ``returning`` (``(norm, type)``) had mentions of its own before an ingest
    took back the documents this run links, and nothing was linked meanwhile: the other
    documents were linked with it in, so only this run's (``run_docs``, linked while it
    was out) can be linked otherwise."""
    absorbed, absorbed_here = set(), set()
    rooted = [linker.entities.get(i) for i in sorted(linker.unrooted)]
    takers = []  # (entity, the set its absorbed names go to)
    for entity in [e for e in created if linker.entities.get(e.id) is e] + [e for e in rooted if e is not None]:
        if not linker.is_root(entity):
            continue
        into = absorbed_here if (entity.norm, entity.type) in returning else absorbed
        probe = linker.probe(entity)
        if linker.best_fuzzy(probe, linker.fuzzy_candidates(probe)) is not None:
            # Taken by an older name: linked again, its mentions go there, so it takes no
            # other name's (a clean ingest never makes it).
            into.add(entity.id)
            continue
        takers.append((entity, into))
    taken = linker.absorbed_by_each([entity for entity, _ in takers])
    for entity, into in takers:
        into.update(other.id for other in taken[entity.id])
    docs = set()
    for ids, within in ((absorbed, None), (absorbed_here - absorbed, run_docs)):
        if ids:
            docs.update(d for (d,) in db.execute(
                "select distinct doc_id from mentions where entity_id in (select value from json_each(?))",
                [json.dumps(sorted(ids))],
            ) if within is None or d in within)
    return sorted(docs)


# Names with mentions of their own in documents an ingest takes back to extract again
# (``ingest.release_extraction`` with ``refine=False``), ``(norm, type)``: kept in a
# temporary table of the ingest's connection for the run that links those documents
# next (``_absorbing``). Every run takes them (``take_returning_roots``), so a run that
# links anything between the two leaves none. Only an ingest makes the table
# (``returning_roots``): a process that dies loses it, and its next run looks wider.
RETURNING_TABLE = "graphrag_returning_roots"


@contextlib.contextmanager
def returning_roots(db):
    """While the block runs (one ``ingest_docs``), names that documents taken back had are
    remembered (``remember_roots``) for the extraction that follows."""
    conn = db.conn
    if _remembering_roots(db):  # an outer ingest keeps its own
        yield
        return
    conn.execute(f"create temp table {RETURNING_TABLE} (norm text not null, type text not null, primary key (norm, type))")
    try:
        yield
    finally:
        conn.execute(f"drop table if exists temp.{RETURNING_TABLE}")


def _remembering_roots(db):
    return db.execute("select 1 from temp.sqlite_master where name = ?", [RETURNING_TABLE]).fetchone() is not None


def remember_roots(db, doc_ids):
    """Remember the names ``doc_ids`` mention under their own norm, before their mentions go."""
    if _remembering_roots(db):
        db.conn.execute(
            f"insert or ignore into temp.{RETURNING_TABLE} (norm, type) select distinct e.norm, e.type "
            "from mentions m join entities e on e.id = m.entity_id where m.doc_id in (select value from json_each(?)) "
            "and json_extract(m.meta, '$.norm') = e.norm",
            [json.dumps(sorted(doc_ids))],
        )


def take_returning_roots(db):
    """The names ``remember_roots`` kept, forgotten: ``{(norm, type)}``."""
    if not _remembering_roots(db):
        return set()
    names = set(db.execute(f"select norm, type from temp.{RETURNING_TABLE}"))
    with db.atomic():  # a statement outside one would open a transaction left open
        db.conn.execute(f"delete from temp.{RETURNING_TABLE}")
    return names


def _absorbing_since(db, settings, since):
    """``_absorbing`` of the entities after id ``since``: those a run that died made, when
    it died after writing its last document and before it looked."""
    from .embeddings import embedder_for

    linker = Linker.from_db(db, embedder=embedder_for(db), threshold=settings.link_threshold)
    linker.own_elsewhere = functools.partial(_own_mentions, db, "[]")
    return _absorbing(db, linker, [e for i, e in sorted(linker.entities.items()) if i > since])


class _ExtractedCache:
    """What workers found in documents (``_extract_document``) during one run, by document
    and content, while extraction sees the same gazetteer; ``MAX_MENTIONS`` mentions at most."""

    MAX_MENTIONS = 500_000  # about 380 MB: 750 bytes a mention, measured on python3.11-doc

    def __init__(self):
        self.clear(None)

    def clear(self, gazetteer):
        self.gazetteer, self.documents, self.mentions = gazetteer, {}, 0

    def has(self, doc_id, content_hash):
        return (doc_id, content_hash) in self.documents

    def get(self, doc_id, content_hash):
        return self.documents[(doc_id, content_hash)]

    def add(self, doc_id, content_hash, extracted):
        if self.mentions + len(extracted.mentions) <= self.MAX_MENTIONS:
            self.documents[(doc_id, content_hash)] = extracted
            self.mentions += len(extracted.mentions)


class _Batch:
    """Documents extracted but not yet written: written together in one short transaction.

    Seed 004 allows a transaction per file or small batch; one commit per document cost
    more than the writes themselves. Each transaction rewrites the index pages it touches,
    so halving their number (from 128 chunks each) shrank the write-ahead log of one run
    on python3.11-doc by a quarter (1,166 → 890 MB, replaying its writes).
    """

    MAX_CHUNKS = 256
    MAX_DOCUMENTS = 64

    def __init__(self):
        self.documents = []
        self.chunks = 0
        self.fact_vectors = {}  # relation key -> its vector (a call), so a batch embeds each fact once

    def add(self, prepared):
        self.documents.append(prepared)
        self.chunks += len(prepared.chunks)

    def full(self):
        return self.chunks >= self.MAX_CHUNKS or len(self.documents) >= self.MAX_DOCUMENTS


def _flush(db, batch, linker, embedder, known, renamed=None):
    """Write the batch's documents in one transaction; returns the keys of the pairs
    touched (relations, and co-occurrence evidence held at once, see ``_too_weak``).

    A batch that deletes nothing (no document in it was extracted before) is written with
    foreign-key enforcement off, and its parents are checked once before it commits:
    checking every row's cost a twentieth of this process's work.
    """
    relation_ids, touched = [], set()
    if batch.documents:
        inserts_only = not any(prepared.extracted_before for prepared in batch.documents)
        first_new_relation = known.next_id
        with foreign_keys_off(db) if inserts_only else contextlib.nullcontext():
            with db.atomic():
                # Counted here only while the trigger is out: another run may have put it back.
                counting = not has_trigger(db, EVIDENCE_TRIGGER)
                for prepared in batch.documents:
                    written, keys = _write(db, prepared, embedder.encode, known, counting, renamed)
                    relation_ids.extend(written)
                    touched.update(keys)
                if inserts_only:
                    _check_parents(db, batch, [r for r in relation_ids if r < first_new_relation])
        for prepared in batch.documents:
            for entity in prepared.changed:
                entity.new = entity.changed = entity.reembed = False
    return touched


def _check_parents(db, batch, older_relations):
    """Raise ``ChangedMeanwhile`` unless the documents, chunks, entities and relations
    (``older_relations``: those the batch did not insert) that the batch's rows refer to
    are still stored: what foreign keys would have checked row by row."""
    doc_ids = [prepared.extracted.doc_id for prepared in batch.documents]
    chunk_ids = [chunk.id for prepared in batch.documents for chunk in prepared.chunks]
    created = {entity.id for prepared in batch.documents for entity in prepared.created}
    entity_ids = {
        entity_id
        for prepared in batch.documents
        for entity_id in (*prepared.counts, *(e for key in prepared.relations for e in key[:2]))
        if entity_id not in created
    }
    for table, ids in (
        ("docs", doc_ids), ("chunks", chunk_ids), ("entities", sorted(entity_ids)), ("relations", older_relations)
    ):
        (stored,) = db.execute(
            f"select count(*) from {table} where id in (select value from json_each(?))", [json.dumps(ids)]
        ).fetchone()
        if stored != len(set(ids)):
            raise ChangedMeanwhile(
                f"{len(set(ids)) - stored} of the {table} that extraction results refer to were deleted "
                "while they were extracted (by another process writing this database): run extract again"
            )


def _pending(db, doc_ids, force):
    sql = "select id, path, title, coalesce(hash, ''), extracted_hash from docs"
    params = []
    if doc_ids is not None:
        doc_ids = list(doc_ids)
        if not doc_ids:
            return []
        sql += " where id in (select value from json_each(?))"
        params = [json.dumps(doc_ids)]
    sql += " order by id"
    pending = []
    for doc_id, path, title, digest, extracted in db.execute(sql, params).fetchall():
        content_hash = f"{digest}:{EXTRACTOR_VERSION}"
        if force or extracted != content_hash:
            pending.append((doc_id, path, title, content_hash, extracted is not None))
    return pending


def _chunks(db, doc_id, title, path):
    """The document's chunks, in order, as extractors see them."""
    rows = db.execute(
        "select id, seq, content, section, meta from chunks where doc_id = ? order by seq",
        [doc_id],
    ).fetchall()
    chunks = []
    for chunk_id, seq, content, section, meta in rows:
        headings = ()
        if meta:
            try:
                headings = tuple(json.loads(meta).get("headings") or ())
            except (ValueError, AttributeError):
                headings = ()
        chunks.append(ChunkText(chunk_id, doc_id, content or "", seq, section or "", headings, title or "", path or ""))
    return chunks


def _salient_rows(document):
    """Pass one: a document's salient terms, which feed the corpus gazetteer, as rows."""
    doc_id, title, contents = document
    terms = set()
    for content in contents:
        terms |= salient_terms(content or "", "")
    if title:
        terms |= salient_terms("", title)
    rows = {}
    for norm, term, typ in sorted(terms):
        if norm and norm not in rows:
            rows[norm] = (doc_id, norm, term, typ)
    return doc_id, list(rows.values())


def load_gazetteer(db, settings):
    """Seed 004 §6.2: the top-K terms used in salient places by at least min_freq documents."""
    return Gazetteer(_gazetteer_rows(db, settings))


def _gazetteer_rows(db, settings):
    return db.execute(
        "select term, type, freq from gazetteer where freq >= ? order by freq desc, norm limit ?",
        [settings.gazetteer_min_freq, settings.gazetteer_topk],
    ).fetchall()


# The gazetteer the extracted documents were linked with: ``{"lower-case words": [term,
# type]}``, as ``Gazetteer`` keeps it.
GAZETTEER_SETTING = "gazetteer_linked"


def gazetteer_changed(db, settings, extracted=()):
    """Documents extracted with another gazetteer than the corpus makes now (call inside
    a transaction): those whose text holds a term that came into the gazetteer, left it
    or changed type since it was stored (a document added or gone moved it across
    ``gazetteer_min_freq`` or the top K), except ``extracted``, linked with this one.
    Stores the gazetteer as it is now. Candidates come from ``chunks_fts`` (its porter
    stemming finds more, never fewer)."""
    now = {" ".join(key): list(value[:2]) for key, value in load_gazetteer(db, settings).terms.items()}
    before = get_setting(db, GAZETTEER_SETTING)
    if before == now:
        return []
    set_setting(db, GAZETTEER_SETTING, now)
    if before is None:  # stored for the first time: documents were linked with this one
        return []
    found = set()
    for words in sorted(w for w in set(now) | set(before) if now.get(w) != before.get(w)):
        phrase = '"' + words.replace('"', '""') + '"'
        found.update(d for (d,) in db.execute(
            "select distinct c.doc_id from chunks_fts f join chunks c on c.id = f.rowid "
            "join docs d on d.id = c.doc_id where chunks_fts match ? and d.extracted_hash is not null",
            [phrase],
        ))
    return sorted(found - set(extracted))


# The extraction state of a worker process, set once when it starts.
_WORKER = {}
_EMBEDDER = {}  # the model of the process that computes entity and fact vectors


def _start_embedder(embedder):
    _EMBEDDER["model"] = embedder


def _encode(texts):
    return _EMBEDDER["model"].encode(texts)


def _vector_row(job, row):
    return job.result()[row]


def worker_count(workers, documents, settings, least=parallel.MIN_ITEMS):
    """How many processes extract mentions (``parallel.worker_count``), none by default
    while an LLM extracts: its calls are the slow part, and they stay in one process."""
    if workers is None and settings.llm_model:
        return 0
    return parallel.worker_count(workers, documents, least=least)


# Documents extracted again (``_again_rounds``) are few but each costs as much as a new
# one: from this many on, they are spread over processes too. The workers are forked
# from a process that has loaded the extraction models, so they start at once.
AGAIN_MIN_DOCUMENTS = 4


EXTRACT_AHEAD = 48  # documents workers may run ahead of linking: big ones take a while
# Linking and writing, here, is the slowest stage: workers yield the CPU to it and catch
# up meanwhile, up to EXTRACT_AHEAD documents ahead.
WORKER_NICENESS = 10


def _start_worker(context, mention_extractors, relation_extractors):
    _WORKER.update(context=context, mentions=mention_extractors, relations=relation_extractors)


@dataclass
class _Extracted:
    """One document's mentions and relation candidates, before linking.

    Plain tuples, with mentions and sentences referred to by index: what crosses from a
    worker process costs far less to pickle and unpickle than the objects extractors made.
    """

    doc_id: int
    mentions: list  # rows in text order, the title's subject first: see ``_mention_record``
    candidates: list  # (chunk index, src, dst, rel, weight, proximity, sentence, extractor)
    sentences: list  # the candidates' sentences, whitespace runs squashed
    spans: dict  # chunk id -> the chunk's sentence spans
    defining: set  # indexes of the mentions whose sentence defines them
    left_out: list  # norms of generic words mentioned, left out (refine.generic_norms)


def _extract_document(document):
    """Mentions and relation candidates of one document: needs no database, so it runs
    in a worker process (or in this one, after ``_start_worker``)."""
    doc_id, title, chunks = document
    context = _WORKER["context"]
    context.start_document(chunks)
    subject = subject_mention(title)
    context.cache["subject"] = subject
    per_chunk = []
    for chunk in chunks:
        mentions = []
        for extract in _WORKER["mentions"].values():
            mentions.extend(extract(chunk, context) or ())
        per_chunk.append(finish_mentions(chunk, mentions, context))
    candidates = []
    for chunk, mentions in zip(chunks, per_chunk):
        found = []
        for extract in _WORKER["relations"].values():
            found.extend(extract(chunk, mentions, context) or ())
        candidates.append(found)
    counted = _counted_norms(chunks)
    per_chunk = [_without_idle_abstracts(m, c, counted) for m, c in zip(per_chunk, candidates)]

    ordered = [(0, subject)] if subject is not None and chunks else []
    ordered.extend((index, m) for index, mentions in enumerate(per_chunk) for m in mentions)
    position = {m: i for i, (_, m) in enumerate(ordered)}
    rows, spans, defining, homes = [], {}, set(), {}
    for i, (index, m) in enumerate(ordered):
        record = _mention_record(m, index, position.get(m.antecedent, -1))
        if m.start is None:
            rows.append(record + (None,))
            continue
        chunk = chunks[index]
        analysis = context.analyze(chunk)
        sentences = spans.setdefault(chunk.id, analysis.sentences)
        # Descriptions prefer a sentence that defines the entity ("X is a ...").
        if sentences and m.start - sentences[m.sentence][0] <= 12:
            if _DEFINITION.match(analysis.masked, m.end, sentences[m.sentence][1]):
                defining.add(i)
        chunk_home = homes.get(index)
        if chunk_home is None:
            chunk_home = homes[index] = _ChunkHome(chunk)
        # The sentence it offers as its entity's description: found here, not where it is linked.
        rows.append(record + (_description_candidate(record, i in defining, chunk, sentences, chunk_home),))
    sentence_index, squashed, found = {}, {}, []
    for index, candidates_of_chunk in enumerate(candidates):
        for c in candidates_of_chunk:
            src, dst = position.get(c.src), position.get(c.dst)
            if src is None or dst is None:
                continue  # not a mention of this document: it links to nothing
            sentence = squashed.get(c.sentence)
            if sentence is None:
                sentence = squashed[c.sentence] = _squash(c.sentence)
            number = sentence_index.setdefault(sentence, len(sentence_index))
            found.append((index, src, dst, c.rel, c.weight, c.proximity, number, c.extractor))
    return _Extracted(doc_id, rows, found, list(sentence_index), spans, defining, [])


# "a" or "an" and the word after; written from the article's letter, the word boundary
# before it behind, so that the engine skips ahead to candidates (as extraction._PRONOUN).
_INDEFINITE = re.compile(r"[Aa](?<!\w[Aa])n?\s+([a-z]+)\b")


def _counted_norms(chunks):
    """Norms of the nouns a document counts, with "a" or "an" ("a function", "an integer"):
    count nouns name things however abstract their dictionary senses; a mass noun
    ("maintenance", "independence") takes no "a"."""
    return frozenset(map(normalize, {w for chunk in chunks for w in _INDEFINITE.findall(chunk.text)}))


def _without_idle_abstracts(mentions, candidates, counted=frozenset()):
    """``mentions`` without the abstract nouns (``abstract`` in their features: "maintenance",
    "independence") that no typed relation candidate of the chunk joins: such a noun names
    no thing of its own, but "heavy rainfall causes flooding" needs the flooding, and one the
    document counts (``counted``: "a function") names things. They were mentions while the
    relations were found, so what lies between two mentions is the same."""
    typed = {id(m) for c in candidates if c.rel not in UNTYPED for m in (c.src, c.dst)}
    return [m for m in mentions if not m.features.get("abstract") or id(m) in typed or m.norm in counted]


def _leave_out(extracted, generic):
    """``extracted`` (what ``_extract_document`` found) without the mentions of words the
    corpus found generic (``refine.generic_norms``) and the relation candidates of those:
    they name no entity, and a whole run removes them, with their relations, after. Done
    here, not in the worker, so what a worker found serves again whatever is generic then
    (``_extract``'s ``found``)."""
    rows = extracted.mentions
    dropped = [i for i, r in enumerate(rows) if r[3] in GENERIC_MENTION_TYPES and r[10] in generic]
    if not dropped:
        return _Extracted(
            extracted.doc_id, rows, extracted.candidates, extracted.sentences, extracted.spans,
            set(extracted.defining), [],
        )
    gone = set(dropped)
    new = {old: i for i, old in enumerate(i for i in range(len(rows)) if i not in gone)}
    # Records are tuples (see _mention_record): the antecedent's index is field 12.
    mentions = [r[:12] + (new.get(r[12], -1),) + r[13:] for i, r in enumerate(rows) if i not in gone]
    numbers, sentences, candidates = {}, [], []
    for index, src, dst, rel, weight, proximity, number, extractor in extracted.candidates:
        src, dst = new.get(src), new.get(dst)
        if src is None or dst is None:
            continue
        if number not in numbers:
            numbers[number] = len(sentences)
            sentences.append(extracted.sentences[number])
        candidates.append((index, src, dst, rel, weight, proximity, numbers[number], extractor))
    return _Extracted(
        extracted.doc_id, mentions, candidates, sentences, extracted.spans,
        {new[i] for i in extracted.defining if i in new}, sorted({rows[i][10] for i in dropped}),
    )


def _prepare_document(db, extracted, chunks, content_hash, extracted_before, context, linker, embed, batch, known):
    """Link and embed one extracted document in memory; ``_write`` stores the result."""
    doc_id = extracted.doc_id

    # Forget what an earlier extraction of this document contributed. Its mention rows
    # are read once, here: ``_write`` compares them with the new ones.
    old_mentions = db.execute(
        f"select id, {MENTION_COLUMNS} from mentions where doc_id = ?", [doc_id]
    ).fetchall() if extracted_before else []
    old_counts = Counter(row[1] for row in old_mentions if row[1] is not None)
    for entity_id, count in old_counts.items():
        entity = linker.entities.get(entity_id)
        if entity is not None:
            entity.popularity -= count

    # Link, in text order; the subject first so pronouns can fall back on it.
    created = []
    counts = Counter()
    linked = []
    describes = {}  # entity id -> (rank, index in linked, candidate): the document's best
    for record in extracted.mentions:
        antecedent = record[_ANTECEDENT]
        mention = _Found(record, linked[antecedent] if 0 <= antecedent < len(linked) else None)
        linked.append(mention)
        entity, score, new = linker.link(mention)
        mention.entity = entity
        mention.link_score = score
        counts[entity.id] += 1
        if new:
            created.append(entity)
        candidate = record[_DESCRIBES]  # the sentence it offers as its entity's description
        if candidate is not None:
            _describe(entity, candidate, chunks[record[_CHUNK]])
            if candidate[0] > describes.get(entity.id, (-1,))[0]:
                describes[entity.id] = (candidate[0], len(linked) - 1, candidate)
    for entity_id, count in counts.items():
        linker.entities[entity_id].popularity += count
    for _, index, candidate in describes.values():
        linked[index].describes = candidate
    # Entities nothing mentions any more (the document changed) are forgotten now, so
    # later documents of the batch cannot link to them; ``_write`` deletes their rows.
    gone = [entity_id for entity_id in old_counts if entity_id not in counts]
    for entity_id in gone:
        entity = linker.entities.get(entity_id)
        if entity is not None and entity.popularity <= 0:
            linker.remove(entity)

    # Relations: candidates from every extractor, keyed by entity pair and relation.
    relations = {}
    sentences = extracted.sentences
    for index, src, dst, rel, weight, proximity, sentence, extractor in extracted.candidates:
        src, dst = linked[src], linked[dst]
        link = min(src.link_score or 1.0, dst.link_score or 1.0)
        _add_relation(
            relations, src.entity, dst.entity, rel, round(weight * proximity * link, 4),
            chunks[index].id, sentences[sentence], extractor,
        )
    first = {}
    for mention in linked:
        first.setdefault(mention.entity.id, mention)
    for entity in created:
        for other, score in linker.same_as_candidates(entity):
            mention = first[entity.id]
            link = min(mention.link_score or 1.0, 1.0)
            _add_relation(
                relations, entity, other, "same_as", round(score * link, 4),
                chunks[mention.record[_CHUNK]].id, _squash(mention.snippet), "linking",
            )

    # Embeddings outside the transaction, for new entities and changed descriptions.
    changed = sorted(set(created) | {m.entity for m in linked if m.entity.changed}, key=lambda e: e.id)
    reembed = [e for e in changed if e.new or e.reembed]
    entity_vectors = embed.submit(_encode, [entity_text(e) for e in reembed]) if reembed else None
    keys = sorted(relations)
    # Only a relation that is new gets a fact vector: skip those already stored or embedded
    # earlier in the batch (one that turns out new after all is embedded inside the
    # transaction, see ``_write``).
    stored = known.stored(db.conn, keys)
    embeddable = {k for k in keys if k[2] not in UNTYPED or context.settings.embed_related_facts}
    embedded = [k for k in keys if k in embeddable and k not in stored and k not in batch.fact_vectors]
    if embedded:
        job = embed.submit(_encode, [relations[k]["fact"] for k in embedded])
        batch.fact_vectors.update((k, functools.partial(_vector_row, job, row)) for row, k in enumerate(embedded))
    fact_vectors = {k: batch.fact_vectors[k] for k in keys if k in batch.fact_vectors}
    return _Prepared(
        extracted, chunks, linked, content_hash, extracted_before, created, changed, reembed,
        entity_vectors, relations, embeddable, fact_vectors, old_counts, counts, gone, old_mentions,
    )


@dataclass
class _Prepared:
    """One document's extraction, linked and embedded, waiting for its transaction."""

    extracted: _Extracted
    chunks: list
    linked: list  # a ``_Found`` per mention record, with its entity and link score
    content_hash: str
    extracted_before: bool
    created: list
    changed: list
    reembed: list
    entity_vectors: object
    relations: dict  # (src_id, dst_id, rel) -> entry, see ``_add_relation``
    embeddable: set
    fact_vectors: dict
    old_counts: Counter
    counts: Counter
    gone: list
    old_mentions: list  # ``(id, *row)`` of its earlier extraction's mentions (``MENTION_COLUMNS``)

    @property
    def mention_count(self):
        return len(self.linked)


class _Found:
    """A mention as linking sees it, made here from its worker's record."""

    __slots__ = (
        "surface", "type", "name", "norm", "snippet", "antecedent", "entity", "link_score", "record", "describes",
    )

    def __init__(self, record, antecedent):
        self.surface, self.type, self.snippet = record[_SURFACE], record[_TYPE], record[_SNIPPET]
        self.name, self.norm = record[_NAME], record[_NORM]
        self.antecedent, self.entity, self.link_score, self.record = antecedent, None, None, record
        self.describes = None  # (rank, sentence start, end) when it describes its entity best here


def _description_candidate(record, defining, chunk, spans, chunk_home):
    """``(rank, sentence start, sentence end)``: the sentence a mention offers as its
    entity's description, in its chunk, or None. ``defining``: whether the mention's
    sentence defines it (``_Extracted.defining``); ``spans``: the chunk's sentence spans;
    ``chunk_home``: the chunk's ``_ChunkHome``.
    It depends on what the worker found alone, so the worker finds it (``_extract_document``).

    The rank orders candidates: from the entity's own home (a document whose title names
    it, a section whose heading does in whole words, or the paragraph after an API
    signature such as ``class `CsrfViewMiddleware`:``) counts 4, a sentence that defines
    it ("X is a ...") 2, any sentence of the text that is not a heading, a pronoun's or
    the name alone 1; a glossary's entry ranks 6, below an API entry's paragraph. A
    heading that names it at home offers its section's first sentence of prose
    (``_section_lead``), as a plain sentence there (5); else the heading itself (4).
    ``refine.canonical_names`` takes the best over all current mentions, the first in
    path and text order among equals.
    """
    index = record[_SENTENCE]
    if not spans or index is None or index >= len(spans):
        return None
    if record[_TYPE] == "code" and index + 1 < len(spans) and _SIGNATURE.fullmatch(chunk.text, *spans[index]):
        index, home, defining = index + 1, True, True  # the paragraph an API entry opens
    elif record[_TYPE] in GENERIC_TYPES and _entry_term(chunk.text, record[_START], record[_END]):
        # a glossary's or definition list's entry, "decorator: A function ...": no running
        # text (an API entry's paragraph comes first), before any other sentence
        s_start, s_end = spans[index]
        return 4 + 2, s_start, s_end
    else:
        home = chunk_home.at_home(record[_NORM], record[_START])
        heading = chunk_home.heading_at(record[_START]) if home and record[_IN_HEADING] else None
        if heading is not None:  # what the heading names, its section's first sentence says
            lead = _section_lead(chunk.text, spans, heading[2], heading[3])
            return (4 + 1, *lead) if lead is not None else (4, heading[0], heading[1])
    s_start, s_end = spans[index]
    plain = not record[_IN_HEADING] and not record[_COREF]
    if plain:
        description, heading = _sentence_description(chunk.text, s_start, s_end)
        plain = not (heading or description == record[_NAME])  # as _weak judges it
    return 4 * home + 2 * defining + plain, s_start, s_end


def _section_lead(text, spans, after, stop, look=3):
    """``(start, end)`` of the first sentence of prose of the section between ``after`` (its
    heading's end) and ``stop``: one of six words or more that ends as a sentence or an
    introduction does, among the ``look`` sentences (``spans``) it opens with. Short lines
    before it are passed over (a "Source code: Lib/json.py" line, a "New in version 3.2."
    note); a list item or an API signature first means the section has no lead of its own
    (None), as does nothing but short lines."""
    first = bisect.bisect_left(spans, (after,))
    for start, end in spans[first : first + look]:
        if start >= stop or _NO_LEAD.match(text, start) or _SIGNATURE.fullmatch(text, start, end):
            return None
        description = _sentence_description(text, start, end)[0]
        if description and description[-1] in ".!?:" and len(description.split()) >= 6:
            return start, end
    return None


# A list item or a directive (".. function:: ceil(x)") where a section's lead would be.
_NO_LEAD = re.compile(r"\s*(?:[-*+]|\d+[.)]|\.\.)\s")


def _entry_term(text, start, end):
    """Whether the mention at ``start:end`` is the term of a definition list's or glossary's
    entry, as normalized HTML and Markdown write one: first on its line, a colon right
    after it, the definition after that ("decorator: A function returning ...",
    "**API key**: a secret ..."). Only prose terms: a code name's entry is an API
    signature (``_SIGNATURE``), and a line such as "``__path__``: ..." or "SIG*: ..."
    names something else than the name its words normalize to."""
    if start is None or end is None:
        return False
    line_start = text.rfind("\n", 0, start) + 1
    return not text[line_start:start].strip(" \t*") and _ENTRY_COLON.match(text, end) is not None


_ENTRY_COLON = re.compile(r"(?:\*\*)?:[ \t]+\S")


@functools.lru_cache(maxsize=4096)
def _sentence_description(text, start, end):
    """``(description_text of the sentence, whether it is a heading)``: the mentions of a
    sentence share them, so each sentence is read once."""
    description = description_text(text[start:end])
    return description, _weak(description, None)


def _describe(entity, candidate, chunk):
    """Keep the better of the entity's description and a mention's ``candidate`` in memory
    (for its vector while linking); the first among equals."""
    rank, s_start, s_end = candidate
    if entity.description is not None and rank <= entity.rank:
        return
    sentence = _sentence_description(chunk.text, s_start, s_end)[0]
    entity.rank = rank
    if entity.description != sentence:
        entity.description = sentence
        entity.changed = True
        entity.reembed = True
    if (entity.home, entity.defined) != (bool(rank & 4), bool(rank & 2)):
        entity.home, entity.defined = bool(rank & 4), bool(rank & 2)
        entity.changed = True


def _weak(description, name):
    """A description that is no sentence: none, the name alone, or a heading."""
    return description is None or description == name or description.startswith("#") or bool(
        _UNDERLINED.search(description)
    )


_UNDERLINED = re.compile(r"([=\-~^\"'`#*+])\1{2,}\s*$")
# An API entry's signature line: "class `CsrfViewMiddleware`:", "`csrf_exempt`(view):",
# an rST directive's argument "JSONDecoder(*, object_hook=None)".
_SIGNATURE = re.compile(r"\s*(?:[a-z]+\s+)?`?[\w.]+`?\s*(?:\([^\n]*\))?\s*:?\s*")


class _ChunkHome:
    """Where in one chunk entities are at home (``at_home``), read once per chunk: the
    names its title and the headings above it give, and the headings in its text."""

    __slots__ = ("exact", "above", "starts", "inside", "ends", "length")

    def __init__(self, chunk):
        self.exact, above = _home_names(chunk.title, chunk.headings or tuple(h for h in chunk.section.split(" > ") if h))
        self.above = above[-1] if above else None  # the names of the nearest heading above
        headings = _chunk_headings(chunk.text)
        self.starts = [start for start, _, _, _ in headings]
        self.inside = [names for _, names, _, _ in headings]
        self.ends = [(text_end, end) for _, _, text_end, end in headings]
        self.length = len(chunk.text)

    def at_home(self, norm, position=None):
        """Whether ``position`` of the chunk is at the home of the entity ``norm``: the
        document's title names it, or the heading it stands under does."""
        if norm in self.exact:
            return True
        if len(norm) < 4:
            return False
        if position is not None and self.starts and self.starts[0] <= position:
            return norm in self.inside[bisect.bisect_right(self.starts, position) - 1]
        return self.above is not None and norm in self.above

    def heading_at(self, position):
        """``(start, end of its text, end, start of the next)`` of the chunk's heading that
        holds ``position``, or None."""
        at = bisect.bisect_right(self.starts, position) - 1
        if at < 0 or self.ends[at][1] < position:
            return None
        following = self.starts[at + 1] if at + 1 < len(self.starts) else self.length
        return self.starts[at], *self.ends[at], following


@functools.lru_cache(maxsize=64)
def _chunk_headings(text):
    """``[(start, names of the heading, end of its text, end)]`` of the headings in ``text``,
    in order (an underlined heading's text ends before its underline)."""
    return [
        (m.start(), heading_names(m.group(1) or m.group(2)), m.end(1) if m.group(1) else m.end(2), m.end())
        for m in heading_lines(text)
    ]


@functools.lru_cache(maxsize=4096)
def _home_names(title, headings):
    """``({norm of the title's subject and the title}, (names of each heading, ...))``."""
    subject = subject_mention(title) if title else None
    exact = {normalize(title)} if title else set()
    if subject is not None:
        exact.add(subject.norm)
    return exact, tuple(heading_names(h) for h in headings)


def _add_relation(relations, src, dst, rel, confidence, chunk_id, sentence, extractor):
    """Add one piece of evidence for ``src rel dst``; its strongest sets the relation's."""
    if src is None or dst is None or src is dst:
        return
    if rel in SYMMETRIC and _canonical(src) > _canonical(dst):
        src, dst = dst, src  # one direction, whichever entity was linked first
    key = (src.id, dst.id, rel)
    entry = relations.get(key)
    if entry is None:
        entry = relations[key] = {
            "src": src, "dst": dst, "fact": fact_text(src.name, rel, dst.name),
            "chunk_id": chunk_id, "confidence": 0.0, "weight": 0.0, "evidence": {},
        }
    evidence_key = (chunk_id, sentence)
    previous = entry["evidence"].get(evidence_key)
    if previous is None or previous[0] < confidence:
        entry["evidence"][evidence_key] = (confidence, extractor)
    if confidence > entry["confidence"]:
        entry["confidence"] = confidence
        entry["chunk_id"] = chunk_id


def _canonical(entity):
    """Which way a symmetric relation points: from the entity first in this order."""
    return entity.norm, entity.type, entity.id


def _squash(sentence):
    """Evidence text: whitespace runs as one space, at most 1000 characters."""
    return " ".join(sentence.split())[:1000]


def _now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def _write(db, prepared, encode, known, counting=False, renamed=None):
    """Store one prepared document: call inside a transaction. Returns its relation ids,
    and the keys of every pair it gave evidence for (relations and held pairs).

    ``encode(texts)`` embeds the facts of relations that lost all their evidence in this
    very transaction (the document was extracted before), which preparing could not know.
    ``counting`` adds the evidence to ``relations.evidence_count`` here, for when its
    trigger is suspended. ``renamed`` (a set) gets the entities whose mentions here
    changed as naming reads them (``_naming_changes``).
    """
    from .embeddings import write_embeddings

    p = prepared
    extracted, relations = p.extracted, p.relations
    doc_id, keys = extracted.doc_id, sorted(relations)
    touched = keys  # every pair given evidence, made a relation or held (``_too_weak``)
    conn = db.conn
    old_relations = []
    old_mentions = old_held = ()
    if p.extracted_before:
        # Previous extraction of this document: its mentions and evidence go (through the
        # indexed chunk_id: evidence of chunks replaced since has gone with them).
        in_doc = "chunk_id in (select id from chunks where doc_id = ?)"
        old_relations = [
            r for (r,) in conn.execute(f"select distinct relation_id from relation_evidence where {in_doc}", [doc_id])
        ]
        conn.execute(f"delete from relation_evidence where {in_doc}", [doc_id])
        # Its held evidence too, compared below with what it holds now (``_changed_held``).
        old_held = conn.execute(f"select rowid, {HELD_COLUMNS} from held_evidence where doc_id = ?", [doc_id]).fetchall()
        conn.execute("delete from dropped_heads where doc_id = ?", [doc_id])
        conn.execute("delete from dropped_words where doc_id = ?", [doc_id])
        # Its mentions (read when it was prepared) are compared with the new ones below:
        # most are the same rows.
        old_mentions = p.old_mentions
    conn.executemany(
        "insert or ignore into dropped_words (doc_id, norm) values (?, ?)", [(doc_id, n) for n in extracted.left_out]
    )
    now = _now()
    popularity = Counter(p.counts)
    popularity.subtract(p.old_counts)
    conn.executemany(
        "insert into entities (id, type, name, norm, aliases, description, popularity, meta, created_at) "
        "values (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (e.id, e.type, e.name, e.norm, json.dumps(e.aliases), e.description, popularity.pop(e.id, 0),
             json.dumps({"defined": e.defined, "home": e.home}), now)
            for e in p.created
        ],
    )
    created = set(p.created)
    conn.executemany(
        "update entities set type = ?, aliases = ?, description = ?, meta = ? where id = ?",
        [
            (e.type, json.dumps(e.aliases), e.description, json.dumps({"defined": e.defined, "home": e.home}), e.id)
            for e in p.changed if e not in created
        ],
    )
    conn.executemany(
        "update entities set popularity = popularity + ? where id = ?",
        [(delta, entity_id) for entity_id, delta in sorted(popularity.items()) if delta],
    )
    # Entities nothing mentions any more (the document changed) are deleted.
    for entity_id in p.gone:
        left = conn.execute("select popularity from entities where id = ?", [entity_id]).fetchone()
        if left is not None and left[0] <= 0:
            conn.execute("delete from entities where id = ?", [entity_id])
    rows = _mention_rows(p)
    if renamed is not None:
        renamed.update(_naming_changes(old_mentions, rows, p.chunks))
    conn.executemany(
        f"insert into mentions ({MENTION_COLUMNS}) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        _changed_mentions(conn, old_mentions, rows),
    )
    if p.reembed:
        write_embeddings(db, "entities", [e.id for e in p.reembed], p.entity_vectors.result(), [entity_text(e) for e in p.reembed])
    # Upsert in bulk: existing relations gain weight, new ones are inserted in key order
    # (so they get the ids one upsert per key would have given them).
    existing = known.stored(conn, keys)
    weights = {key: round(sum(c for c, _ in relations[key]["evidence"].values()), 4) for key in keys}
    evidence = {key: len(relations[key]["evidence"]) if counting else 0 for key in keys}
    conn.executemany(
        "update relations set weight = weight + ?, confidence = max(confidence, ?), "
        "evidence_count = evidence_count + ? where id = ?",
        [(weights[key], relations[key]["confidence"], evidence[key], existing[key][0]) for key in keys if key in existing],
    )
    # Evidence refinement held back from a relation judged too weak (refine.py) rejoins it,
    # unless the two together are still too few sentences for one (``_too_weak``): then
    # the new evidence is held too, as the refinement would hold the relation made of it.
    held = _held_rows(conn, [key for key in keys if key not in existing and key[2] in HELD_RELATIONS])
    if old_held:  # the earlier extraction's held evidence is not there for it any more
        taken_back = {row[0] for row in old_held}
        held = [row for row in held if row[0] not in taken_back]
    held_by_key = {}
    for row in held:
        held_by_key.setdefault(row[1], []).append(row)
    weak = [
        key for key in keys
        if key not in existing and known.hold_weak and _too_weak(key, relations[key], held_by_key.get(key, ()))
    ]
    conn.executemany(
        f"insert into held_evidence ({HELD_COLUMNS}) values (?, ?, ?, ?, ?, ?, ?, ?)",
        _changed_held(conn, old_held, [
            (*key, chunk_id, doc_id, sentence, confidence, extractor)
            for key in weak
            for (chunk_id, sentence), (confidence, extractor) in sorted(relations[key]["evidence"].items())
        ]),
    )
    if weak:
        weak_keys = set(weak)
        keys = [key for key in keys if key not in weak_keys]
        held = [row for row in held if row[1] not in weak_keys]
    fresh = {key: known.add(key) for key in keys if key not in existing}
    conn.executemany(
        "insert into relations (id, src_id, dst_id, rel, weight, confidence, fact, chunk_id, evidence_count) "
        "values (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (relation_id, key[0], key[1], key[2], weights[key], relations[key]["confidence"], relations[key]["fact"],
             relations[key]["chunk_id"], evidence[key])
            for key, relation_id in fresh.items()
        ],
    )
    existing.update((key, (relation_id, 0)) for key, relation_id in fresh.items())
    if held:
        conn.executemany("delete from held_evidence where rowid = ?", [(row[0],) for row in held])
        if counting:
            conn.executemany(
                "update relations set evidence_count = evidence_count + 1 where id = ?",
                [(fresh[row[1]],) for row in held],
            )
    relation_ids = []
    new_facts = []
    evidence_rows = []
    for key in keys:
        relation_id, evidence_count = existing[key]
        relation_ids.append(relation_id)
        if evidence_count == 0 and key in p.embeddable:
            new_facts.append((relation_id, key, relations[key]["fact"]))
        for (chunk_id, sentence), (confidence, extractor) in sorted(relations[key]["evidence"].items()):
            evidence_rows.append((relation_id, chunk_id, doc_id, sentence, confidence, extractor))
    evidence_rows.extend((fresh[key], *row) for _, key, *row in held)
    conn.executemany(
        "insert into relation_evidence (relation_id, chunk_id, doc_id, sentence, confidence, extractor) "
        "values (?, ?, ?, ?, ?, ?)",
        evidence_rows,
    )
    if new_facts:
        fact_vectors = {key: vector() for key, vector in p.fact_vectors.items()}
        missing = [(key, fact) for _, key, fact in new_facts if key not in fact_vectors]
        if missing:
            fact_vectors.update(zip([k for k, _ in missing], encode([f for _, f in missing])))
        vectors = [fact_vectors[key] for _, key, _ in new_facts]
        write_embeddings(db, "facts", [r[0] for r in new_facts], vectors, [r[2] for r in new_facts])
    kept = set(relation_ids)
    _recompute(conn, [r for r in old_relations if r not in kept])
    conn.execute("update docs set extracted_hash = ? where id = ?", [p.content_hash, doc_id])
    return relation_ids, touched


def _too_weak(key, entry, held):
    """Whether a new co-occurrence pair, with the evidence ``held`` for it, is in fewer
    sentences than ``refine.score_cooccurrence`` keeps a relation of: one made of it would
    be held by this run's refinement (every pair a document writes is in its scope), so its
    evidence is held at once, not made a relation to be held. A later document's evidence
    for the pair finds it there, as it finds what refinement held."""
    return key[2] in HELD_RELATIONS and len(entry["evidence"]) + len(held) < COOCCURRENCE_MIN_SENTENCES


class _KnownRelations:
    """The relations this run has written, so that only older ones are looked up.

    Ids are given here, in key order within each document, as SQLite would give them
    (the linker gives entity ids the same way). Relations written by this run keep
    evidence until it ends: only a document's earlier extraction is ever taken back.
    """

    def __init__(self, db, hold_weak=False):
        # Co-occurrence pairs too weak for a relation go to held_evidence when written (``_too_weak``).
        self.hold_weak = hold_weak
        self.older = db.execute("select coalesce(max(id), 0) from relations").fetchone()[0]
        self.next_id = self.older + 1
        self.ids = {}  # (src_id, dst_id, rel) -> id, of the relations this run wrote

    def add(self, key):
        self.ids[key] = relation_id = self.next_id
        self.next_id += 1
        return relation_id

    def stored(self, conn, keys):
        """``{key: (id, evidence_count)}`` of the stored relations among ``keys``;
        ``evidence_count`` is only told apart as zero or not for this run's."""
        found = {key: (self.ids[key], 1) for key in keys if key in self.ids}
        if self.older:
            found.update(_relation_rows(conn, [key for key in keys if key not in found]))
        return found


def _relation_rows(conn, keys, size=256):
    """``{(src_id, dst_id, rel): (id, evidence_count)}`` of the stored relations among ``keys``."""
    found = {}
    for start in range(0, len(keys), size):
        batch = _padded(keys[start : start + size])
        marks = ", ".join("(?, ?, ?)" for _ in batch)
        params = [value for key in batch for value in key]
        for src_id, dst_id, rel, relation_id, evidence_count in conn.execute(
            f"select src_id, dst_id, rel, id, evidence_count from relations where (src_id, dst_id, rel) in (values {marks})",
            params,
        ):
            found[(src_id, dst_id, rel)] = (relation_id, evidence_count)
    return found


def _held_rows(conn, keys, size=256):
    """``[(rowid, key, chunk_id, doc_id, sentence, confidence, extractor)]``: held
    evidence of the relations ``keys``."""
    rows = []
    for start in range(0, len(keys), size):
        batch = _padded(keys[start : start + size])
        marks = ", ".join("(?, ?, ?)" for _ in batch)
        for rowid, src, dst, rel, *rest in conn.execute(
            "select rowid, src_id, dst_id, rel, chunk_id, doc_id, sentence, confidence, extractor "
            f"from held_evidence where (src_id, dst_id, rel) in (values {marks}) order by rowid",
            [value for key in batch for value in key],
        ):
            rows.append((rowid, (src, dst, rel), *rest))
    return rows


def _padded(batch):
    """``batch`` padded to a power of two by repeating its last item, for ``in (...)``: a
    few statement shapes, each prepared once, not one per length (``db.CACHED_STATEMENTS``)."""
    return batch + batch[-1:] * ((1 << (len(batch) - 1).bit_length()) - len(batch))


def _recompute(conn, relation_ids):
    """Weight and confidence of relations that lost evidence, from what remains."""
    for start in range(0, len(relation_ids), 512):
        batch = _padded(relation_ids[start : start + 512])
        marks = ", ".join("?" for _ in batch)
        conn.execute(
            f"update relations set weight = (select round(total(confidence), 4) from relation_evidence e "
            f"where e.relation_id = relations.id), confidence = coalesce((select max(confidence) "
            f"from relation_evidence e where e.relation_id = relations.id), confidence) "
            f"where id in ({marks})",
            batch,
        )


_FEATURES = {}


def _features_json(features):
    """Features as JSON; the few distinct small dicts are encoded once."""
    try:
        key = tuple(features.items())
        text = _FEATURES.get(key)
    except TypeError:  # a plugin's unhashable feature value
        return json.dumps(features, sort_keys=True)
    if text is None:
        text = json.dumps(features, sort_keys=True)
        if len(_FEATURES) < 10_000:
            _FEATURES[key] = text
    return text


_string = json.encoder.encode_basestring


@functools.lru_cache(maxsize=100_000)
def _meta_json(extractor, name, norm):
    """A mention's ``meta``; they recur (python3.11-doc has one distinct per five), so
    each is encoded once, and the same text pickles as a reference."""
    return f'{{"extractor": {_string(extractor)}, "name": {_string(name)}, "norm": {_string(norm)}}}'


# A mention record: its row's fields as found, then what linking and descriptions read.
(_START, _END, _SURFACE, _TYPE, _SCORE, _FEATURES_JSON, _SNIPPET, _META, _CHUNK, _NAME, _NORM,
 _SENTENCE, _ANTECEDENT, _COREF, _IN_HEADING, _DESCRIBES) = range(16)
# _DESCRIBES: the description candidate the mention's sentence offers its entity, ``(rank,
# sentence start, sentence end)`` or None (``_description_candidate``, in the worker).


def _mention_record(m, chunk_index, antecedent):
    """A mention as a plain tuple (fields above), made where the mention is found;
    ``antecedent`` is the index of the record it stands for, or -1."""
    features = m.features
    return (
        m.start,
        m.end,
        m.surface,
        m.type,
        round(m.score, 4),
        _features_json(features),
        m.snippet,
        _meta_json(m.extractor, m.name, m.norm),
        chunk_index,
        m.name,
        m.norm,
        m.sentence,
        antecedent,
        bool(features.get("coref")),
        bool(features.get("inHeading")),
    )


MENTION_COLUMNS = "entity_id, doc_id, chunk_id, span_start, span_end, surface, type, score, link_score, features, snippet, meta"


def _changed_mentions(conn, old, rows):
    """Of a document's new mention ``rows``, those to insert: the ``old`` ones (``(id,
    *row)``, its earlier extraction's) that no new row repeats are deleted, and the rest
    stay as they are. Linking a document again changes a few of its mentions: deleting
    and inserting every row was most of what writing it cost."""
    return _changed_rows(conn, "mentions", "id", old, rows)


HELD_COLUMNS = "src_id, dst_id, rel, chunk_id, doc_id, sentence, confidence, extractor"


def _changed_held(conn, old, rows):
    """Of a document's new ``held_evidence`` rows, those to insert; the ``old`` ones
    (``(rowid, *row)``) no new row repeats are deleted (see ``_changed_mentions``)."""
    return _changed_rows(conn, "held_evidence", "rowid", old, rows)


def _changed_rows(conn, table, key, old, rows):
    """Delete the ``old`` rows of ``table`` (``(key, *row)``) that no row of ``rows``
    repeats, one for one; return the ``rows`` not already stored."""
    if not old:
        return rows
    stored = {}
    for row_id, *row in old:
        stored.setdefault(tuple(row), []).append(row_id)
    new = []
    for row in rows:
        same = stored.get(row)
        if same:
            same.pop()
        else:
            new.append(row)
    conn.executemany(f"delete from {table} where {key} = ?", [(i,) for ids in stored.values() for i in ids])
    return new


def _mention_rows(prepared):
    """The document's ``mentions`` rows, in text order: fields from the worker, links from here."""
    doc_id = prepared.extracted.doc_id
    chunk_ids = [chunk.id for chunk in prepared.chunks]
    rows = []
    for m in prepared.linked:
        r = m.record
        meta = r[_META]
        if m.describes is not None:
            meta = f'{meta[:-1]}, "describes": [{m.describes[0]}, {m.describes[1]}, {m.describes[2]}]}}'
        rows.append((
            m.entity.id if m.entity is not None else None, doc_id, chunk_ids[r[_CHUNK]], r[_START], r[_END],
            r[_SURFACE], r[_TYPE], r[_SCORE], m.link_score, r[_FEATURES_JSON], r[_SNIPPET], meta,
        ))
    return rows
