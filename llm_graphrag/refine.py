"""Graph refinement after extraction: what only the whole corpus can decide.

Extraction sees one document at a time. Once a run has written its documents, this pass
uses corpus statistics to

- drop **generic entities**: single common words that identify nothing (a library
  stop-word list, or a document frequency too high to tell documents apart), and compound
  heads never mentioned on their own ("library" of "standard library");
- keep **co-occurrence** (``related_to``) edges only when the pair co-occurs, in at least
  two sentences, more than chance says (Dunning's log-likelihood ratio), storing that score
  in ``relations.meta``;
- write a **stated** edge's phrase, the words its sentences join the two with, into its
  ``meta`` and fact (``stated_facts``);
- name each entity by its **most frequent surface** in the text, the others becoming
  aliases, and rewrite the facts (and vectors) that quote a changed name.

Each step depends on the stored rows only, not on the order documents were extracted in,
and what it takes out can come back: weak co-occurrence evidence is held
(``held_evidence``), and the documents whose bare heads or generic words were left out are
kept (``dropped_heads``, ``dropped_words``), so that ``extract.py`` links them again when
the corpus changes its mind. Relations' weights, confidences and source chunks are made
again from their evidence (``relation_values``).
"""

from __future__ import annotations

import contextlib
import json
import math
import re
from collections import Counter, defaultdict
from functools import lru_cache

from .extraction import GENERIC_TYPES
from .linking import type_order
from .relations import STATED_PREFIX, UNTYPED, fact_text
from .vocabulary import common_word, stop_words

HELD_RELATIONS = ("related_to",)  # the relations refine.score_cooccurrence may hold back
# A word in more than this share of documents tells none of them apart...
GENERIC_DOCUMENT_SHARE = 0.05
# ...once it is in at least this many (a small corpus has no statistics to speak of).
GENERIC_MIN_DOCUMENTS = 5
# Log-likelihood ratio (G², one degree of freedom) a co-occurrence must reach: p < 0.001...
COOCCURRENCE_MIN_LLR = 10.83
# ...in at least this many sentences: one sentence is no evidence of an association, however
# rare the two words (G² of a single observation only measures how rare they are).
COOCCURRENCE_MIN_SENTENCES = 2
WORD_TYPES = ("concept", "term")


@lru_cache(maxsize=1)
def stop_norms():
    """The stop words and their norms ("excluding" is "exclud"): a generic word's norm
    that is one of these was found generic for being a stop word, whatever the corpus."""
    from .extraction import normalize

    words = stop_words()
    return words | {normalize(w) for w in words}


def refine_graph(db, settings, doc_ids=None, entity_ids=None, naming_ids=None):
    """Run every refinement over ``db`` (inside the caller's transaction); returns counts.

    ``doc_ids`` limits it to the entities those documents mention (and their edges), for
    a small update of a large graph; ``entity_ids`` to those entities (ones that lost
    mentions when a document went); neither refines the whole graph. ``naming_ids``
    narrows ``canonical_names`` further, to the entities whose row or mentions changed
    since they were last named (documents linked again: ``extract._naming_rows``).
    """
    _set_scope(db, doc_ids, entity_ids)
    try:
        result = {"generic_entities": drop_generic_entities(db)}
        mode = getattr(settings, "cooccurrence", "significant")
        # Both count the corpus's sentences, which nothing between them changes: once.
        total = sentence_count(db)
        result["cooccurrence_dropped"] = score_cooccurrence(db, drop=mode == "significant", total=total)
        result["cooccurrence_rescored"] = rescore_cooccurrence(db, drop=mode == "significant", total=total)
        result["stated_facts"] = stated_facts(db, embed_related=getattr(settings, "embed_related_facts", False))
        if naming_ids is not None:
            db.conn.execute("drop table if exists temp.naming_scope")
            db.conn.execute("create temp table naming_scope (entity_id integer primary key)")
            db.conn.executemany("insert into temp.naming_scope values (?)", [(e,) for e in naming_ids])
        result["renamed"] = canonical_names(
            db, embed_related=getattr(settings, "embed_related_facts", False),
            scope="naming_scope" if naming_ids is not None else "refine_scope",
        )
        relation_values(db)
    finally:
        db.conn.execute("drop table if exists temp.refine_scope")
        db.conn.execute("drop table if exists temp.naming_scope")
    return result


def _set_scope(db, doc_ids, entity_ids=None):
    db.conn.execute("drop table if exists temp.refine_scope")
    db.conn.execute("create temp table refine_scope (entity_id integer primary key)")
    if entity_ids is not None:
        db.conn.executemany("insert or ignore into temp.refine_scope values (?)", [(e,) for e in entity_ids])
        return
    if doc_ids is None:
        db.conn.execute("insert into temp.refine_scope select id from entities")
        return
    doc_ids = sorted(doc_ids)
    for batch in _batches(doc_ids):
        db.conn.execute(
            f"insert or ignore into temp.refine_scope select distinct entity_id from mentions "
            f"where entity_id is not null and doc_id in ({', '.join('?' for _ in batch)})",
            batch,
        )


