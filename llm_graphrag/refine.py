"""Graph refinement after extraction: what only the whole corpus can decide.

Extraction sees one document at a time. Once a run has written its documents, this pass
uses corpus statistics to

- drop **generic entities**: single common words that identify nothing (a library
  stop-word list, or a document frequency too high to tell documents apart), and compound
  heads never mentioned on their own ("library" of "standard library");
- keep **co-occurrence** (``related_to``) edges only when the pair co-occurs, in at least
  two sentences, more than chance says (Dunning's log-likelihood ratio), storing that score
  in ``relations.meta``;
- name each entity by its **most frequent surface** in the text, the others becoming
  aliases, and rewrite the facts (and vectors) that quote a changed name.

Each step depends on the stored rows only, not on the order documents were extracted in.
"""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from functools import lru_cache

from .relations import fact_text

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
def stop_words():
    """English stop words of the ``stop-words`` library, in lower case."""
    from stop_words import get_stop_words

    return frozenset(w.lower() for w in get_stop_words("en"))


def common_word(word):
    """Whether ``word`` is a word of general English: one whole token of the bundled
    embedding model's vocabulary (BERT's, made from word counts of books and an
    encyclopedia). A name the corpus coined ("ingest-gateway", "tidepool") is no such
    word, however often the corpus uses it."""
    return word in _vocabulary()


@lru_cache(maxsize=1)
def _vocabulary():
    """The whole-word tokens of the bundled model's tokenizer."""
    from .embeddings import MODEL_DIR, load_static_model

    # Its path as a string, as the embedder loads it: the model loaded once, not twice.
    return frozenset(t for t in load_static_model(str(MODEL_DIR)).tokenizer.get_vocab() if t.isalpha())


def refine_graph(db, settings, doc_ids=None, entity_ids=None):
    """Run every refinement over ``db`` (inside the caller's transaction); returns counts.

    ``doc_ids`` limits it to the entities those documents mention (and their edges), for
    a small update of a large graph; ``entity_ids`` to those entities (ones that lost
    mentions when a document went); neither refines the whole graph.
    """
    _set_scope(db, doc_ids, entity_ids)
    try:
        result = {"generic_entities": drop_generic_entities(db)}
        mode = getattr(settings, "cooccurrence", "significant")
        result["cooccurrence_dropped"] = score_cooccurrence(db, drop=mode == "significant")
        result["renamed"] = canonical_names(db, embed_related=getattr(settings, "embed_related_facts", False))
    finally:
        db.conn.execute("drop table if exists temp.refine_scope")
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


