"""Entity linking (seed 004 §7): blocking on ``norm``, fuzzy candidates, a weighted score.

The ``Linker`` holds every entity's norm, type and aliases in memory for one run, so
candidate lookups are dictionary and set operations. Which near-identical name a mention
links to is a function of the two names (``Linker.best_fuzzy``), so that the graph does not
depend on the order documents came in; vector candidates (an entity's vector, name and
description, near the mention's) are not looked for: that vector changes as mentions come.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

import numpy as np

from .extraction import GENERIC_TYPES, TYPE_PRIORITY, normalize, word_class

FUZZY_TYPES = frozenset({"name", "term", "PERSON", "ORG", "GPE", "PRODUCT"})
WEIGHTS = {"cosine": 0.45, "string": 0.25, "type": 0.15, "context": 0.10, "popularity": 0.05}
DEFAULT_THRESHOLD = 0.72
JACCARD_MIN = 0.6
COMMON_TOKEN_LIMIT = 200


@dataclass(eq=False)
class Entity:
    """A canonical entity as the linker sees it."""

    id: int
    type: str
    name: str
    norm: str
    aliases: list = field(default_factory=list)
    description: str | None = None
    popularity: int = 0
    defined: bool = False
    home: bool = False  # described from its own page or section (see extract._description_candidate)
    rank: int = -1  # the description's rank (see extract._description_candidate)
    new: bool = False
    changed: bool = False
    reembed: bool = False
    own: int = 0  # mentions of its own norm linked to it in this run (``Linker.is_root``)
    _tokens: tuple = field(default=None, init=False, repr=False)  # (key, its words, own name)

    @property
    def key(self):
        """The ``key_text`` of its ``own_name``, computed once (when the entity is indexed):
        what fuzzy linking compares the entity by, whatever name refinement gives it later."""
        if self._tokens is None:
            name = own_name(self)
            key = key_text(name)
            self._tokens = (key, frozenset(key.split()), name)
        return self._tokens[0]

    @property
    def own_name(self):
        """``own_name``, computed with ``key``."""
        self.key
        return self._tokens[2]

    @property
    def tokens(self):
        """The words of ``key``: what fuzzy candidates are found by."""
        self.key
        return self._tokens[1]

    def add_alias(self, surface):
        surface = " ".join(surface.split())
        if surface and surface not in self.aliases and len(self.aliases) < 50:
            self.aliases.append(surface)
            self.changed = True


def _tokens(text):
    return [t for t in normalize_tokens(text) if t]


def normalize_tokens(text):
    return [normalize(w) for w in text.replace("_", " ").replace(".", " ").split()]


def type_order(entity_type):
    """Where a type stands when a generic mention could link to entities of several:
    highest ``TYPE_PRIORITY`` first, then by name."""
    return -TYPE_PRIORITY.get(entity_type, 0), entity_type


def fuzzy_compatible(mention_type, entity_type):
    """Whether a mention may link to a near-identical name of an entity of this type: both
    names (or one a generic word), whatever named-entity type either was given, since
    that type may change as mentions come (a name seen as an organisation later)."""
    return mention_type in FUZZY_TYPES and entity_type in FUZZY_TYPES | GENERIC_TYPES


def compatible(mention_type, entity_type):
    """Generic mentions link to any type; specific ones only to their type or a generic one."""
    return (
        mention_type == entity_type
        or mention_type in GENERIC_TYPES
        or entity_type in GENERIC_TYPES
    )


def edit_distance_at_most_one(a, b):
    if a == b:
        return True
    la, lb = len(a), len(b)
    if abs(la - lb) > 1:
        return False
    if la == lb:
        return sum(x != y for x, y in zip(a, b)) == 1
    if la > lb:
        a, b = b, a
    i = 0
    while i < len(a) and a[i] == b[i]:
        i += 1
    return a[i:] == b[i + 1 :]


def string_similarity(a, b):
    """Similarity of two surfaces: normalized edit similarity or token Jaccard, the higher."""
    na, nb = normalize(a), normalize(b)
    if na == nb:
        return 1.0
    edit = 1.0 - _levenshtein(na, nb) / max(len(na), len(nb), 1)
    ta, tb = set(_tokens(a)), set(_tokens(b))
    jaccard = len(ta & tb) / len(ta | tb) if ta and tb else 0.0
    return max(edit, jaccard)


def _levenshtein(a, b):
    if len(a) < len(b):
        a, b = b, a
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def _digits(text):
    return "".join(c for c in text if c.isdigit())


def key_text(name):
    """A name as fuzzy linking compares it: its normalized words (``normalize_tokens``),
    so "Patch" and "patches", written in either case, are the same text."""
    return " ".join(_tokens(name))


def own_name(entity):
    """Of the names ``entity`` is known by (its name, its aliases), the first by
    ``key_text`` whose norm is the entity's own: not a name a near-identical mention
    linked to it brought (refinement may name the entity so), and the same, written in
    any case or number, whichever of its mentions came first."""
    own = [n for n in [entity.name, *entity.aliases] if n and normalize(n) == entity.norm]
    return min(own, key=lambda n: (key_text(n), n)) if own else entity.name


# Word classes (``extraction.word_class``) a fuller name may add to a name and still name
# the same thing: nouns, proper ones among them ("Python" Package Index), and function
# words and letters ("The", "D.": ``word_class`` puts both among its stop words).
NAME_WORD_CLASSES = frozenset({"noun", "ambiguous", "stop"})


def one_thing(a, b):
    """Whether two names sharing most of their words (``key_text`` words, in order) may be
    one thing's: the same head (last) word, with the same words or only nouns, letters or
    function words beside it ("Package Index" and "The Python Package Index", "Raymond
    Hettinger" and "Raymond D. Hettinger"). Another head names another thing ("string
    formatting" is no "formatted string", "asynchronous generator expression" no
    "asynchronous generator"), and an adjective a narrower kind ("standard format
    specifier", "new C APIs"). A function of the two names alone, as ``Linker.best_fuzzy``
    needs."""
    if not a or not b or a[-1] != b[-1]:
        return False
    return all(word_class(w) in NAME_WORD_CLASSES for w in set(a) ^ set(b))


def _common_noun_phrase(name):
    """Whether ``name`` is written as a common noun phrase, in lower case ("environment
    variable"): a fuller name with more words ("Python environment variables") names a
    narrower kind of it, not the same thing, as a fuller name of a name does ("Python
    Package Index" of "Package Index")."""
    return name.islower()


def _identifiers_differ(a, b, acronyms=True):
    """Whether the words in which names ``a`` and ``b`` differ hold an identifier
    (``FTP_TLS.prot_p``, ``T_OBJECT_EX``) or, with ``acronyms``, an acronym
    (``EPFNOSUPPORT``, "HTTPS"): one character apart, those name other things, where a
    word of prose so written is a misspelling ("Pyhton"). A plural "s" is no difference
    ("C APIs"). Without ``acronyms``, for names sharing most words: an acronym added
    ("HTTP Basic Authentication") may make a fuller name, another identifier may not."""
    pattern = _IDENTIFIER if acronyms else _CODE_WORD
    mine, theirs = a.split(), b.split()
    if len(mine) == len(theirs):
        pairs = [(x, y) for x, y in zip(mine, theirs) if x.lower() != y.lower()]
        return any(
            pattern.search(x) or pattern.search(y) for x, y in pairs if x + "s" != y and y + "s" != x
        )
    shared = {w.lower() for w in mine} & {w.lower() for w in theirs}
    return any(pattern.search(w) for w in mine + theirs if w.lower() not in shared)


# A word of code: joined by "_" or "." ("T_OBJECT", "FTP_TLS.prot_p"), or a capital after
# a small letter (CamelCase); with an acronym: two capitals and no small letter ("HTTPS",
# "EBCDIC-CP-HE").
_CODE_WORD = re.compile(r"\w[_.]\w|[a-z][A-Z]")
_IDENTIFIER = re.compile(_CODE_WORD.pattern + r"|^[^a-z]*[A-Z][^a-z]*[A-Z][^a-z]*$")


def fuzzy_order(norm):
    """Which of two near-identical names a mention of the other may link to: the one
    first in this order (the longer, the fuller name, then alphabetical), so two names
    never take each other's mentions, whichever came first."""
    return -len(norm), norm


class Linker:
    """Links mentions to entities, creating new ones below the threshold."""

    def __init__(self, entities=(), *, embedder=None, threshold=DEFAULT_THRESHOLD, next_id=1):
        self.embedder = embedder
        self.threshold = threshold
        self.entities = {}
        self.by_norm = {}
        self.deletes = {}
        self.by_token = {}
        self._key_vectors = {}  # key text -> its vector (``fuzzy_score``)
        self._scores = {}  # (key text, key text) -> ``fuzzy_score``
        # (norm, name) -> ids of the entities ``fuzzy_candidates`` finds for a mention of
        # that name, before the type test; and which of them read each deletion variant
        # and each word of the index, to forget when an entity there comes or goes.
        self._near, self._near_variants, self._near_words = {}, {}, {}
        self.own_elsewhere = None  # entity -> where the database holds mentions of its own norm
        self._rooted = {}  # entity id -> own_elsewhere's answer
        self.unrooted = set()  # ids of entities found not to be roots (``is_root``) in this run
        self.next_id = next_id
        for entity in entities:
            self._index(entity)
            self.next_id = max(self.next_id, entity.id + 1)

    @classmethod
    def from_db(cls, db, *, embedder=None, threshold=DEFAULT_THRESHOLD):
        """Load every active entity of ``db`` into memory."""
        rows = db.execute(
            "select id, type, name, norm, aliases, description, popularity, meta "
            "from entities where status = 'active'"
        )
        entities = []
        flags = {}  # meta -> (home, defined): a few texts, each read once
        for id, type, name, norm, aliases, description, popularity, meta in rows:
            found = flags.get(meta)
            if found is None:
                parsed = json.loads(meta) if meta else {}
                found = flags[meta] = bool(parsed.get("home")), bool(parsed.get("defined"))
            home, defined = found
            entities.append(
                Entity(
                    id, type, name, norm, json.loads(aliases or "[]"), description, popularity or 0,
                    defined, home, 4 * home + 2 * defined + 1 if description else -1,
                )
            )
        max_id = db.execute("select coalesce(max(id), 0) from entities").fetchone()[0]
        return cls(entities, embedder=embedder, threshold=threshold, next_id=max_id + 1)

    # -- the index ------------------------------------------------------------------------

    def _index(self, entity):
        self.entities[entity.id] = entity
        self.by_norm.setdefault(entity.norm, []).append(entity)
        if entity.type in FUZZY_TYPES:
            self._forget_near(entity)
            if len(entity.norm) >= 5:
                for variant in self._deletions(entity.norm):
                    self.deletes.setdefault(variant, set()).add(entity.id)
            for token in entity.tokens:
                self.by_token.setdefault(token, set()).add(entity.id)

    @staticmethod
    def _deletions(norm):
        return {norm} | {norm[:i] + norm[i + 1 :] for i in range(len(norm))}

    def remove(self, entity):
        """Forget ``entity`` (deleted because nothing mentions it any more)."""
        self._forget_near(entity)
        self.entities.pop(entity.id, None)
        same = self.by_norm.get(entity.norm, [])
        if entity in same:
            same.remove(entity)
        for variant in self._deletions(entity.norm):
            self.deletes.get(variant, set()).discard(entity.id)
        for token in entity.tokens:
            self.by_token.get(token, set()).discard(entity.id)

    def create(self, mention):
        entity = Entity(self.next_id, mention.type, mention.name, mention.norm, [], new=True)
        entity.add_alias(mention.surface)
        entity.changed = False
        self.next_id += 1
        self._index(entity)
        return entity

    # -- candidates -----------------------------------------------------------------------

    def exact_candidates(self, mention):
        return [e for e in self.by_norm.get(mention.norm, ()) if compatible(mention.type, e.type)]

    def fuzzy_candidates(self, mention):
        """Entities within edit distance 1 of the norm, or sharing ≥ 60% of the words,
        that may name the same thing (``one_thing``; a spelling variant of as many words
        may: "Pyhton Package Index").

        A mention of a name met before finds what it found then, until an entity comes
        into or leaves the part of the index it read (``_forget_near``); the type test,
        which reads what may change meanwhile (``_exact`` gives a generic entity a
        mention's type), is made each time."""
        if mention.type not in FUZZY_TYPES:
            return []
        key = (mention.norm, mention.name)
        near = self._near.get(key)
        if near is None:
            near = self._near[key] = self._near_ids(*key)
            if len(key[0]) >= 5:
                for variant in self._deletions(key[0]):
                    self._near_variants.setdefault(variant, set()).add(key)
            words = set(_tokens(key[1]))
            if len(words) > 1:
                for word in words:
                    self._near_words.setdefault(word, set()).add(key)
        result = []
        for entity_id in near:
            entity = self.entities[entity_id]
            if fuzzy_compatible(mention.type, entity.type):
                result.append(entity)
        return result

    def _forget_near(self, entity):
        """Forget what ``fuzzy_candidates`` found where ``entity`` is indexed: its norm's
        deletion variants and its words, which it comes into or leaves."""
        near = self._near
        if not near:  # nothing to forget (what stays listed in the two maps is harmless)
            return
        for variant in self._deletions(entity.norm):
            for key in self._near_variants.pop(variant, ()):
                near.pop(key, None)
        for word in entity.tokens:
            for key in self._near_words.pop(word, ()):
                near.pop(key, None)

    def _near_ids(self, norm, name):
        """``fuzzy_candidates`` of a mention ``name`` (of ``norm``), as entity ids, of any type."""
        found = set()
        words = _tokens(name)
        if len(norm) >= 5:
            for variant in self._deletions(norm):
                for entity_id in self.deletes.get(variant, ()):
                    entity = self.entities.get(entity_id)
                    if entity and edit_distance_at_most_one(norm, entity.norm):
                        other = entity.key.split()
                        if (len(other) == len(words) or one_thing(words, other)) and not _identifiers_differ(
                            name, entity.own_name
                        ):
                            found.add(entity_id)
        tokens = set(words)
        if len(tokens) > 1:
            counts = {}
            for token in tokens:
                ids = self.by_token.get(token, ())
                if len(ids) > COMMON_TOKEN_LIMIT:
                    continue
                for entity_id in ids:
                    counts[entity_id] = counts.get(entity_id, 0) + 1
            for entity_id, shared in counts.items():
                entity = self.entities[entity_id]
                other = entity.key.split()
                if shared / len(tokens | entity.tokens) >= JACCARD_MIN and one_thing(words, other) and not (
                    len(other) != len(words) and _common_noun_phrase(name if len(words) < len(other) else entity.own_name)
                ) and not _identifiers_differ(name, entity.own_name, acronyms=False):
                    found.add(entity_id)
        near = []
        for entity_id in found:
            entity = self.entities[entity_id]
            if entity.norm == norm:
                continue
            if _digits(entity.norm) != _digits(norm):
                continue  # uuid1 is not uuid4, RFC 7159 is not RFC 7158
            near.append(entity_id)
        return tuple(near)

    # -- scoring --------------------------------------------------------------------------

    def fuzzy_score(self, mention, entity):
        """Seed 004 §7's weights over what does not depend on the order mentions came in:
        0.45 cosine and 0.25 string similarity of the mention's ``key_text`` and the
        entity's ``key``, 0.15 the type prior (1: the types are compatible); the
        context and popularity terms, which read what the entity gathered so far, count 0."""
        mine, theirs = key_text(mention.name), entity.key
        score = self._scores.get((mine, theirs))
        if score is None:  # a function of the two texts: computed once a run
            cosine = 0.0
            if self.embedder is not None:
                a, b = self._key_vector(mine), self._key_vector(theirs)
                cosine = max(0.0, float(np.dot(a, b)))
            type_prior = 1.0  # ``fuzzy_compatible`` types; which of them each has may change
            score = self._scores[(mine, theirs)] = (
                WEIGHTS["cosine"] * cosine + WEIGHTS["string"] * string_similarity(mine, theirs)
                + WEIGHTS["type"] * type_prior
            )
        return score

    def _key_vector(self, text):
        vector = self._key_vectors.get(text)
        if vector is None:
            vector = self._key_vectors[text] = self.embedder.encode([text])[0]
        return vector

    def is_root(self, entity):
        """Whether ``entity`` has mentions of its own name (its norm): linked in this run,
        stored in documents this run does not link again, or stored only in documents it
        links again and not taken by a fuller name when they are (``own_elsewhere(entity)``
        tells which, when the linker reads a database: ``"elsewhere"``, ``"relinked"`` or
        None). An entity left with only the mentions near-identical names brought takes
        no more (``extract._orphaned`` has them linked again)."""
        if entity.own > 0 or self.own_elsewhere is None:
            return True
        rooted = self._rooted.get(entity.id)
        if rooted is None:
            where = None if entity.new else self.own_elsewhere(entity)
            rooted = where == "elsewhere"
            if where == "relinked":
                # Only fuller names are candidates of this probe: no cycle.
                probe = self.probe(entity)
                rooted = self.best_fuzzy(probe, self.fuzzy_candidates(probe)) is None
            self._rooted[entity.id] = rooted
        if not rooted:
            self.unrooted.add(entity.id)
        return rooted

    def absorbed_by(self, entity):
        """The entities whose own mentions link to ``entity`` now (``best_fuzzy``):
        near-identical names after it in ``fuzzy_order``, which came before it did."""
        near = set()
        for variant in self._deletions(entity.norm):
            near.update(self.deletes.get(variant, ()))
        # Those sharing enough words, counted as ``fuzzy_candidates`` counts them.
        shared = {}
        for token in entity.tokens:
            ids = self.by_token.get(token, ())
            if len(ids) <= COMMON_TOKEN_LIMIT:
                for other_id in ids:
                    shared[other_id] = shared.get(other_id, 0) + 1
        for other_id, count in shared.items():
            other = self.entities.get(other_id)
            if other is not None and len(other.tokens) > 1 and count / len(other.tokens | entity.tokens) >= JACCARD_MIN:
                near.add(other_id)
        found = []
        for other_id in sorted(near):
            other = self.entities.get(other_id)
            if other is None or other is entity or fuzzy_order(other.norm) <= fuzzy_order(entity.norm):
                continue
            probe = self.probe(other)
            best = self.best_fuzzy(probe, self.fuzzy_candidates(probe))
            if best is not None and best[0] is entity:
                found.append(other)
        return found

    def absorbed_by_each(self, entities):
        """``{entity id: absorbed_by(entity)}`` of each of ``entities``. When they are many
        (a bulk run made most of the entities), each entity's own best match (``best_fuzzy``
        of its ``probe``) is found once, instead of probing every near name of each: the
        same pairs, as ``best_fuzzy`` only picks a name before the probe's in ``fuzzy_order``."""
        if 2 * len(entities) < len(self.entities):
            return {entity.id: self.absorbed_by(entity) for entity in entities}
        wanted = {entity.id: entity for entity in entities}
        found = {entity_id: [] for entity_id in wanted}
        for other_id in sorted(self.entities):
            other = self.entities[other_id]
            if other.type not in FUZZY_TYPES:
                continue  # its probe has no fuzzy candidates
            probe = self.probe(other)
            best = self.best_fuzzy(probe, self.fuzzy_candidates(probe))
            if best is not None and wanted.get(best[0].id) is best[0] and self._looks_at(best[0], other):
                found[best[0].id].append(other)
        return found

    def _looks_at(self, entity, other):
        """Whether ``absorbed_by(entity)`` looks at ``other``: indexed under a deletion
        variant of ``entity``'s norm, or sharing enough of its words (counted alike)."""
        if any(other.id in self.deletes.get(variant, ()) for variant in self._deletions(entity.norm)):
            return True
        if len(other.tokens) <= 1:
            return False
        shared = 0
        for token in entity.tokens:
            ids = self.by_token.get(token, ())
            if len(ids) <= COMMON_TOKEN_LIMIT and other.id in ids:
                shared += 1
        return shared / len(other.tokens | entity.tokens) >= JACCARD_MIN

    def probe(self, entity):
        """A mention of ``entity``'s own name (``own_name``), to link as its mentions would be."""
        from .extraction import Mention

        name = entity.own_name
        return Mention(name, entity.type, None, None, name=name, norm=entity.norm)

    # -- linking --------------------------------------------------------------------------

    def link(self, mention):
        """Link one mention; returns ``(entity, score, created)``.

        A near-identical fuller name takes the mention first (``best_fuzzy``: "Package
        Index" goes to "Python Package Index" even when it has an entity of its own).
        Otherwise an entity of the same norm is the same entity (seed 003 dedups on
        normalized name and label): which one depends only on the entities of that norm
        (see ``_exact``), not on the order mentions came in; or a new entity is made.
        """
        if mention.antecedent is not None and mention.antecedent.entity is not None:
            return mention.antecedent.entity, round((mention.antecedent.link_score or 1.0) * 0.8, 4), False
        same_norm = self.by_norm.get(mention.norm)
        best = self.best_fuzzy(mention, self.fuzzy_candidates(mention))
        if best is not None:
            best[0].add_alias(mention.surface)
            return best[0], best[1], False
        entity = self._exact(mention, same_norm) if same_norm else None
        created = entity is None
        if created:
            entity = self.create(mention)  # a name, or a specific type new to this name
        entity.own += 1
        return entity, 1.0, created

    def best_fuzzy(self, mention, candidates):
        """``(entity, score)``: the candidate a mention links to, or None.

        Only a candidate first in ``fuzzy_order`` ("Python Package Index" for "Package
        Index") that has mentions of its own (``is_root``) is taken, when ``fuzzy_score``
        reaches the threshold: the best score, then the first in that order and by type.
        A function of the names in the corpus, not of which entity came first or what it
        gathered meanwhile, so a clean ingest and any other order link alike once every
        name is in (``extract._absorbing`` and ``extract._orphaned`` find documents linked
        before a name came or after one went)."""
        scored = []
        for entity in candidates:
            if fuzzy_order(entity.norm) < fuzzy_order(mention.norm):
                score = round(self.fuzzy_score(mention, entity), 4)
                if score >= self.threshold and self.is_root(entity):
                    scored.append((-score, fuzzy_order(entity.norm), entity.type, entity.id, entity))
        if not scored:
            return None
        best = min(scored)
        return best[4], -best[0]

    def _exact(self, mention, same_norm):
        """The entity of ``same_norm`` (the entities of the mention's norm) a mention
        links to, or None when its type needs an entity of its own.

        One of the mention's type, if any; for a generic mention (a concept, term or
        name) the one first in ``type_order``; for a specific mention a generic entity,
        which takes its type (a name seen as code); else none. So a name's generic
        mentions go with its specific entity of highest priority, whichever came first:
        ``extract._misplaced_generic`` finds documents linked before that entity came.
        """
        same_type = [e for e in same_norm if e.type == mention.type]
        if same_type:
            return min(same_type, key=lambda e: e.id)
        if mention.type in GENERIC_TYPES:
            return min(same_norm, key=lambda e: (type_order(e.type), e.id))
        generic = [e for e in same_norm if e.type in GENERIC_TYPES]
        if not generic:
            return None
        entity = min(generic, key=lambda e: e.id)
        entity.type = mention.type
        entity.changed = True
        return entity

    def same_as_candidates(self, entity):
        """Existing entities a new one probably duplicates: fuzzy match (``fuzzy_score``)
        at or above the threshold. Those after it in ``fuzzy_order`` are linked to it once
        their documents are linked again (``extract._absorbing``)."""
        from .extraction import Mention

        probe = Mention(entity.name, entity.type, None, None, name=entity.name, norm=entity.norm)
        found = []
        for other in sorted(self.fuzzy_candidates(probe), key=lambda e: (fuzzy_order(e.norm), e.type)):
            score = round(self.fuzzy_score(probe, other), 4)
            if other is not entity and score >= self.threshold:
                found.append((other, score))
        return found


def entity_text(entity):
    """What an entity's vector is made from: its name and first defining sentence."""
    if entity.description:
        return f"{entity.name}: {entity.description}"
    return entity.name