# ---------------------------------------------------------------------------------------
# Generic entities


def generic_entity_ids(db, with_heads=False):
    """Entities that identify nothing: ids, in order.

    A one-word concept or term with a form in the stop-word list (``stop_norms``: "results"
    makes "result" generic, whichever of them names it now), a one-word concept, term or
    name written in lower case as a concept or term somewhere that is a word of general
    English (``common_word``) in too many documents, any one-word entity whose name or norm is a
    stop word ("None", "self"; not a norm of a letter or two, ``_short_word``), and any entity all of whose mentions are heads of a longer
    phrase (a head is one word: only one-word names are read).
    """
    documents = db.execute("select count(*) from docs where extracted_hash is not null").fetchone()[0]
    frequent = max(GENERIC_MIN_DOCUMENTS, GENERIC_DOCUMENT_SHARE * documents)
    words = stop_words()
    found, all_heads = [], []
    for entity_id, typ, name, norm, df, mentions, heads, word in db.execute(
        """
        select e.id, e.type, e.name, e.norm, count(distinct m.doc_id), count(m.id),
          sum(m.features like '%"head": true%'),
          min(case when m.type in ('concept', 'term') and m.surface = lower(m.surface)
                and m.features not like '%"coref": true%' then m.surface end)
        from entities e join mentions m on m.entity_id = e.id
        where e.status = 'active' and instr(e.name, ' ') = 0
          and e.id in (select entity_id from temp.refine_scope)
        group by e.id order by e.id
        """
    ):
        single = " " not in name
        low = name.lower()
        if heads == mentions:
            found.append(entity_id)
            all_heads.append(entity_id)
        elif single and (low in words or norm in words or typ in WORD_TYPES and norm in stop_norms()) and not _short_word(norm):
            # a concept is generic if any form of it is a stop word ("includ" of "including"),
            # whichever form names it now: no_longer_generic reads only the norm
            found.append(entity_id)
        elif single and typ in GENERIC_TYPES and word and df >= frequent and common_word(word):
            # Written in lower case as a word somewhere: judged by its mentions, not by the
            # type and name its first mention gave it (which depend on the order documents
            # were linked in, and which canonical_names only settles after this).
            found.append(entity_id)
    return (found, all_heads) if with_heads else found


def _short_word(norm):
    """A norm of one or two letters that is no English function word ("c", "io", "tk"):
    the stop-word list holds such letters and country codes as words, but "C", "I/O", "Tk"
    name a language, a kind of operation, a toolkit. Judged by the norm alone, not by the
    name the first mention gave the entity ("C" or "-c"), so the graph does not depend on
    the order documents came in; ``no_longer_generic`` reads the same."""
    from .extraction import STOPWORDS

    return len(norm) <= 2 and norm.isalpha() and norm not in STOPWORDS and norm not in _stop_stems()


@lru_cache(maxsize=1)
def _stop_stems():
    """Norms of longer stop words ("go" of "goes", "ad" of "added"): a verb, not a letter."""
    from .extraction import normalize

    return frozenset(normalize(w) for w in stop_words() if normalize(w) != w)


def _stop_norm(norm):
    """Whether ``norm`` is generic whatever the corpus: a stop word's, not a short word's."""
    return norm in stop_norms() and not _short_word(norm)


GENERIC_SETTING = "generic_words"  # norms found generic, kept so that they stay so
# Entities that lost mentions to a document about to be extracted again: that extraction
# refines them with its own (``extract._run``), instead of the write refining them first.
RELEASED_SETTING = "released_entities"


def defer_refinement(db, entity_ids):
    """Leave ``entity_ids`` to the next extraction's refinement (call inside a transaction)."""
    from .schema import get_setting, set_setting

    waiting = set(get_setting(db, RELEASED_SETTING, []) or [])
    set_setting(db, RELEASED_SETTING, sorted(waiting | set(entity_ids)))


def take_deferred(db):
    """The entities left to this refinement (``defer_refinement``), no longer left (call
    inside the transaction that refines them)."""
    from .schema import get_setting

    waiting = get_setting(db, RELEASED_SETTING, []) or []
    db.conn.execute("delete from graphrag_settings where key = ?", [RELEASED_SETTING])
    return waiting


def generic_norms(db):
    """Norms of the one-word concepts and terms found generic so far: extraction leaves
    them out, so an update of a few documents finds them generic as a whole run did."""
    from .schema import get_setting

    return frozenset(get_setting(db, GENERIC_SETTING, []) or [])