def generic_entity_ids(db):
    """Entities that identify nothing: ids, in order.

    A one-word concept or term in the stop-word list, or a word of general English
    (``common_word``) in too many documents, any
    one-word entity whose name is a stop word ("None", "self"), and any entity all of whose
    mentions are heads of a longer phrase (a head is one word: only one-word names are read).
    """
    documents = db.execute("select count(*) from docs where extracted_hash is not null").fetchone()[0]
    frequent = max(GENERIC_MIN_DOCUMENTS, GENERIC_DOCUMENT_SHARE * documents)
    words = stop_words()
    found = []
    for entity_id, typ, name, df, mentions, heads in db.execute(
        """
        select e.id, e.type, e.name, count(distinct m.doc_id), count(m.id),
          sum(m.features like '%"head": true%')
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
        elif single and low in words:
            found.append(entity_id)
        elif single and typ in WORD_TYPES and name.islower() and df >= frequent and common_word(low):
            found.append(entity_id)
    return found


GENERIC_SETTING = "generic_words"  # norms found generic, kept so that they stay so


def generic_norms(db):
    """Norms of the one-word concepts and terms found generic so far: extraction leaves
    them out, so an update of a few documents finds them generic as a whole run did."""
    from .schema import get_setting

    return frozenset(get_setting(db, GENERIC_SETTING, []) or [])


def drop_generic_entities(db):
    """Delete generic entities with their mentions (relations and vectors go with them);
    the norms of generic words (not of bare heads) are kept for later runs."""
    from .schema import get_setting, set_setting

    ids = generic_entity_ids(db)
    if ids:
        words = set(get_setting(db, GENERIC_SETTING, []) or [])
        for batch in _batches(ids):
            words.update(
                norm for (norm,) in db.execute(
                    f"select e.norm from entities e where e.id in ({', '.join('?' for _ in batch)}) "
                    "and e.type in ('concept', 'term') and exists (select 1 from mentions m where "
                    "m.entity_id = e.id and m.features not like '%\"head\": true%')",
                    batch,
                )
            )
        set_setting(db, GENERIC_SETTING, sorted(words))
    for batch in _batches(ids):
        marks = ", ".join("?" for _ in batch)
        db.conn.execute(f"delete from mentions where entity_id in ({marks})", batch)
        # Their relations' evidence first, which takes the relations with it (trigger
        # relation_evidence_removed): what deleting the entities cascades to, in a third
        # less time than the cascade's.
        db.conn.execute(
            f"delete from relation_evidence where relation_id in (select id from relations "
            f"where src_id in ({marks}) or dst_id in ({marks}))",
            batch + batch,
        )
        db.conn.execute(f"delete from relations where src_id in ({marks}) or dst_id in ({marks})", batch + batch)
        db.conn.execute(f"delete from entities where id in ({marks})", batch)
    return len(ids)


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
    """About how many sentences the chunks hold: sentence ends (". ", "? ", "! ", a
    line break after a full stop) and one more per chunk, counted in SQL."""
    return db.execute(
        """
        select count(*) + coalesce(sum(
          length(content) - length(replace(replace(replace(replace(content, '. ', ''), '? ', ''), '! ', ''), '.' || char(10), ''))
        ), 0) / 2 from chunks
        """
    ).fetchone()[0]


def score_cooccurrence(db, drop=True):
    """Score every ``related_to`` edge by G² over sentences; drop those below
    ``COOCCURRENCE_MIN_LLR`` or seen in fewer than ``COOCCURRENCE_MIN_SENTENCES`` sentences
    (when ``drop``). Returns how many were dropped.

    Co-occurrence edges join mentions of one sentence, so sentences are the units: a pair
    is counted in the sentences its evidence holds, an entity in the sentences it is
    mentioned in (its mentions), out of all the corpus's sentences.
    """
    total = sentence_count(db)
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
        values = json.loads(meta) if meta else {}
        values.update(llr=round(g2, 3), pmi=round(math.log2(both * total_here / (a * b)), 3), kind="cooccurrence")
        scores.append((json.dumps(values, sort_keys=True), relation_id))
    db.conn.executemany("update relations set meta = ? where id = ?", scores)
    return _delete_relations(db, weak) if drop else 0


def _batches(items, size=500):
    """``items`` in slices of ``size``: few enough ``?`` marks for one statement."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _edge_table(db, edges):
    db.conn.execute("drop table if exists temp.cooccurrence_edges")
    db.conn.execute("create temp table cooccurrence_edges (id integer primary key, src_id, dst_id)")
    db.conn.executemany("insert into temp.cooccurrence_edges values (?, ?, ?)", [e[:3] for e in edges])


def _delete_relations(db, ids):
    for batch in _batches(ids):
        marks = ", ".join("?" for _ in batch)
        # Evidence first, taking the relations with it (see drop_generic_entities).
        db.conn.execute(f"delete from relation_evidence where relation_id in ({marks})", batch)
        db.conn.execute(f"delete from relations where id in ({marks})", batch)
    return len(ids)


# ---------------------------------------------------------------------------------------
# Canonical names


def canonical_names(db, embed_related=False):
    """Name every entity by its most frequent surface name; others become aliases.

    Names are counted over mentions with a span (pronouns that stand for the entity and
    titles do not count; an entity mentioned once keeps the name it was made with); ties keep the current name, else prefer lower case for a concept
    or term (capitals for a name or code), then the first in sorted order.
    Facts that quote a renamed entity are rewritten, and their vectors and the entity's
    recomputed. Returns how many entities were renamed.
    """
    counts = defaultdict(Counter)
    for entity_id, name, n in db.execute(
        """
        select entity_id, json_extract(meta, '$.name'), count(*) from mentions
        where entity_id in (
            select entity_id from temp.refine_scope join entities on id = entity_id where popularity > 1
          ) and span_start is not null
          and features not like '%"coref": true%'
        group by entity_id, json_extract(meta, '$.name')
        """
    ):
        if name:
            counts[entity_id][name] += n
    renamed, aliased = {}, {}
    for entity_id, typ, name, aliases in db.execute(
        "select id, type, name, aliases from entities where id in (select entity_id from temp.refine_scope)"
    ).fetchall():
        names = counts.get(entity_id)
        if not names:
            continue
        best = max(names.values())
        tied = sorted(n for n, c in names.items() if c == best)
        # A tie between "Frogs" and "frogs" is a sentence's first word (lowered) against
        # the word: a concept takes the lower case, a name or code the capitals.
        lower_first = typ in WORD_TYPES
        chosen = name if name in tied else min(tied, key=lambda n: (n[:1].islower() != lower_first, n))
        known = json.loads(aliases or "[]")
        before = list(known)
        for other in [name] + sorted(names, key=lambda n: (-names[n], n)):
            if other != chosen and other not in known and len(known) < 50:
                known.append(other)
        if chosen != name:
            renamed[entity_id] = (chosen, known)
        elif known != before:
            aliased[entity_id] = known
    db.conn.executemany(
        "update entities set aliases = ? where id = ?",
        [(json.dumps(aliases), entity_id) for entity_id, aliases in sorted(aliased.items())],
    )
    if not renamed:
        return 0
    db.conn.executemany(
        "update entities set name = ?, aliases = ? where id = ?",
        [(name, json.dumps(aliases), entity_id) for entity_id, (name, aliases) in sorted(renamed.items())],
    )
    _rewrite_facts(db, set(renamed), embed_related)
    _reembed_entities(db, sorted(renamed))
    return len(renamed)


def _rewrite_facts(db, entity_ids, embed_related):
    from .embeddings import embedder_for, write_embeddings

    names = {}
    rows = []
    ids = sorted(entity_ids)
    for batch in _batches(ids):
        marks = ", ".join("?" for _ in batch)
        rows.extend(
            db.execute(
                f"select id, src_id, dst_id, rel, fact from relations where src_id in ({marks}) "
                f"or dst_id in ({marks})",
                batch + batch,
            ).fetchall()
        )
    needed = {e for _, s, d, _, _ in rows for e in (s, d)}
    needed = sorted(needed)
    for batch in _batches(needed):
        names.update(db.execute(f"select id, name from entities where id in ({', '.join('?' for _ in batch)})", batch))
    changed = []
    for relation_id, src, dst, rel, fact in sorted(set(rows)):
        new = fact_text(names[src], rel, names[dst])
        if new != fact:
            changed.append((relation_id, rel, new))
    db.conn.executemany("update relations set fact = ? where id = ?", [(f, r) for r, _, f in changed])
    embedded = [(r, f) for r, rel, f in changed if rel != "related_to" or embed_related]
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