def drop_generic_entities(db):
    """Delete generic entities with their mentions (relations and vectors go with them);
    the norms of generic words (not of bare heads) are kept for later runs, and those of
    bare heads in ``dropped_heads`` with their documents (``extract._lost_heads``)."""
    from .schema import get_setting, set_setting

    ids, heads = generic_entity_ids(db, with_heads=True)
    for batch in _batches(heads):
        db.conn.execute(
            "insert or ignore into dropped_heads (doc_id, norm) select distinct m.doc_id, e.norm "
            f"from mentions m join entities e on e.id = m.entity_id where e.id in ({', '.join('?' for _ in batch)})",
            batch,
        )
    if ids:
        words = set(get_setting(db, GENERIC_SETTING, []) or [])
        for batch in _batches(ids):
            words.update(
                norm for (norm,) in db.execute(
                    f"select e.norm from entities e where e.id in ({', '.join('?' for _ in batch)}) "
                    "and e.type in ('concept', 'term', 'name') and exists (select 1 from mentions m where "
                    "m.entity_id = e.id and (m.type in ('concept', 'term') or e.type != 'name') and m.features not like '%\"head\": true%')",
                    batch,
                )
            )
        set_setting(db, GENERIC_SETTING, sorted(words))
        for batch in _batches(ids):
            db.conn.execute(
                "insert or ignore into dropped_words (doc_id, norm) select distinct m.doc_id, e.norm from mentions m "
                f"join entities e on e.id = m.entity_id where e.id in ({', '.join('?' for _ in batch)}) "
                "and e.norm in (select value from json_each(?))",
                [*batch, json.dumps(sorted(words))],
            )
    with _evidence_trigger_off(db, ids):
        for batch in _batches(ids):
            marks = ", ".join("?" for _ in batch)
            db.conn.execute(f"delete from mentions where entity_id in ({marks})", batch)
            # Their relations' evidence first, then the relations: what deleting the
            # entities cascades to, in a third less time than the cascade's.
            db.conn.execute(
                f"delete from relation_evidence where relation_id in (select id from relations "
                f"where src_id in ({marks}) or dst_id in ({marks}))",
                batch + batch,
            )
            db.conn.execute(f"delete from relations where src_id in ({marks}) or dst_id in ({marks})", batch + batch)
            db.conn.execute(f"delete from entities where id in ({marks})", batch)
    return len(ids)


def no_longer_generic(db):
    """Take out of the ``generic_words`` setting the words that are no longer generic now
    (call inside a transaction): found in too few documents for the corpus as it is (their
    documents in ``dropped_words``; stop words stay), or the name of an entity of a
    specific type. Returns the documents that left them out, to extract again."""
    from .schema import get_setting, set_setting

    words = get_setting(db, GENERIC_SETTING, []) or []
    if not words:
        return []
    documents = db.execute("select count(*) from docs where extracted_hash is not null").fetchone()[0]
    frequent = max(GENERIC_MIN_DOCUMENTS, GENERIC_DOCUMENT_SHARE * documents)
    stop = {w for w in words if _stop_norm(w)}  # a stop word's norm stays: its name made it generic
    df = dict(db.execute(
        "select norm, count(*) from dropped_words where norm in (select value from json_each(?)) group by norm",
        [json.dumps(words)],
    ).fetchall())
    # A word with an entity of a specific type (`value` as code) is that entity's name:
    # its generic mentions link to it, as they would have had it come first.
    named = {
        norm for norm, name in db.execute(
            "select norm, name from entities where norm in (select value from json_each(?)) "
            "and type not in ('concept', 'term')", [json.dumps(words)],
        ) if norm not in stop and not _stop_norm(name.lower()) and " " not in name
    }
    gone = [w for w in words if w in named or w not in stop and df.get(w, 0) < frequent]
    if not gone:
        return []
    set_setting(db, GENERIC_SETTING, [w for w in words if w not in gone])
    return [d for (d,) in db.execute(
        "select distinct doc_id from dropped_words where norm in (select value from json_each(?)) order by doc_id",
        [json.dumps(gone)],
    )]


# ---------------------------------------------------------------------------------------
# Co-occurrence significance


def log_likelihood_ratio(both, a, b, total):
    """Dunning's G² for a 2×2 table: ``both`` units hold the two, ``a`` and ``b`` each one,
    of ``total``. Positive when they co-occur more often than chance, negative when less."""
    cells = (
        (both, a * b / total),
        (a - both, a * (total - b) / total),
        (b - both, (total - a) * b / total),
        (total - a - b + both, (total - a) * (total - b) / total),
    )
    g2 = 2.0 * sum(o * math.log(o / e) for o, e in cells if o > 0 and e > 0)
    return g2 if both * total >= a * b else -g2


def sentence_count(db):
    """About how many sentences the chunks of extracted documents hold: sentence ends
    (". ", "? ", "! ", a line break after a full stop) and one more per chunk, counted in
    SQL. Documents being taken back (``ingest.release_extraction``) no longer count."""
    return db.execute(
        """
        select count(*) + coalesce(sum(
          length(content) - length(replace(replace(replace(replace(content, '. ', ''), '? ', ''), '! ', ''), '.' || char(10), ''))
        ), 0) / 2 from chunks
        where doc_id in (select id from docs where extracted_hash is not null)
        """
    ).fetchone()[0]


def score_cooccurrence(db, drop=True, total=None):
    """Score every ``related_to`` edge by G² over sentences; drop those below
    ``COOCCURRENCE_MIN_LLR`` or seen in fewer than ``COOCCURRENCE_MIN_SENTENCES`` sentences
    (when ``drop``). Returns how many were dropped.

    Co-occurrence edges join mentions of one sentence, so sentences are the units: a pair
    is counted in the sentences its evidence holds, an entity in the sentences it is
    mentioned in (its mentions), out of all the corpus's sentences (``total``: counted here
    unless given, see ``sentence_count``).
    """
    total = sentence_count(db) if total is None else total
    if not total:
        return 0
    edges = db.execute(
        "select id, src_id, dst_id, meta, evidence_count from relations where rel = 'related_to' and "
        "(src_id in (select entity_id from temp.refine_scope) or dst_id in (select entity_id from temp.refine_scope)) "
        "order by id"
    ).fetchall()
    if not edges:
        return 0
    weak = []
    if drop:  # too few sentences: no need to count anything else
        weak = [e[0] for e in edges if e[4] < COOCCURRENCE_MIN_SENTENCES]
        edges = [e for e in edges if e[4] >= COOCCURRENCE_MIN_SENTENCES]
    _edge_table(db, edges)
    mentioned = dict(
        db.execute(
            "select entity_id, count(*) from mentions where entity_id in "
            "(select src_id from temp.cooccurrence_edges union select dst_id from temp.cooccurrence_edges) "
            "group by entity_id"
        ).fetchall()
    )
    together = dict(
        db.execute(
            "select relation_id, count(*) from relation_evidence where relation_id in "
            "(select id from temp.cooccurrence_edges) group by relation_id"
        ).fetchall()
    )
    db.conn.execute("drop table temp.cooccurrence_edges")
    scores = []
    for relation_id, src, dst, meta, _ in edges:
        both = together.get(relation_id, 0)
        a, b = mentioned.get(src, 0), mentioned.get(dst, 0)
        if not both or not a or not b:
            weak.append(relation_id)
            continue
        a, b = max(a, both), max(b, both)
        total_here = max(total, a + b)
        g2 = log_likelihood_ratio(both, a, b, total_here)
        if drop and (g2 < COOCCURRENCE_MIN_LLR or both < COOCCURRENCE_MIN_SENTENCES):
            weak.append(relation_id)
            continue
        values = {"kind": "cooccurrence", "llr": round(g2, 3), "pmi": round(math.log2(both * total_here / (a * b)), 3)}
        text = _scored_meta(meta, values)
        if text != meta:
            scores.append((text, relation_id))
    db.conn.executemany("update relations set meta = ? where id = ?", scores)
    return _hold_relations(db, weak) if drop else 0


# A ``meta`` holding a score and nothing else, as ``_scored_meta`` writes it.
_SCORE_ONLY = re.compile(r'\{"kind": "cooccurrence", "llr": [^,{}"]+, "pmi": [^,{}"]+\}')


def _scored_meta(meta, values):
    """``meta`` with the score ``values`` (``_cooccurrence_values``) in, as
    ``json.dumps(..., sort_keys=True)`` writes it; one holding a score alone, or none
    (most of them), is written without decoding it."""
    if not meta or _SCORE_ONLY.fullmatch(meta):
        return f'{{"kind": "cooccurrence", "llr": {values["llr"]!r}, "pmi": {values["pmi"]!r}}}'
    return json.dumps({**json.loads(meta), **values}, sort_keys=True)


def rescore_cooccurrence(db, drop=True, total=None):
    """Score again the ``related_to`` edges outside the scope, and the evidence held back
    (``held_evidence``) from any, with the corpus's counts as they are now: a document
    added or removed anywhere changes how many sentences there are, so a pair may pass or
    fail ``COOCCURRENCE_MIN_LLR`` without being mentioned. Edges that fail are held, held
    pairs that pass become relations again (their entities join the scope, so that
    ``relation_values`` weighs them), and every edge's ``meta`` carries the score a whole
    run would give it. Counts come from the stored columns (``entities.popularity``,
    ``relations.evidence_count``), so this reads no mention. Returns how many changed.
    ``total``: the corpus's sentences, counted here unless given (``sentence_count``)."""
    from .schema import get_setting, set_setting

    total = sentence_count(db) if total is None else total
    if not total:
        return 0
    # Outside the scope only the number of sentences can have changed (the entities whose
    # mentions came or went, and so their pairs' counts, are in it): with the same number
    # as the last time, only held pairs of entities in scope are looked at.
    same_total = get_setting(db, SENTENCES_SETTING) == total
    set_setting(db, SENTENCES_SETTING, total)
    changed, weak = [], []
    for relation_id, meta, both, a, b in [] if same_total else db.execute(
        """
        select r.id, r.meta, r.evidence_count, s.popularity, d.popularity from relations r
        join entities s on s.id = r.src_id join entities d on d.id = r.dst_id
        where r.rel = 'related_to' and r.src_id not in (select entity_id from temp.refine_scope)
          and r.dst_id not in (select entity_id from temp.refine_scope)
        """
    ):
        values = _cooccurrence_values(both, a, b, total, drop)
        if values is None:
            if drop:
                weak.append(relation_id)
            continue
        # As json.dumps(..., sort_keys=True) writes the usual meta, without decoding it.
        text = f'{{"kind": "cooccurrence", "llr": {values["llr"]!r}, "pmi": {values["pmi"]!r}}}'
        if meta == text:
            continue
        if meta and not (meta.startswith('{"kind": "cooccurrence", "llr": ') and meta.count(":") == 3):
            text = json.dumps({**json.loads(meta), **values}, sort_keys=True)
        if text != meta:
            changed.append((text, relation_id))
    db.conn.executemany("update relations set meta = ? where id = ?", changed)
    revived = _revive_held(db, total, scoped=same_total) if drop else 0
    return len(changed) + (_hold_relations(db, weak) if weak else 0) + revived


def _cooccurrence_values(both, a, b, total, drop=True):
    """``{"llr", "pmi", "kind"}`` of a pair seen together in ``both`` sentences, ``a`` and
    ``b`` the sentences of each, as ``score_cooccurrence`` scores it; None if too weak
    (when ``drop``) or never seen."""
    if not both or not a or not b or drop and both < COOCCURRENCE_MIN_SENTENCES:
        return None
    a, b = max(a, both), max(b, both)
    total_here = max(total, a + b)
    g2 = log_likelihood_ratio(both, a, b, total_here)
    if drop and g2 < COOCCURRENCE_MIN_LLR:
        return None
    return {"kind": "cooccurrence", "llr": round(g2, 3), "pmi": round(math.log2(both * total_here / (a * b)), 3)}


SENTENCES_SETTING = "cooccurrence_sentences"  # sentence_count when rescore_cooccurrence last ran


def _revive_held(db, total, scoped=False):
    """Held co-occurrence evidence whose pair now passes becomes a relation again, with
    the fact a whole run writes; returns how many. ``scoped``: only pairs of an entity
    in scope."""
    from .schema import EVIDENCE_TRIGGER, has_trigger

    revive = []
    # Pairs held in fewer sentences than a relation needs cannot pass: most are, and
    # leaving them to the index keeps this to a fraction of a second on python3.11-doc.
    for src, dst, rel, both, a, b, src_name, dst_name in db.execute(
        """
        select g.src_id, g.dst_id, g.rel, g.n, s.popularity, d.popularity, s.name, d.name from (
          select src_id, dst_id, rel, count(*) as n from held_evidence
          where rel in (select value from json_each(?)) and (not ? or src_id in (select entity_id from
            temp.refine_scope) or dst_id in (select entity_id from temp.refine_scope))
          group by src_id, dst_id, rel having count(*) >= ?
        ) g join entities s on s.id = g.src_id join entities d on d.id = g.dst_id
        order by g.src_id, g.dst_id, g.rel
        """,
        [json.dumps(HELD_RELATIONS), scoped, COOCCURRENCE_MIN_SENTENCES],
    ).fetchall():
        values = _cooccurrence_values(both, a, b, total)
        if values is not None:
            revive.append((src, dst, rel, json.dumps(values, sort_keys=True), fact_text(src_name, rel, dst_name)))
    # A bulk run counts evidence itself while the trigger that does is out (extract.py).
    counting = bool(revive) and not has_trigger(db, EVIDENCE_TRIGGER)
    for src, dst, rel, meta, fact in revive:
        held = db.execute(
            "select rowid, chunk_id, doc_id, sentence, confidence, extractor from held_evidence "
            "where src_id = ? and dst_id = ? and rel = ? order by rowid",
            [src, dst, rel],
        ).fetchall()
        best = max(held, key=lambda h: h[4])
        relation_id = db.execute(
            "insert into relations (src_id, dst_id, rel, weight, confidence, fact, chunk_id, evidence_count, meta) "
            "values (?, ?, ?, 0, ?, ?, ?, ?, ?)",
            [src, dst, rel, best[4], fact, best[1], len(held) if counting else 0, meta],
        ).lastrowid
        db.conn.executemany(
            "insert into relation_evidence (relation_id, chunk_id, doc_id, sentence, confidence, extractor) "
            "values (?, ?, ?, ?, ?, ?)",
            [(relation_id, *h[1:]) for h in held],
        )
        db.conn.executemany("delete from held_evidence where rowid = ?", [(h[0],) for h in held])
        db.conn.executemany("insert or ignore into temp.refine_scope values (?)", [(src,), (dst,)])
    return len(revive)


def stated_facts(db, embed_related=False):
    """Each ``stated`` edge of the entities in scope gets the phrase its evidence states
    most often (``relations.stated_relations`` keeps it in the extractor, "stated: was
    born in"; ties go to the first in alphabetical order, whatever order documents came
    in) as ``meta`` ``{"kind": "stated", "phrase": ...}`` and in its fact ("Johannes
    Gutenberg developed printing press"). Returns how many changed."""
    phrases = defaultdict(Counter)
    rows = {}
    for relation_id, meta, fact, src_name, dst_name, extractor in db.execute(
        """
        select r.id, r.meta, r.fact, s.name, d.name, e.extractor from relations r
        join entities s on s.id = r.src_id join entities d on d.id = r.dst_id
        join relation_evidence e on e.relation_id = r.id
        where r.rel = 'stated' and (r.src_id in (select entity_id from temp.refine_scope)
          or r.dst_id in (select entity_id from temp.refine_scope))
        """
    ):
        rows[relation_id] = (meta, fact, src_name, dst_name)
        if extractor and extractor.startswith(STATED_PREFIX):
            phrases[relation_id][extractor[len(STATED_PREFIX) :]] += 1
    changed = []
    for relation_id, (meta, fact, src_name, dst_name) in sorted(rows.items()):
        if not phrases[relation_id]:
            continue
        phrase = min(phrases[relation_id].items(), key=lambda item: (-item[1], item[0]))[0]
        new_meta = json.dumps({"kind": "stated", "phrase": phrase}, sort_keys=True)
        new_fact = fact_text(src_name, "stated", dst_name, phrase)
        if (new_meta, new_fact) != (meta, fact):
            changed.append((new_meta, new_fact, relation_id))
    db.conn.executemany("update relations set meta = ?, fact = ? where id = ?", changed)
    if embed_related and changed:
        from .embeddings import embedder_for, write_embeddings

        vectors = embedder_for(db).encode([c[1] for c in changed])
        write_embeddings(db, "facts", [c[2] for c in changed], vectors, [c[1] for c in changed])
    return len(changed)


def _batches(items, size=500):
    """``items`` in slices of ``size``: few enough ``?`` marks for one statement."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _edge_table(db, edges):
    db.conn.execute("drop table if exists temp.cooccurrence_edges")
    db.conn.execute("create temp table cooccurrence_edges (id integer primary key, src_id, dst_id)")
    db.conn.executemany("insert into temp.cooccurrence_edges values (?, ?, ?)", [e[:3] for e in edges])


def _hold_relations(db, ids):
    """Delete the relations ``ids``, keeping their evidence in ``held_evidence``, where a
    later document's evidence for the same pair finds it (``extract._write``)."""
    for batch in _batches(ids):
        db.conn.execute(
            "insert into held_evidence (src_id, dst_id, rel, chunk_id, doc_id, sentence, confidence, extractor) "
            "select r.src_id, r.dst_id, r.rel, e.chunk_id, e.doc_id, e.sentence, e.confidence, e.extractor "
            f"from relation_evidence e join relations r on r.id = e.relation_id where r.id in ({', '.join('?' for _ in batch)})",
            batch,
        )
    return _delete_relations(db, ids)


def _delete_relations(db, ids):
    with _evidence_trigger_off(db, ids):
        for batch in _batches(ids):
            marks = ", ".join("?" for _ in batch)
            # Evidence first (see drop_generic_entities).
            db.conn.execute(f"delete from relation_evidence where relation_id in ({marks})", batch)
            db.conn.execute(f"delete from relations where id in ({marks})", batch)
    return len(ids)


EVIDENCE_REMOVED_TRIGGER = "relation_evidence_removed"


@contextlib.contextmanager
def _evidence_trigger_off(db, ids):
    """Delete relations with all their evidence without ``relation_evidence_removed``
    (call inside a transaction, which puts it back before it commits): it counts down
    and deletes, one evidence row at a time, relations deleted whole anyway. That was
    most of the time refinement took to drop 110,000 weak co-occurrence edges."""
    row = db.conn.execute(
        "select sql from sqlite_master where type = 'trigger' and name = ?", [EVIDENCE_REMOVED_TRIGGER]
    ).fetchone() if ids else None
    if row is None:
        yield
        return
    db.conn.execute(f'drop trigger "{EVIDENCE_REMOVED_TRIGGER}"')
    try:
        yield
    finally:
        db.conn.execute(row[0])


# ---------------------------------------------------------------------------------------
# Canonical names


def canonical_names(db, embed_related=False, scope="refine_scope"):
    """Name, alias and describe every entity from all its current mentions; returns how
    many entities were renamed.

    The name is the most frequent surface name over mentions with a span (pronouns that
    stand for the entity and titles do not count, unless only titles name it); ties prefer lower case for a concept or
    term (capitals for a name or code), then the first in sorted order. Aliases are the
    names and surfaces of those mentions, most frequent first. The description is the best
    candidate sentence a document offered (``extract._description_candidate``: from the
    entity's home, defining it, plain text), the first in path order among equals. Each is
    a function of the mentions stored, whatever order documents were linked in. Facts that
    quote a renamed entity are rewritten, and their vectors and the entity's recomputed.
    ``scope``: the temporary table of the entities to name.
    """
    counts = defaultdict(_Tally)
    surfaces = defaultdict(_Tally)
    titled = defaultdict(_Tally)  # the same, of mentions with no span (a title's subject)
    own = defaultdict(_Tally)  # (spanned, name) of mentions of the entity's own norm
    # An entity's type: its own if a mention has it, else (a generic entity, or one whose
    # mentions of its type went) the first of its mentions' types in linking.type_order.
    mention_types = {}
    # Names and surfaces from the mentions with a span, types from all: one pass for both.
    for entity_id, typ, name, surface, n, spanned, of_own in db.execute(
        f"""
        select m.entity_id, m.type, json_extract(m.meta, '$.name'), m.surface, count(*),
          m.span_start is not null, json_extract(m.meta, '$.norm') = e.norm
        from mentions m join entities e on e.id = m.entity_id
        where m.entity_id in (select entity_id from temp.{scope})
          and m.features not like '%"coref": true%'
        group by 1, 2, 3, 4, 6, 7
        """
    ):
        types = mention_types.setdefault(entity_id, [])
        if typ not in types:
            types.append(typ)
        if name and of_own:
            own[entity_id][(spanned, name)] += n
        if not spanned:
            if name:
                titled[entity_id][name] += n
            continue
        if name:
            counts[entity_id][name] += n
            surfaces[entity_id][name] += n
        surface = " ".join((surface or "").split())
        if surface and surface != name:
            surfaces[entity_id][surface] += n
    described = _best_descriptions(db, scope)
    renamed, changed, retyped = {}, [], []
    metas = {}  # (meta, flags) -> the meta written
    for entity_id, typ, name, aliases, description, meta in db.execute(
        "select id, type, name, aliases, description, meta from entities "
        f"where id in (select entity_id from temp.{scope})"
    ).fetchall():
        # Titles name an entity no sentence mentions: not the name its first mention gave it.
        # An entity whose own name (its norm) only a title gives is named by the title, not
        # by a near-identical name linked to it (linking.fuzzy_order): "Multi-Version/
        # Multi-Cluster PostgreSQL architecture", not the heading "Multi-Version/Multi-
        # Cluster PostgreSQL".
        mine = own.get(entity_id)
        if mine and not any(spanned for spanned, _ in mine):
            names = Counter({n: c for (_, n), c in mine.items()})
        else:
            names = counts.get(entity_id) or titled.get(entity_id)
        chosen, known, aliases_changed = name, None, False
        if names:
            best = max(names.values())
            tied = sorted(n for n, c in names.items() if c == best)
            # A tie between "Frogs" and "frogs" is a sentence's first word (lowered) against
            # the word: a concept takes the lower case, a name or code the capitals.
            types = mention_types.get(entity_id)
            final = min(types, key=type_order) if types and (typ in GENERIC_TYPES or typ not in types) else typ
            lower_first = final in WORD_TYPES  # the type it ends with, not the one it came with
            chosen = min(tied, key=lambda n: (n[:1].islower() != lower_first, n))
            seen = surfaces[entity_id] or names
            known = sorted(seen, key=lambda n: (-seen[n], n))[:MAX_ALIASES]
            # Decoded only when not written as this list is (json.dumps, as every writer does).
            aliases_changed = json.dumps(known) != (aliases or "[]") and known != json.loads(aliases or "[]")
        text, flags = described.get(entity_id, (description, None))
        meta_key = (meta, None if flags is None else tuple(flags.items()))
        if meta_key not in metas:  # a few distinct values: each made once
            metas[meta_key] = _described_meta(meta, flags)
        new_meta = metas[meta_key]
        if chosen != name or aliases_changed or text != description or new_meta != meta:
            known = json.loads(aliases or "[]") if known is None else known
            changed.append((chosen, json.dumps(known), text, new_meta, entity_id, chosen != name or text != description))
        if chosen != name:
            renamed[entity_id] = chosen
        types = mention_types.get(entity_id)
        if types and (typ in GENERIC_TYPES or typ not in types):
            kind = min(types, key=type_order)
            if kind != typ:
                retyped.append((kind, entity_id))
    db.conn.executemany(
        "update entities set name = ?, aliases = ?, description = ?, meta = ? where id = ?",
        [row[:5] for row in sorted(changed, key=lambda r: r[4])],
    )
    db.conn.executemany("update entities set type = ? where id = ?", retyped)
    if renamed:
        _rewrite_facts(db, set(renamed), embed_related)
    _reembed_entities(db, sorted(row[4] for row in changed if row[5]))
    return len(renamed)


MAX_ALIASES = 50


class _Tally(dict):
    """Counts by key, missing ones 0: a ``Counter`` without its constructor, which took
    a sixth of naming every entity (four per entity)."""

    def __missing__(self, key):
        return 0


def _described_meta(meta, flags):
    """An entity's ``meta`` with its description's ``flags`` (``_best_descriptions``) in."""
    values = json.loads(meta) if meta else {}
    if flags is not None:
        values = {**values, **flags}
    return json.dumps(values) if values or meta else meta


def _best_descriptions(db, scope="refine_scope"):
    """``{entity id: (sentence, {"defined": .., "home": ..})}``: the best description
    candidate among the mentions of the entities in scope (see ``canonical_names``)."""
    from .extraction import description_text

    # The best candidate of each entity picked here, not by a window function over them
    # all (sorting every candidate took most of the refinement's time); the chunks' text
    # is read for the best ones only. Each document marks one candidate per entity, and
    # paths are unique, so there are no ties: the same pick as ordering them in SQL.
    # Only the rank (the array's first number) is read of each candidate, the sentence's
    # bounds decoded for the best ones: decoding every candidate's JSON took a third of this.
    # A scope of most entities reads the mentions in the table's order (``not indexed``):
    # through the entity index every row was read out of order, and it took 2.6 times as long.
    mentions = "mentions m not indexed" if _most_entities(db, scope) else "mentions m"
    best = {}
    for entity_id, describes, path, seq, span_start, chunk_id in db.execute(
        f"""
        select m.entity_id, json_extract(m.meta, '$.describes'), d.path, c.seq, m.span_start, m.chunk_id
        from {mentions} join chunks c on c.id = m.chunk_id join docs d on d.id = m.doc_id
        where m.entity_id in (select entity_id from temp.{scope})
          and m.meta like '%"describes"%'
        """
    ):
        if describes is None:
            continue
        key = (-int(describes[1 : describes.index(",")]), path, seq, span_start)
        held = best.get(entity_id)
        if held is None or key < held[0]:
            best[entity_id] = (key, chunk_id, describes)
    contents = {}
    for batch in _batches(sorted({chunk_id for _, chunk_id, _ in best.values()})):
        contents.update(db.execute(
            f"select id, content from chunks where id in ({', '.join('?' for _ in batch)})", batch
        ))
    described = {}
    for entity_id, (key, chunk_id, describes) in best.items():
        _, start, end = json.loads(describes)
        described[entity_id] = (
            description_text(contents[chunk_id][start:end]),
            {"defined": bool(-key[0] & 2), "home": bool(-key[0] & 4)},
        )
    return described


def _most_entities(db, scope):
    """Whether the temporary table ``scope`` lists at least half of the entities."""
    (listed,) = db.conn.execute(f"select count(*) from temp.{scope}").fetchone()
    (entities,) = db.conn.execute("select count(*) from entities").fetchone()
    return 2 * listed >= entities > 0


def relation_values(db):
    """Weight, confidence and source chunk of the relations of entities in scope, from
    their evidence: the weight is the sum of its confidences (in ten-thousandths, summed
    as integers so that no order of adding changes it), the confidence the highest, the
    chunk that of the most confident evidence (the first in path order among equals)."""
    db.conn.execute(
        """
        update relations set
          weight = (select total(cast(round(e.confidence * 10000) as integer)) from relation_evidence e
                    where e.relation_id = relations.id) / 10000.0,
          confidence = (select max(e.confidence) from relation_evidence e where e.relation_id = relations.id),
          chunk_id = (select e.chunk_id from relation_evidence e join chunks c on c.id = e.chunk_id
                      join docs d on d.id = e.doc_id where e.relation_id = relations.id
                      order by e.confidence desc, d.path, c.seq, e.sentence limit 1)
        where (src_id in (select entity_id from temp.refine_scope) or dst_id in (select entity_id from temp.refine_scope))
          and exists (select 1 from relation_evidence e where e.relation_id = relations.id)
        """
    )


def _rewrite_facts(db, entity_ids, embed_related):
    from .embeddings import embedder_for, write_embeddings

    names = {}
    rows = []
    ids = sorted(entity_ids)
    for batch in _batches(ids):
        marks = ", ".join("?" for _ in batch)
        rows.extend(
            db.execute(
                f"select id, src_id, dst_id, rel, fact, meta from relations where src_id in ({marks}) "
                f"or dst_id in ({marks})",
                batch + batch,
            ).fetchall()
        )
    needed = {e for _, s, d, *_ in rows for e in (s, d)}
    needed = sorted(needed)
    for batch in _batches(needed):
        names.update(db.execute(f"select id, name from entities where id in ({', '.join('?' for _ in batch)})", batch))
    changed = []
    for relation_id, src, dst, rel, fact, meta in sorted(set(rows)):
        new = fact_text(names[src], rel, names[dst], json.loads(meta).get("phrase") if rel == "stated" and meta else None)
        if new != fact:
            changed.append((relation_id, rel, new))
    db.conn.executemany("update relations set fact = ? where id = ?", [(f, r) for r, _, f in changed])
    embedded = [(r, f) for r, rel, f in changed if rel not in UNTYPED or embed_related]
    if embedded:
        vectors = embedder_for(db).encode([f for _, f in embedded])
        write_embeddings(db, "facts", [r for r, _ in embedded], vectors, [f for _, f in embedded])


def _reembed_entities(db, entity_ids):
    from .embeddings import embedder_for, write_embeddings
    from .linking import Entity, entity_text

    rows = []
    for batch in _batches(entity_ids):
        rows.extend(
            db.execute(
                f"select id, type, name, norm, description from entities where id in ({', '.join('?' for _ in batch)})",
                batch,
            ).fetchall()
        )
    texts = [entity_text(Entity(i, t, n, nm, description=d)) for i, t, n, nm, d in rows]
    if texts:
        write_embeddings(db, "entities", [r[0] for r in rows], embedder_for(db).encode(texts), texts)
