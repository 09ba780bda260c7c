"""Relation extraction, pattern first (seed 004 §8): verb patterns, document structure and
weighted co-occurrence.

Extractors are functions ``extractor(chunk, mentions, context)`` returning
``RelationCandidate`` objects whose ends are mentions of that chunk; the engine turns them
into relations between the entities the mentions link to, with confidence
``pattern weight × proximity × link score``.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass

from .extraction import DETERMINERS, MODALS, STOPWORDS, _name_and_kind, _person_noun, heading_lines, lemma, word_class


def _last_word(name):
    """The last word of a mention's name ("" for a name of no word: markup alone)."""
    words = name.split()
    return words[-1] if words else ""


# The vocabulary: seed 004's, plus is_a/causes/produces for ordinary prose and
# related_to for co-occurrence. Phrases make each relation a readable fact.
REL_PHRASES = {
    "defines": "defines",
    "refers_to": "refers to",
    "part_of": "is part of",
    "uses": "uses",
    "depends_on": "depends on",
    "integrates_with": "integrates with",
    "configured_via": "is configured via",
    "precedes": "precedes",
    "owned_by": "is owned by",
    "located_in": "is located in",
    "cites": "cites",
    "same_as": "is the same as",
    "is_a": "is a",
    "causes": "causes",
    "produces": "produces",
    "related_to": "is related to",
    "stated": "is stated with",  # until refine.stated_facts puts the text's own phrase
}
SYMMETRIC = frozenset({"related_to", "same_as", "integrates_with"})
# Edges that name no relation type: co-occurrence, and what a clause states in its own
# words (``stated_relations``); their facts are embedded only with ``embed_related_facts``.
UNTYPED = frozenset({"related_to", "stated"})
STATED_PREFIX = "stated: "  # a stated edge's evidence extractor: "stated: was born in"


@dataclass(eq=False)
class RelationCandidate:
    """A relation between two mentions of one chunk, with the sentence that supports it."""

    src: object
    dst: object
    rel: str
    weight: float = 1.0
    proximity: float = 1.0
    sentence: str = ""
    extractor: str = ""

    @property
    def score(self):
        return self.weight * self.proximity


def fact_text(src_name, rel, dst_name, phrase=None):
    """``Basin uses riffle``: the readable fact stored and embedded with a relation;
    ``phrase`` the words of a stated edge ("Johannes Gutenberg developed printing press")."""
    if phrase:
        return f"{src_name} {phrase} {dst_name}"
    phrase = REL_PHRASES.get(rel, rel.replace("_", " "))
    if rel == "is_a" and dst_name[:1].lower() in "aeiou":
        phrase = "is an"
    return f"{src_name} {phrase} {dst_name}"


_BE = r"(?:is|are|was|were|be|been|being)"
_MAKER_NOT = r"(?:in|by|on|at|for|from|with|to|as|into|under|during|after|before|through|over|and|or|of|\w+ly\s+of)\b|,"
_ADV = r"(?:(?:\w+ly|now|also|still|often|later|then|once|first)\s+)?"  # "is now maintained by"
# (pattern, relation, weight, reversed): "reversed" means right side → left side.
_PATTERNS = [
    (rf"\b(?:{_BE}\s+{_ADV})?used\s+(?:by|in|within)\b", "uses", 0.8, True),
    (r"\b(?:uses|use|used(?!\s+(?:to|as)\s)|using|utili[sz](?:es|ing)|employs|is built (?:on|with)|powered by|calls)\b", "uses", 0.8, False),
    (rf"\b{_BE}\s+{_ADV}based\s+(?:up)?on\b", "uses", 0.7, False),
    # What a thing is made with it uses: "a toolkit implemented with Tcl", "written in C".
    (rf"\b(?:{_BE}\s+{_ADV})?(?:implemented|written)\s+(?:in|with|using|via|on\s+top\s+of)\b", "uses", 0.75, False),
    (rf"\b(?:{_BE}\s+{_ADV})?backed\s+by\b", "uses", 0.7, False),
    (rf"\b{_BE}\s+{_ADV}(?:required|needed)\s+by\b", "depends_on", 0.85, True),
    (r"\b(?:depends|depend|depending|relies|rely|relying)\s+(?:up)?on\b|\b(?:requires|require|needs)\b", "depends_on", 0.85, False),
    (rf"\b(?:{_BE}|remains?|becomes?|became)\s+(?:an?\s+|the\s+)?(?:part|component|member|piece|section)\s+of\b|\bbelongs?\s+to\b", "part_of", 0.8, False),
    (rf"\b{_BE}\s+{_ADV}(?:included|contained|bundled|shipped)(?:\s+by\s+default)?\s+(?:in|with|into)\b", "part_of", 0.75, False),
    (r"\bfound\s+in\b", "located_in", 0.75, False),
    (r"\b(?:appears?|listed)\s+in\b", "part_of", 0.7, False),
    (r"\b(?:contains|contain|includes|include|consists\s+of|comprises|bundles|bundle|ships\s+with|comes\s+with|come\s+with)\b", "part_of", 0.7, True),
    (r"\b(?:integrates|integrate|interoperates)\s+with\b", "integrates_with", 0.85, False),
    (rf"\b{_BE}\s+{_ADV}(?:compatible|interoperable)\s+with\b", "integrates_with", 0.7, False),
    # "Django supports WSGI", "supported by Django": between named things only (_SUPPORTS).
    (rf"\b(?:{_BE}\s+)?{_ADV}supported\s+{_ADV}by\b", "integrates_with", 0.7, True),
    (r"\b(?:supports|support)\b", "integrates_with", 0.7, False),
    (rf"\b{_BE}\s+{_ADV}configured\s+(?:via|through|with|by|using|in|from)\b", "configured_via", 0.85, False),
    # "is maintained, enhanced, and distributed freely by": participles may be coordinated.
    (rf"\b{_BE}\s+{_ADV}(?:owned|maintained|written|created|developed|authored|run|managed|operated|administered)(?:,?\s+(?:and\s+)?\w+ed)*,?\s+{_ADV}by\b", "owned_by", 0.8, False),
    (r"\b(?:owns|maintains|maintain)\b", "owned_by", 0.7, True),
    # A maker named by a relational noun: "Mary Shelley is the author of Frankenstein",
    # "Henry Dunant, the founder of the Red Cross," (the work is owned by its maker).
    (rf"(?:\b{_BE}\s+{_ADV}|,\s+)(?:the|an?)\s+(?:(?:original|principal|main|chief|sole)\s+)?(?:co-?)?(?:author|creator|founder|inventor|designer|architect|composer|writer|developer)\s+of\b", "owned_by", 0.75, True),
        # A maker named by a participle with no copula, a year between: "a theory proposed by
    # X", "founded in 1865 by X", "the novel written by X".
    (rf"\b(?:[Cc]o-)?(?:[Ff]ounded|[Pp]roposed|[Ii]nvented|[Dd]esigned|[Cc]omposed|[Pp]ainted|[Dd]irected|[Pp]ublished|[Aa]uthored|[Dd]eveloped|[Ww]ritten|[Ee]stablished)(?:\s+in\s+\d{{4}})?,?\s+{_ADV}by\b", "owned_by", 0.75, False),
    # The active voice, a maker's name before (_MAKERS): "Gutenberg developed a printing press";
    # a preposition after is a participle's ("developed in Mainz").
    (rf"\b(?:co-)?(?:founded|invented|designed|composed|painted|authored|wrote|developed)\b(?!\s+(?:{_MAKER_NOT}))", "owned_by", 0.7, True),
    (rf"\b(?:{_BE}\s+{_ADV})?(?:as\s+)?(?:originally\s+)?(?:defined|specified|described|documented|standardi[sz]ed)\s+(?:in|by)\b", "defines", 0.8, True),
    (r"\b(?:defines|define|specifies|specify)\b", "defines", 0.8, False),
    # What code provides it defines, when that is code too (_PROVIDES): "This module provides `X`".
    (r"\b(?:provides|provide|implements|implement|exposes|expose)\b", "defines", 0.7, False),
    (rf"\b{_BE}\s+(?:an?\s+)?(?:type|kind|form|sort|variety|example|series|group|set|collection|family|chain)s?\s+of\b", "is_a", 0.85, False),
    (rf"\b{_BE}\s+(?:an?\s+|the\s+)?(?:direct\s+)?(?:sub-?class(?:es)?|subtypes?|instances?|speciali[sz]ations?)\s+of\b|\b(?:{_BE}\s+)?(?:inherits|inherit|inheriting|derives|derived)\s+from\b|\bsubclasses\b", "is_a", 0.85, False),
    # What a thing is taken for it is: "is often described as the first novel", "is
    # considered one of the greatest plays", "is regarded as a classic".
    (rf"\b{_BE}\s+(?:(?:often|widely|generally|commonly|usually|sometimes|also|now|still)\s+|{_ADV})(?:(?:described|regarded|seen|viewed|recogni[sz]ed|classified|classed|counted)\s+as|considered(?:\s+(?:as|to\s+be))?)(?:\s+one\s+of)?(?:\s+(?:an?|the))?\b", "is_a", 0.6, False),
    # What a thing was declared or named it is: "the reef was declared a World Heritage Site".
    (rf"\b{_BE}\s+{_ADV}(?:declared|designated|named|voted|proclaimed|listed)\s+(?:as\s+)?(?:an?|the)\b", "is_a", 0.6, False),
    # What a thing is used as is one: "Reader objects can be used as iterators" (not "served
    # as its president": a role a person held, no kind).
    (rf"\b(?:{_BE}\s+{_ADV})?used\s+as\b(?:\s+(?:an?|the))?", "is_a", 0.55, False),
    # A superlative among a kind is one of it: "the emperor penguin is the largest of all
    # living penguins", "is the best known of the lemurs", "Honshu, the largest of the islands".
    (rf"(?:\b{_BE}\s+(?:(?:also|now|still)\s+)?|,\s+)the\s+(?:(?:most|least)\s+[a-z]+|[a-z]+est|best(?:\s+known)?)\s+of\s+(?:all\s+)?(?:(?:the|its|their|his|her)\s+)?", "is_a", 0.65, False),
    (rf"\b{_BE}\s+one\s+of\s+the\b", "is_a", 0.7, False),
    (rf"\b{_BE}\s+(?:(?:now|also|still|once|currently|today)\s+)?(?:an?|the)\b|\b(?:are|were)\b(?!\s+(?:not|also|now|still|used|kept|built|made|known|found|written|run|held|\w+ed|\w+ing|\w+ly)\b)", "is_a", 0.6, False),
    # An apposition: "Tk, a toolkit"; with "the", a superlative or an ordinal ("Everest, the
    # highest mountain on Earth"), where "the" names one of a kind rather than a list item.
    (r",\s+(?:an?|the(?=\s+(?:[a-z]+est|first|second|third|fourth|fifth|last|only)\s))\s+", "is_a", 0.55, False),
    (r"\bsuch\s+as\b|\b(?:including|like)\b", "is_a", 0.55, True),
    # The passive, with or without its copula: "waves caused by a landslide", "most tsunamis
    # are triggered by earthquakes".
    (rf"\b(?:{_BE}\s+{_ADV})?(?:caused|triggered)\s+{_ADV}by\b", "causes", 0.85, True),
    (r"\b(?:causes|cause|caused|leads?\s+to|led\s+to|results?\s+in|triggers)\b", "causes", 0.8, False),
    # Phrasal causatives: "helped bring about the Reformation", "gave rise to the theory".
    (r"\b(?:brings?|brought|bringing)\s+about\b|\b(?:gives?|gave|giving|given)\s+rise\s+to\b", "causes", 0.75, False),
    # The passive: "oxygen is produced by plants", "the file generated by `make`"; "created
    # by" / "built by" only with code as the maker (_CREATED): a person's is owned_by.
    (rf"\b(?:{_BE}\s+{_ADV})?(?:produced|generated|emitted|yielded|created|built)\s+{_ADV}by\b", "produces", 0.7, True),
    (r"\b(?:publishes|publish|produces|produce|produced|producing|generates|generate|generating|creates|create|releases|release|emits|emit|builds|build|yields|forms|convert\w*\s+\w+(?:\s+\w+)?\s+into)\b", "produces", 0.7, False),
    (rf"\b{_BE}\s+{_ADV}(?:located|situated|available|hosted)\s+(?:in|on|at|from)\b|\b{_BE}\s+{_ADV}based\s+(?:in|at)\b", "located_in", 0.8, False),
    (r"\b(?:located|situated)\s+(?:in|on|at)\b|\bhosted\s+(?:in|on|at|by)\b|\b(?:based|headquartered)\s+in\b", "located_in", 0.75, False),
    # Where a thing passes or an event happens: "the Danube flows through Vienna", "flows
    # eastward across Brazil" (a named place only), "the battle took place in Flanders".
    (r"\b(?:flows?|flowed|flowing|passes|passed|passing|runs|ran)\s+(?:\w+(?:ly|wards?)\s+)?(?:through|across)\b", "located_in", 0.7, False),
    (r"\b(?:takes?|took|taken|taking)\s+place\s+(?:in|at|on|inside|within)\b", "located_in", 0.75, False),
    # Where a story is set: "the play is set in Denmark", "a novel set in Victorian London"
    # (a named place only: "the value is set in settings.py" places nothing).
    (rf"\b(?:{_BE}\s+{_ADV})?set\s+(?:mainly\s+|mostly\s+|largely\s+)?(?:in|on)\b", "located_in", 0.7, False),
    # Where a thing reads its configuration from: "the gateway reads its configuration from X".
    (r"\b(?:reads?|loads?|takes?|gets?|reading|loading)\s+(?:its|their|the)\s+(?:configuration|config|settings|options)\s+from\b", "configured_via", 0.8, False),
    # What a place is home to is in it: "Tokyo is home to the Tokyo Stock Exchange".
    (rf"\b{_BE}\s+(?:also\s+)?home\s+to\b", "located_in", 0.75, True),
    # Where a thing is kept or lives: "the cache is stored in memory", "beavers live in rivers".
    (rf"\b{_BE}\s+{_ADV}(?:stored|kept|installed|placed|saved)\s+{_ADV}(?:in|on|at|under)\b|\b(?:lives?|resides?|occurs?)\s+(?:in|on|at)\b", "located_in", 0.7, False),
    # Where a place lies: "the town lies on the banks of the Rhine", "it lies in a valley".
    (r"\b(?:lies|lie|lay|lying)\s+(?:(?:just|mainly|mostly|entirely|partly|wholly)\s+)?(?:in|on|at|along|within)\b", "located_in", 0.7, False),
    # What a thing is made of is part of it: "water is made of hydrogen and oxygen".
    (rf"\b(?:{_BE}\s+)?(?:made\s+(?:up\s+)?|composed\s+|comprised\s+){_ADV}of\b", "part_of", 0.7, True),
    (r"\b(?:refers?\s+to|obsoletes|supersedes|replaces|extends)\b", "refers_to", 0.6, False),
    (r"\b(?:(?:also|often|commonly)\s+)?(?:known|called|abbreviated)\s+as\b|\baka\b", "same_as", 0.8, False),
    # A name's official form: "Peru, officially the Republic of Peru, is".
    (r",\s+(?:officially|formally)\s+(?:(?:known\s+as|called|named)\s+)?(?:the\s+)?", "same_as", 0.8, False),
]
_COMPILED = [(re.compile(p), rel, w, rev) for p, rel, w, rev in _PATTERNS]
# The words a trigger opens with: every pattern above starts with one of them (a whole
# word), with a word starting "convert" or with a comma. Add a new pattern's here.
TRIGGER_LEADS = frozenset(
    """is are was were be been being used uses use using utilises utilizes employs powered calls
    depends depend depending relies rely relying requires require needs belongs belong found
    contains contain includes include consists comprises bundles bundle ships comes come integrates
    integrate interoperates owns maintains maintain as originally defined co founded proposed invented designed composed painted
    directed published authored developed established wrote specified described
    documented standardised standardized defines define specifies specify such including like
    causes cause caused triggered leads lead led results result triggers produces produce produced
    generates generate generated publishes publish creates create created built based headquartered emitted yielded releases release emits emit builds build yields forms
    refers refer obsoletes supersedes replaces extends also often commonly known called
    bring brings brought bringing give gives gave giving given
    Co Founded Proposed Invented Designed Composed Painted Directed Published Authored Developed Written Established
    abbreviated aka inherits inherit inheriting derives derived subclasses remains remain
    reads read reading loads load loading gets get becomes become became flows flow flowed flowing passes passed passing runs ran takes take took taken taking lives live resides reside occurs occur set lies lie lay lying made composed comprised provides provide implements implement exposes expose supports support supported implemented written backed utilizing utilising producing generating located situated hosted appears appear listed""".split()
)


def _trie(words):
    """A regular expression matching any of ``words``, branching one letter at a time
    (the engine tries alternatives one by one: this way only a few per letter)."""
    if "" in words and len(words) == 1:
        return ""
    branches = []
    for first in sorted({w[0] for w in words if w}):
        rest = _trie({w[1:] for w in words if w and w[0] == first})
        branches.append(re.escape(first) + rest)
    pattern = "(?:" + "|".join(branches) + ")" if len(branches) > 1 else branches[0]
    return f"(?:{pattern})?" if "" in words else pattern


# All triggers in one expression, tried in the order above at each position. The guards
# make the scan cheap: the alternatives only run where a word start holds a lead word, or at
# a comma (which follows a word: "Tk, a toolkit"); first of all, the character there must
# be one a lead word or "convert" opens with, or the comma.
_TRIGGERS = re.compile(
    "(?=[" + re.escape("".join(sorted({w[0] for w in TRIGGER_LEADS} | {"c", ","}))) + "])"
    r"(?:(?<![A-Za-z0-9_])(?=" + _trie(TRIGGER_LEADS) + r"\b|convert)|(?=,))(?:"
    + "|".join(f"(?P<p{i}>{p})" for i, (p, _, _, _) in enumerate(_PATTERNS))
    + ")"
)
_RELATIVE_BEFORE = re.compile(r"\s*,?\s*(?:who|that)\s+(?:\w+ly\s+|also\s+|later\s+)?")
_ADVERB_BEFORE = re.compile(r"\s+(?:\w+ly\s+|also\s+|later\s+|jointly\s+)?")


def _makers(group, t_start, masked, s_start):
    """Who made what an active verb of making has after it ("Gutenberg developed a press"):
    the named mentions right before it and those coordinated with them ("A and B founded"),
    past an apposition ("X, a goldsmith from Mainz, developed") or through a relative
    pronoun ("an engineer who designed": the one the noun describes); [] when the mention
    before is no name or is a preposition's object."""
    k = bisect_right([m.end for m in group], t_start) - 1
    if k < 0:
        return []
    between = masked[group[k].end : t_start]
    if _ADVERB_BEFORE.fullmatch(between):
        subject = _subject(group, k, masked, s_start)
        makers = _left_list(group, subject, masked, s_start) if subject is not None else []
    elif _RELATIVE_BEFORE.fullmatch(between):
        subject = _subject(group, k, masked, s_start)
        makers = [_described(group, subject, masked)] if subject is not None else []
    elif _APPOSITION_END.match(between):
        subject = _apposition_subject(group, k, masked, s_start)
        makers = [subject] if subject is not None else []
    else:
        return []
    return [m for m in makers if m.type in _MAKERS]


# Words before a trigger that make it a noun ("for use by", "direct use of").
_NOUN_BEFORE = re.compile(r"\b(?:for|the|a|an|of|its|their|this|that|in|direct|no|any|some|own|every|each|common|typical)\s+$", re.I)
KIND_NOUNS = frozenset("module modules package packages library function class method object attribute file command program tool directory framework type".split())
# A modal before a bare "be" says what may, must or will be, not what a thing is: "it will
# usually be a big hindrance", "the value can be a list" state no kind.
_DERIVED = re.compile(r"\bderive[sd]?\s+from\b")
_THAT_BEFORE = re.compile(r"\bthat\s+$")
_ALLOWED = re.compile(r"\b(?:allow|allows|allowed|allowing|enable|enables|enabled|enabling|permit|permits|permitted)\s+(?:[\w’'-]+\s+){1,4}to\s+$")
_THIRD_PERSON = re.compile(r"[a-z]+s\b(?!['’])")
_MODAL_COPULA = re.compile(rf"\b(?:{'|'.join(sorted(MODALS))})\s+(?:not\s+)?(?:\w+ly\s+|also\s+)?$")
_MODAL_BEFORE = re.compile(r"\b(?:must|should|can|could|may|might|shall|will|would|to)\s+(?:\w+ly\s+|also\s+)?$")
_PROVIDES = re.compile(r"(?:provides?|implements?|exposes?)\b")  # not "implemented with": that is uses
_SUPPORTS = re.compile(r"\bsupport")
_SET_IN = re.compile(r"\bset\s")
_MAKER_NOUN = re.compile(r"(?:author|creator|founder|inventor|designer|architect|composer|writer|developer)\s+of\b")
_MADE = re.compile(r"(?:co-)?(?:founded|invented|designed|composed|painted|authored|wrote|developed)\b(?!\s+(?:" + _MAKER_NOT + "))")
_MAKERS = frozenset(("name", "PERSON", "ORG"))
_CREATED_BY = re.compile(r"\b(?:created|built|generated)\b")
_CREATED = re.compile(rf"(?:{_BE}\s+{_ADV})?(?:created|built)\b")
_NEGATIONS = frozenset("not never cannot n't n’t".split())
_NEGATION_WORDS = re.compile(r"[\w’']+")
_CONDITION = re.compile(r"\s*(?:[-*]\s+)?(?:[Ii]f|[Uu]nless|[Ss]hould|[Ww]hether)\s")
_NOT_ONLY = re.compile(r"\bnot (?:only|just|merely|simply)\b", re.I)


def _negated(text, trigger_length):
    """A negation among the three words before a trigger or inside it: "has not been
    included with", "is never used by", "doesn't require"."""
    before = _NEGATION_WORDS.findall(text[: len(text) - trigger_length])[-3:]
    inside = _NEGATION_WORDS.findall(text[len(text) - trigger_length :])
    if _NOT_ONLY.search(" ".join(before + inside)):
        return False  # "it not only remains part of": no denial
    return any(w.lower() in _NEGATIONS or w.lower().endswith(("n't", "n’t")) for w in before + inside)


# "See", "see also", "cf.": written by first letter, as _PRONOUN in extraction.py, so that
# the pattern opens with a class (the engine skips ahead to candidates).
_SEE = re.compile(r"[SsCc](?<!\w[SsCc])(?:(?<=[Ss])ee|(?<=[Cc])f\.)(?:\s+also)?\b")
# Coordination, with the trigger's preposition repeated: "specified by X and by Y".
_COORD = re.compile(r"^\s*(?:,\s*(?:and|or)?|and|or|as well as|&)\s*(?:(?:by|in|with|to|from|on|for|via)\s+)?(?:[Tt]he\s+|an?\s+|(?:over\s+|about\s+|some\s+)?\d[\d,]*\s+)?$")
_CLAUSE_BREAK = re.compile(r"[;:]|\b(?:which|who|that|because|although|while|whereas|but)\b")
_WORDS = re.compile(r"\w+")
MAX_GAP_WORDS = 5


def outer_mentions(mentions):
    """Mentions not nested in another one, in text order (heads and inner names dropped).
    A step holding other mentions is left out instead: it is a whole instruction, and what
    it names is said in it ("2. Watch `x` in the dashboard")."""
    steps = [m for m in mentions if m.type == "step" and m.start is not None]
    if steps:
        holders = {id(s) for s in steps if any(
            m is not s and m.start is not None and s.start <= m.start and m.end <= s.end and m.type != "step" for m in mentions
        )}
        mentions = [m for m in mentions if id(m) not in holders]
    result = []
    for m in sorted(mentions, key=lambda m: (m.start, -m.length)):
        if m.start is None:
            continue
        if result and m.end <= result[-1].end and m.start >= result[-1].start:
            continue
        result.append(m)
    return result


def _by_sentence(mentions):
    groups = {}
    for m in outer_mentions(mentions):
        groups.setdefault(m.sentence, []).append(m)
    return groups


def _gap_words(text):
    return len(_WORDS.findall(text))


def pattern_relations(chunk, mentions, context):
    """Verb and copula patterns between the nearest mentions around a trigger phrase."""
    analysis = context.analyze(chunk)
    masked = analysis.masked
    subject = context.cache.get("subject")
    found = []
    groups = _by_sentence(mentions)
    items = None  # documented items, found when a "see" needs them
    triggers = {}
    for index, group in groups.items():
        if len(group) < 2:
            continue
        # Only the stretch before the last mention can hold a trigger (before the first: a
        # participle opening the sentence, "The two supported by Django are X").
        for match in _TRIGGERS.finditer(masked, analysis.sentences[index][0], group[-1].start):
            _, rel, weight, reverse = _COMPILED[int(match.lastgroup[1:])]
            triggers.setdefault(index, []).append((match, rel, weight, reverse))
    for index, group in groups.items():
        s_start, s_end = analysis.sentences[index]
        sentence = chunk.text[s_start:s_end]
        used = set()
        # Outer mentions do not overlap, so their starts and ends are both sorted.
        starts = [m.start for m in group]
        ends = [m.end for m in group]
        for match, rel, weight, reverse in triggers.get(index, ()):
            t_start, t_end = match.span()
            if t_end > s_end:
                continue
            if any(a < t_end and t_start < b for a, b in used):
                continue
            inside = group[bisect_right(ends, t_start) : bisect_left(starts, t_end)]
            if any(m.type not in ("concept", "DATE") or m.start <= t_start or m.end > t_end for m in inside):
                continue  # the trigger is in a mention ("data interchange format"), not "is a subclass of"
            if _NOUN_BEFORE.search(masked[max(s_start, t_start - 12) : t_start]) and not (
                _THAT_BEFORE.search(masked, max(s_start, t_start - 6), t_start) and _THIRD_PERSON.match(match.group())
            ):
                continue  # "the use of", "that use"; but "that uses Y": a relative clause's verb
            if _ALLOWED.search(masked, max(s_start, t_start - 60), t_start):
                continue  # "will allow your site to use X": what a thing may do, no relation yet
            if _CONDITION.match(masked, s_start) and "," not in masked[s_start:t_start]:
                continue  # "Should your project require X, ...": a condition, no statement
            if _negated(masked[max(s_start, t_start - 30) : t_end], t_end - t_start):
                continue  # "has not been included with": what a sentence denies is no relation
            if rel == "owned_by" and _MADE.fullmatch(match.group()):
                makers = _makers(group, t_start, masked, s_start)
                rights = [r for r in _rights_of(group, t_end, masked, s_end, starts, s_start) if r[0].type not in ("version", "DATE")]
                if makers and rights:
                    used.add((t_start, t_end))
                    for right, right_gap in rights:
                        for maker in makers:
                            if maker.norm != right.norm:
                                proximity = 1.0 / (1.0 + 0.15 * right_gap)
                                found.append(RelationCandidate(right, maker, rel, weight, proximity, sentence, "patterns"))
                continue
            left, left_gap = _left_of(group, t_start, masked, ends, _finite(match.group()))
            inserted = False
            if rel == "causes" and left is not None:
                left = _event_agent(group, left, masked, t_start)
            if left is not None and not _finite(match.group()):
                if rel == "located_in" and left.type == "concept":
                    left = _phrase_head(group, left, masked)
                inserted = _COMMA_BEFORE.fullmatch(masked, left.end, t_start) is not None
                if inserted:
                    # "the largest reef in the world, located off Queensland": a participle
                    # after a comma is said of the noun a prepositional phrase hangs on
                    left = _subject(group, group.index(left), masked, s_start) or left
                left = _described(group, left, masked)
                if left is not None and _MEANS.match(match.group()):
                    left = _doer(group, left, masked, s_start)
            rights = _rights_of(group, t_end, masked, s_end, starts, s_start)
            if inserted and len(rights) > 1 and _COMMA_AND.fullmatch(masked, rights[0][0].end, rights[1][0].start):
                rights = rights[:1]  # "the Mona Lisa, painted by Leonardo, and the Venus de Milo": the comma closes the insertion
            if rel == "located_in" and " place " in match.group() and left is not group[0]:
                continue  # an event's place is said of the clause's subject, not of "tracking of X"
            if rel == "owned_by" and reverse and _MAKER_NOUN.search(match.group()):
                rights = [r for r in rights if r[0].type in _NAMED and r[0].name[:1].isupper() or r[0].type == "code"]  # "the author of many books": which, unnamed
            if rel == "located_in" and rights and (match.group().endswith(("through", "across")) or _SET_IN.search(match.group())):
                rights = [r for r in rights if r[0].type in ("name", "GPE", "LOC")]  # "passes through the middleware": no place
            if rel == "located_in" and rights:
                rights = [(_place_beyond(group, r, masked), gap) for r, gap in rights]
            complements = None
            if left is None and reverse and rights and not _finite(match.group()):
                # "the two supported by Django are pylibmc and pymemcache": a participle
                # opening its clause, then a copula; what it says is said of the complements.
                complements = _complements(group, rights[-1][0], masked, s_start, s_end, t_start)
                if complements:
                    left, left_gap = complements[0], 1
            if left is None and not reverse and rights and not _finite(match.group()) and not masked[s_start:t_start].strip():
                left, left_gap = _main_subject(group, rights[-1][0], masked, s_end), 1  # "Designed by X, the tower was"
            if left is None or not rights:
                continue
            if rel == "is_a" and match.group().startswith(",") and len(rights) > 1 and not any(
                _AND_OR.search(masked, a.end, b.start) for (a, _), (b, _) in zip(rights, rights[1:])
            ):
                rights = rights[:1]  # "Mercury, the smallest of the planets, orbits": the comma closes the apposition
            if rel == "is_a" and len(rights) > 1 and _shared_head(rights[0][0], rights[1][0], masked):
                rights = rights[1:]  # "the original build and distribution system": one system
            if rel != "is_a":
                rights = rights + _examples(group, rights[-1][0], masked, rights[0][1])
                rights = rights + [(m, rights[-1][1] + 1) for m in _colon_items(group, rights[-1][0], masked)]
            if rel == "defines" and _MODAL_BEFORE.search(masked, max(s_start, t_start - 16), t_start):
                continue  # "each client must specify the port": an instruction, no definition
            if _DERIVED.search(match.group()) and rights[0][0].type == "concept" and _last_word(rights[0][0].name).islower():
                continue  # "antibiotics derived from moulds": a substance's source, no subclass
            if _PROVIDES.match(match.group()):
                rights = [r for r in rights if r[0].type == "code"]
                if left.type != "code" or not rights:
                    continue
            if rel == "owned_by" and _CREATED_BY.search(match.group()) and all(r[0].type == "code" for r in rights):
                rel, reverse = "produces", True  # "tables are created by `read()`": code makes, owns nothing
            if rel == "produces" and reverse and _CREATED.match(match.group()):
                code = [r for r in rights if r[0].type == "code"]  # "created by Guido": no product
                if not code:
                    # A name that built a thing owns it: "built by the Suez Canal Company".
                    rights = [r for r in rights if r[0].type in _MAKERS and r[0].name[:1].isupper()]
                    if not rights:
                        continue
                    rel, reverse = "owned_by", False
                rights = code or rights
            if _SUPPORTS.search(match.group()) and not complements:
                # "it only supports synchronous code": support names a relation between
                # named things, not a property
                rights = [r for r in rights if r[0].type not in ("concept", "version", "DATE")]
                if left.type in ("concept", "version", "DATE") or not rights:
                    continue
            if match.group().startswith(",") and _SUBORDINATE.match(masked, s_start, t_start) and "," not in masked[s_start:t_start]:
                continue  # "If X needs Y, a list ...": the comma ends a clause, no apposition
            if match.group().startswith(",") and (
                _LIST_GOES_ON.match(masked, rights[0][0].end) or _NEXT_INDEFINITE.match(masked, rights[0][0].end)
                or _INDEFINITE_BEFORE.search(masked, max(s_start, left.start - 12), left.start)
            ):
                continue  # "X, a Y and a Z", "either a module, a class, a method": a list, no apposition
            if rel == "is_a" and weight <= 0.6 and (
                _MODAL_COPULA.search(masked, max(s_start, t_start - 24), t_start) and match.group().startswith("be ")
                or not _copula_ok(masked[t_end : rights[0][0].start])
                or _COPULA.match(match.group())
                and _AFTER_PREPOSITION.search(masked, max(s_start, left.start - 12), left.start)
            ):
                continue  # "the two supported by Django are X": Django is no subject (an apposition may be)
            used.add((t_start, t_end))
            lefts = complements or (_left_list(group, left, masked, s_start) if (
                reverse and rel != "is_a" or rel in ("causes", "uses", "produces", "part_of")
                or rel == "is_a" and _PLURAL_COPULA.match(match.group())  # "the violin, the viola and the cello are"
            ) and not _PARTICIPLE.match(match.group()) else [left])  # "music, and composers such as X": X is a composer only
            if rel == "located_in" and not complements and (
                _PLURAL_VERB.match(match.group()) or _PLURAL_BEFORE.search(masked, max(s_start, t_start - 16), t_start)
            ):
                # "penguins, seals and whales live in", "lions and leopards are found in" (no "of" object: "the cache of Basin and the index")
                lefts = [left] + [m for m in _left_list(group, left, masked, s_start)[1:] if not _AFTER_PREPOSITION.search(masked, max(s_start, m.start - 12), m.start)]
            if rel == "is_a" and _BARE_PLURAL_COPULA.fullmatch(match.group()) and _kind_before_names(left, rights):
                reverse = True  # "her best known novels are Emma and Persuasion": the names are novels
            if rel == "part_of" and reverse and _INCLUDE.match(match.group()) and _kind_before_names(left, rights):
                rel, reverse = "is_a", True  # "famous volcanoes include Mount Etna": Etna is a volcano, no part of one
            for right, right_gap in rights:
                proximity = 1.0 / (1.0 + 0.15 * (left_gap + right_gap))
                for l in lefts:
                    src, dst = (right, l) if reverse else (l, right)
                    if src.norm == dst.norm or _bare_kind(src):
                        continue  # "A module to generate X": which module, the sentence does not say
                    found.append(RelationCandidate(src, dst, rel, weight, proximity, sentence, "patterns"))
        found.extend(_acronyms(group, masked, sentence))
        found.extend(_titled_names(group, masked, sentence))
        found.extend(_kind_members(group, masked, sentence))
        if " and " in sentence:
            found.extend(_second_kinds(group, masked, sentence))
        if "his " in sentence.lower() or "her " in sentence.lower() or "their " in sentence.lower():
            found.extend(_works_of(group, masked, sentence, s_end))
        if ", " in sentence:
            found.extend(_possessed_names(group, masked, sentence))
        if "among" in sentence:
            found.extend(_among_them(group, masked, sentence, s_start, s_end))
        if " in " in sentence:
            found.extend(_place_in_place(group, masked, sentence))
            found.extend(_code_in_container(group, masked, sentence))
        if " in " in sentence or " on " in sentence or " near " in sentence or " of " in sentence:
            found.extend(_kind_in_place(group, masked, sentence))
        if ", " in sentence:
            found.extend(_place_comma_place(group, masked, sentence))
            found.extend(_inserted_places(group, masked, sentence))
        if ", where " in sentence:
            found.extend(_where_place(group, masked, sentence))
        if " of " in sentence:
            found.extend(_kind_of_name(group, masked, sentence))
            found.extend(_named_parts(group, masked, sentence))
        if " by " in sentence:
            found.extend(_work_by(group, masked, sentence))
        if " from " in sentence:
            found.extend(_noun_from_place(group, masked, sentence))
            if " by " in sentence:
                found.extend(_made_from_by(group, masked, sentence))
        if "capital" in sentence:
            found.extend(_capitals(group, masked, sentence))
        if "dd" in sentence or "ppend" in sentence or "nsert" in sentence or "emov" in sentence or "elet" in sentence:
            found.extend(_added_to(group, masked, sentence, s_start, s_end))
        if " other " in sentence:
            found.extend(_and_others(group, masked, sentence, s_start))
        if "option" in sentence or "setting" in sentence or "variable" in sentence or "parameter" in sentence or "flag" in sentence:
            found.extend(_option_sets(group, masked, sentence))
        if " ha" in sentence:
            found.extend(_has_members(group, masked, sentence))
        if ":" in sentence or _THERE_ARE.match(sentence):
            found.extend(_colon_lists(group, masked, sentence))
        if "he " in sentence:
            found.extend(_named_kinds(group, masked, sentence))
        for match in _SEE.finditer(masked, s_start, s_end):
            if items is None:
                items = _documented_items(chunk.text, mentions)
            # The citing thing: the item documented above ("class `X`:"), or the subject.
            k = bisect_left(items, (match.start(),)) - 1
            owner = items[k][1] if k >= 0 else subject
            if owner is None:
                continue
            for right, gap in _rights_of(group, match.end(), masked, s_end):
                if right.type in ("concept", "version", "DATE") or right.norm == owner.norm or right.name.lower() in KIND_NOUNS:
                    continue
                if right.features.get("cited") and k < 0:
                    continue  # a title in plain text: cited by the item above it only
                found.append(RelationCandidate(owner, right, "cites", 0.7, 1.0 / (1.0 + 0.15 * gap), sentence, "patterns"))
    if "\n" in chunk.text:
        found = _definitions(chunk, groups, analysis, found)
    context.cache["typed", chunk.id] = found  # what stated_relations leaves to these
    return found


# What may open a clause before a participle that has no noun of its own: "the two", "the only".
_BARE_OPENING = re.compile(r"(?:^|[;:]|\b(?:and|but|while|whereas)\b)\s*(?:(?:the|these|those|its|their)\s+)?(?:only\s+|main\s+|first\s+)?(?:one|two|three|four|five|several|many|most|some|ones?)?\s*$", re.I)
_COPULA_AFTER = re.compile(r"\s*(?:is|are|was|were)\b(?!\s+(?:not|never|also|now|still|used|\w+ed|\w+ing|\w+ly)\b)")


_CLAUSE_COMMA = re.compile(r"[^,;:.()]*,\s*(?:(?:the|this|that|its|his|her|their)\s+)?")


def _main_subject(group, last, masked, s_end):
    """The subject of the main clause after a participle clause that opens the sentence
    ("Designed by Gustave Eiffel and completed in 1889, it was built ..."): the mention
    right after the comma that closes it; None if another mention comes first."""
    comma = _CLAUSE_COMMA.match(masked, last.end, s_end)
    if comma is None:
        return None
    i = group.index(last) + 1
    while i < len(group) and group[i].start < comma.end():
        if group[i].type not in ("DATE", "version"):
            return None  # "Designed by X for the Y, ...": the phrase went on
        i += 1
    if i < len(group) and group[i].start == comma.end() and group[i].type not in ("DATE", "version", "step"):
        return group[i]
    return None


def _kind_before_names(left, rights):
    """Whether a plural copula joins a plural common noun to names ("the main ports are
    Hull and Goole"): the names are of the kind, not the kind of them."""
    last = _last_word(left.name)
    return (
        left.type == "concept" and not left.features.get("coref") and last.islower() and lemma(last) != last
        and all(r.type in _NAMED and r.name[:1].isupper() and not r.features.get("coref") for r, _ in rights)
    )


def _complements(group, agent, masked, s_start, s_end, t_start):
    """``the two supported by Django are X and Y``: the mentions a copula after the
    participle's agent names (X, Y), when nothing but a determiner or a number opens the
    clause before the participle; none otherwise."""
    if not _BARE_OPENING.search(masked[s_start:t_start]):
        return []
    copula = _COPULA_AFTER.match(masked, agent.end)
    if copula is None:
        return []
    return [m for m, _ in _rights_of(group, copula.end(), masked, s_end)]


_OPENING = re.compile(r"\s*(?:(?:the|an?)\s+)?$", re.I)


def _definitions(chunk, groups, analysis, found):
    """A definition's opening noun phrase is the term it defines: under "global interpreter
    lock" (a definition list) or "class `RemoteUserMiddleware`:", the body "The mechanism
    used by CPython..." or "Middleware for ..." says the term is a mechanism, used by CPython."""
    text, masked = chunk.text, analysis.masked
    stands_for = {}
    for index, group in groups.items():
        s_start = analysis.sentences[index][0]
        line_start = text.rfind("\n", 0, s_start) + 1
        if text[line_start:s_start].strip() or not line_start:
            continue  # not at a line's start, or the chunk's first line
        opening = group[0]
        if opening.type != "concept" or not _OPENING.match(masked[s_start : opening.start]):
            continue
        previous_end = len(text[:line_start].rstrip())
        previous_start = text.rfind("\n", 0, previous_end) + 1
        term = _defined_term(text, groups.get(index - 1, ()), previous_start, previous_end, line_start, s_start)
        if term is not None and term.norm != opening.norm:
            stands_for[opening] = term
            found.append(RelationCandidate(term, opening, "is_a", 0.6, 1.0, text[s_start : analysis.sentences[index][1]], "structure"))
    if not stands_for:
        return found
    for c in found:
        if c.extractor == "patterns":
            c.src = stands_for.get(c.src, c.src)
            c.dst = stands_for.get(c.dst, c.dst)
    return [c for c in found if c.src.norm != c.dst.norm]


def _defined_term(text, previous, line_start, line_end, body_start, s_start):
    """The mention a definition's body defines: the one mention its term line holds, a
    documented item's line ("class `X`:") or a definition list's term, indented less."""
    line = text[line_start:line_end]
    inside = [m for m in previous if line_start <= m.start and m.end <= line_end]
    code = [m for m in inside if m.type == "code"]
    if len(code) == 1 and _ITEM_LINE.match(line):
        return code[0]
    if len(inside) != 1:
        return None
    term = inside[0]
    indent = len(line) - len(line.lstrip())
    if body_start == line_end + 1 and s_start - body_start > indent and not text[line_start:term.start].strip() and not line[term.end - line_start :].strip():
        return term  # a definition list: the body right under its term, indented more
    return None


# A line that names one documented code item: "class `CsrfViewMiddleware`[source]:",
# "### `CSRF_USE_SESSIONS`", "exception Foo:".
_ITEM_LINE = re.compile(
    r"^[ \t]*(?:#{1,6}[ \t]+)?(?:(?:class|exception|function|method|attribute|data|property|setting)[ \t]+)?"
    r"`?[A-Za-z_][\w.]*(?:\(\))?`?(?:\[source\])?[ \t]*:?[ \t]*$",
    re.M,
)


def _documented_items(text, mentions):
    """``[(line start, code mention)]`` of the lines that name one documented item."""
    items = []
    for line in _ITEM_LINE.finditer(text):
        code = [m for m in mentions if m.type == "code" and line.start() <= m.start < line.end() and not m.features.get("coref")]
        if len(code) == 1:
            items.append((line.start(), code[0]))
    return items


def _copula_ok(between):
    """Only determiners and modifiers between "is" and the category: "is a lightweight X"."""
    words = [w for w in _WORDS.findall(between) if w.lower() not in ("s", "most", "least")]  # "the world's most visited"
    # Commas may part coordinate adjectives: "is the new, asynchronous-friendly standard".
    return len(words) <= 3 and not re.search(r"[();:]", between) and not any(
        w.lower() in _PREPOSITIONS or w.lower() in _PLACE_PREPOSITIONS for w in words
    )


# Prepositions of place and path: "volcanoes are common along the boundaries" names no kind.
_PLACE_PREPOSITIONS = frozenset("along across around among between beyond behind below above near throughout within inside outside".split())


_LIST_GOES_ON = re.compile(r"\s*,?\s*(?:and|or)\s")
_NEXT_INDEFINITE = re.compile(r"\s*,\s*(?:an?)\s")
_INDEFINITE_BEFORE = re.compile(r"\b(?:an?|[Aa]n?)\s+(?:[\w-]+\s+)?$")
_COPULA = re.compile(_BE + r"\b")
_PLURAL_COPULA = re.compile(r"(?:are|were)\b")
_INCLUDE = re.compile(r"includ")
_PLURAL_VERB = re.compile(r"(?:are|were|live|lie|occur|reside)\b")
_PLURAL_BEFORE = re.compile(r"\b(?:are|were)\s+(?:(?:\w+ly|also|only|still)\s+)?$")
_BARE_PLURAL_COPULA = re.compile(r"(?:are|were)(?:\s+(?:(?:now|also|still)\s+)?(?:the|an?))?\s*")
_SUBORDINATE = re.compile(r"\s*(?:if|when|whenever|while|since|because|although|though|unless|once|after|before|as|should|where|whether|in|on|for|with|by|from|at|to|during|under|within|without|through|unlike|like)\b", re.I)
_PREPOSITIONS = frozenset("on in at to for from by with of into onto about over under available".split())
_AFTER_PREPOSITION = re.compile(
    r"\b(?:" + "|".join(sorted(_PREPOSITIONS - {"available"} | {
        "behind", "below", "above", "across", "along", "among", "between", "beyond", "near", "through",
        "within", "without", "inside", "outside", "around", "toward", "towards", "against", "during", "via",
    })) + r")\s+(?:the\s+|an?\s+)?$"
)
# The same, past a possessive or a determiner and one modifier: "in its main courtyard".
_PP_OBJECT = re.compile(_AFTER_PREPOSITION.pattern[: -len(r"(?:the\s+|an?\s+)?$")] + r"(?:(?:the|an?|its|their|his|her|your|our|my)\s+(?:[a-z-]+\s+)?)?$")


# A participle with no copula hangs on the noun right before it ("software and applications
# written in Python": the applications are).
_PARTICIPLE = re.compile(r"(?:[a-z]+ed|written|built|found|known|made|run)\b")
_NOT_FINITE = frozenset("found known built written made powered such like as originally also often commonly aka called".split())


def _finite(trigger):
    """Whether a trigger opens with a verb that has a subject ("uses", "is part of"), not a
    participle ("used by", "specified in") that can hang on any noun, nor a comma."""
    first = trigger.split(None, 1)[0].lower() if trigger.strip() else ""
    return bool(first) and first[0].isalpha() and not first.endswith(("ed", "ing")) and first not in _NOT_FINITE


_AND_SECOND_VERB = re.compile(r"\s+(?:and|but)\s+(?:(?:also|then|later|now)\s+)?")
_RELATIVE = re.compile(r"^\)?\s*(?:,\s*|\(\s*)(?:which|who|that)\s+(?:\w+ly\s+|also\s+)?$")
_PASSIVE_GAP = re.compile(r"\s+(?:is|are|was|were|(?:has|have|had)\s+been)\s+(?:\w+ly\s+)?")
_COMMA_BEFORE = re.compile(r"\s*,\s*")
_ASIDE = re.compile(r"\s*\([^()]*\)\s*")
_AND_OR = re.compile(r"\b(?:and|or)\b")
_COMMA_AND = re.compile(r"\s*,\s*(?:and|or)\s+(?:the\s+|an?\s+)?")
_RESTRICTIVE = re.compile(r"^\s+(?:which|who|that)\s+(?:\w+ly\s+|also\s+)?$")
_APPOSITION_END = re.compile(r"^\)?\s*,\s*(?:\w+ly\s+)?$")
# A copula after the comma that closes an insertion, before a participle: "X, located in
# Paris, was designed by".
_COPULA_AFTER_INSERTION = re.compile(r"^\)?\s*,\s*(?:is|are|was|were|(?:has|have|had)\s+been)\s+(?:\w+ly\s+)?$")


def _left_of(group, position, masked, ends=None, finite=False):
    """The mention a trigger at ``position`` has on its left, and the words between;
    ``finite``: the trigger is a verb that needs a subject, not a participle or a comma."""
    ends = ends if ends is not None else [m.end for m in group]
    index = bisect_right(ends, position) - 1
    if index < 0:
        return None, 0
    best = group[index]
    between = masked[best.end : position]
    if _RELATIVE.match(between):
        return best, 1  # "RFC 7159 (which obsoletes RFC 4627)", "X, which uses Y"
    if _RESTRICTIVE.match(between) and best.type == "concept":
        described = _described(group, best, masked)
        if described is not best:
            return described, 1  # "X is an insect that lives in colonies": X does
    if (_APPOSITION_END.match(between) or not finite and _COPULA_AFTER_INSERTION.match(between)) and index:
        head = _apposition_head(group, index, masked) or _apposition_subject(group, index, masked, group[0].start)
        if head is not None:
            # "Django, being a web framework, needs": Django needs; "Tokyo, the capital of
            # Japan, is", "the tower, located in Paris, was designed by": Tokyo, the tower
            return head, 1
    between = between[1:] if between.startswith(")") else between  # "X (Y) is": Y
    if _ASIDE.fullmatch(between):
        between = " "  # "Toni Morrison (1931–2019) was": an aside with no mention in it
    if re.search(r",\s*(?:and|or|but)\s+(?:\w+\s+)?$", between) or best.type in ("DATE", "version") and re.fullmatch(
        r"\s+(?:and|but)\s+(?:\w+\s+)?", between
    ):  # "founded in 1994 and is headquartered in": a date is no subject
        first = group[0]
        if first.end <= position and first is not best:
            return first, 1  # "It provides X, and requires Y": the sentence subject
        return None, 0
    if finite and _AND_SECOND_VERB.fullmatch(between) and best is not group[0] and group[0].type not in ("DATE", "version"):
        return group[0], 1  # "X was written by A and is maintained by B": a second verb phrase, X's
    gap = _gap_words(between)
    if gap > MAX_GAP_WORDS or _CLAUSE_BREAK.search(between) or re.search(r"[()]", between):
        return None, 0
    if best.type == "concept" and best.name in KIND_NOUNS:
        if index and not masked[group[index - 1].end : best.start].strip():
            return group[index - 1], gap  # ":mod:`sqlite3` module was written by" -> sqlite3
    finite = finite or _PASSIVE_GAP.fullmatch(between) is not None  # "X in its courtyard was designed by"
    preposition = _PP_OBJECT.search(masked, max(0, best.start - 28), best.start) if finite else None
    if preposition is not None:
        # "the water behind a dam forms a pond": a prepositional object is no subject; the
        # noun it hangs on is ("the cache of Basin uses" -> cache), if it is a mention.
        head = index - 1
        if head >= 0 and group[head].end > preposition.start():
            head -= 1  # a possessive inside the phrase: "in its main courtyard"
        if head >= 0 and not masked[group[head].end : preposition.start()].strip():
            if _place_of_name(group[head], best, masked):
                return best, gap  # "the city of Florence is": Florence is
            return group[head], gap + 1
        return None, 0
    return best, gap


# What opens an insertion the verb after it skips: "being ...", a participle ("specified by")
# or another name ("Zstandard, or zstd as short version, is", "Peru, officially the Republic
# of Peru, is"), or a place ("the reef, off the coast of Queensland, is").
_INSERTION = re.compile(r"\s*(?:being\s|\w+ed\s|(?:written|built|made|known|found|born|held|kept|seen)\s|or\s|(?:off|near|along|in|on|at)\s+the\s|(?:officially|formally|properly)\s)")


def _apposition_head(group, index, masked):
    """The mention a comma-enclosed insertion follows: in "JSON, specified by RFC 7159,
    is a format" the insertion ends at ``group[index]`` and the head is JSON."""
    start = group[index].start
    comma = masked.rfind(",", group[0].end, start)
    if comma < 0:
        return None
    if not _INSERTION.match(masked, comma + 1):
        return None
    for m in reversed(group[:index]):
        if m.end <= comma:
            if masked[m.end : comma].strip(" \t\n)") or "(" in masked[m.end : comma]:
                return None
            return m
    return None


_DESCRIBES = re.compile(rf"\s*(?:,|{_BE})\s+(?:an?|the)\s+(?:[\w-]+(?:['’]s)?\s+){{0,2}}")  # "the world's largest"


_OF_FOR = re.compile(r"\s+(?:for|of)\s+(?:the\s+)?")
_OF = re.compile(r"\s+of\s+(?:(?:the|an?|its|their|his|her)\s+)?")
# Heads that name an event or act (nominalizations): "the movement of the plates causes
# earthquakes" says the plates, moving, cause them.
_EVENT_SUFFIXES = ("ment", "tion", "sion", "ance", "ence", "ure", "ing", "al")


def _event_agent(group, left, masked, t_start):
    """The of-object of an event noun before a cause verb (the plates in "the movement of
    the plates causes"), else ``left``."""
    i = group.index(left)
    if left.type != "concept" or " " in left.name or not left.name.lower().endswith(_EVENT_SUFFIXES):
        return left
    if i + 1 < len(group) and group[i + 1].end <= t_start and _OF.fullmatch(masked, left.end, group[i + 1].start):
        return group[i + 1]
    return left


def _phrase_head(group, left, masked):
    """The noun a prepositional phrase hangs on, where a place participle follows it: in "a
    society for science based in London" the society is."""
    i = group.index(left)
    if i and group[i - 1].type == "concept" and _OF_FOR.fullmatch(masked, group[i - 1].end, left.start):
        return group[i - 1]
    return left


def _described(group, left, masked):
    """What a participle after a describing noun is said of: in "Chlorophyll is a pigment
    found in chloroplasts" and "Tk, a toolkit implemented with Tcl", the named thing."""
    i = group.index(left)
    if left.type != "concept" or i == 0:
        return left
    if i > 1 and _POSSESSIVE.fullmatch(masked, group[i - 1].end, left.start):
        i -= 1  # "the world's largest museum": the possessor is no describing noun's subject
        if _DESCRIBES.fullmatch(masked, group[i - 1].end, group[i].start):
            return group[i - 1]
        return left
    if not _DESCRIBES.fullmatch(masked, group[i - 1].end, left.start):
        return _second_complement(group, i, masked) or left
    return group[i - 1]


_COPULA_WORD = re.compile(rf"\b{_BE}\b")
_AND_ANOTHER = re.compile(r"\s*,?\s+and\s+(?:also\s+)?(?:an?|the)\s+(?:[\w'’-]+\s+){0,2}")
_PLACE_PP = re.compile(r"\s+(?:in|on|near|at)\s+(?:the\s+)?")


def _second_complement(group, i, masked):
    """What a second complement after "and a"/"and the" describes: in "Kilimanjaro is a
    volcano in Tanzania and the highest mountain in Africa", Kilimanjaro (the first one's,
    past the place it has), after a copula only; None when ``group[i]`` is no such complement."""
    j = i - 1
    if not _AND_ANOTHER.fullmatch(masked, group[j].end, group[i].start):
        return None
    if group[j].type in _NAMED and j > 0 and group[j - 1].type == "concept" and _PLACE_PP.fullmatch(masked, group[j - 1].end, group[j].start):
        j -= 1
    if group[j].type != "concept" or group[j].features.get("coref"):
        return None
    described = _described(group, group[j], masked)
    if described is group[j] or not _COPULA_WORD.search(masked, described.end, group[j].start):
        return None  # "Basin, a broker and a cache": after a comma, a list
    return described


_NUMBER_COMMA = re.compile(r"(?<=\d),(?=\d{3})")  # "over 2,900 reefs": a number's comma parts nothing
_GAP_PREPOSITION = re.compile(r"\w\s+(?:for|in|on|at|with|from|by|to|into|about|over|under|through)\s")


def _rights_of(group, position, masked, s_end, starts=None, s_start=None):
    """The first mention after ``position`` and those coordinated with it ("X, Y and Z"),
    up to the comma that closes an opening clause ("If X needs Y, a list ...")."""
    result = []
    starts = starts if starts is not None else [m.start for m in group]
    i = bisect_left(starts, position)
    if i >= len(group):
        return result
    first = group[i]
    gap = _gap_words(masked[position : first.start])
    between = masked[position : first.start]
    if gap > MAX_GAP_WORDS or re.search(r"[;:.()]", between) or _CLAUSE_BREAK.search(between):
        return result
    if _GAP_PREPOSITION.search(between):
        return result  # "used in subsequent installs for the same X": the object was no mention
    if "," in _NUMBER_COMMA.sub("", between) and not (
        _ADJECTIVE_SERIES.fullmatch(between) and all(word_class(w.lower()) == "adj" for w in between.replace(",", " ").split())
    ):
        return result  # a comma parts only coordinate adjectives: "is the new, asynchronous-friendly standard"
    if i + 1 < len(group) and _POSSESSIVE.fullmatch(masked, first.end, group[i + 1].start):
        first, i = group[i + 1], i + 1  # "using the package's build system": the build system
    if first.type == "concept" and i + 1 < len(group):
        following = group[i + 1]
        if following.type != "concept" and not masked[first.end : following.start].strip() and (
            " " not in first.name or _titled(first, following, masked)
        ):
            first, i = following, i + 1  # "internet RFC 1321" -> RFC 1321; "the mining engineer Ada Byron" -> Ada Byron
    result.append((first, gap))
    previous = first
    clause = s_start is not None and _SUBORDINATE.match(masked, s_start) and "," not in masked[s_start:position]
    rest = group[i + 1 :]
    version_end = None
    for k, m in enumerate(rest):
        between = masked[(version_end or previous.end) : m.start]
        if m.type == "version" and version_end is None and previous.type != "version" and not between.strip():
            version_end = _VERSION_FLOOR.match(masked, m.end).end()
            continue  # "requires CMake 3.10 or newer and a C compiler": the version goes with CMake
        version_end = None
        if "(" in between and ")" not in between[between.rfind("(") :]:
            continue  # inside a parenthesis after an item: "RFC 7159 (which obsoletes RFC 4627) and ECMA-404"
        if m.type == "concept" and _KIND_WORD.fullmatch(m.name.lower()) and (
            previous.type == "code" or k + 1 < len(rest) and rest[k + 1].type == "code"
        ):
            continue  # a kind word goes with its code name: "`UUID` objects and the functions `uuid1`"
        between = _PARENTHESIS.sub(" ", between)
        if previous.type == "code" or m.type == "code":
            between = _KIND_WORD.sub(" ", between)
        if clause and "," in between:
            break
        if previous.type in _NAMED and m.type == "concept" and _APPOSED.fullmatch(between):
            break  # "by Henry Dunant, a Swiss businessman": an apposition, no second item
        if _COORD.match(between):
            result.append((m, gap))
            previous = m
        else:
            break
    return result


_APPOSED = re.compile(r"\s*,\s*(?:an?|the)\s+")
_VERSION_FLOOR = re.compile(r"(?:\s+or\s+(?:newer|later|higher|above|greater|better))?")
_BARE_AND = re.compile(r"\s+and\s+")


def _shared_head(a, b, masked):
    """``build and distribution system``: a one-word noun joined by a bare "and" to a
    compound shares its head, so names no category of its own."""
    return (
        a.type == "concept" and b.type == "concept" and " " not in a.name and " " in b.name
        and not a.name.endswith("s") and word_class(b.name.split()[0].lower()) == "noun"
        and _BARE_AND.fullmatch(masked, a.end, b.start) is not None
    )


# "the package's", "the users'", "the world's most visited", "the world's largest"
_POSSESSIVE = re.compile(r"(?:['’]s|(?<=s)['’])\s+(?:(?:most|least)\s+(?:[a-z]+\s+){0,2}|[a-z]+est\s+)?")
# "to build a wheel using X": a means ("using", "utilizing") goes with the verb, and so
# with its subject, not with the verb's object.
_MEANS = re.compile(r"(?:using|utili[sz]ing)\b")
_INFINITIVE_OBJECT = re.compile(r"\b[Tt]o\s+[a-z]+\s+(?:(?:an?|the|its|their|your|this|these|some|all|any)\s+)?(?:[\w-]+\s+)?$")


def _doer(group, left, masked, s_start):
    """Who uses the means when ``left`` is an infinitive's object: in "pip will attempt to
    build a wheel using X", pip (the first mention of the clause, before the "to"), None if
    the clause has none there; ``left`` itself when it is no infinitive's object."""
    to = _INFINITIVE_OBJECT.search(masked, max(s_start, left.start - 40), left.start)
    if to is None:
        return left
    clause = max(s_start, masked.rfind(",", s_start, to.start()) + 1, masked.rfind(";", s_start, to.start()) + 1)
    for m in group:
        if m.start >= to.start():
            break
        if m.start >= clause:
            return m
    return None


_ADJECTIVE_SERIES = re.compile(r"\s*(?:(?:the|an?)\s+)?(?:[\w-]+\s*,\s*)+")
_PARENTHESIS = re.compile(r"\([^()]*\)")
_KIND_WORD = re.compile(
    r"\b(?:modules?|packages?|librar(?:y|ies)|functions?|class(?:es)?|methods?|objects?|attributes?|files?"
    r"|commands?|programs?|tools?|director(?:y|ies)|frameworks?|types?|settings?|options?)\b"
)


_SUCH_AS = re.compile(r"\s*,?\s*(?:such\s+as|including|like)\s+(?:the\s+)?$")


def _examples(group, last, masked, gap):
    """The examples a right side names: "used by sites such as Facebook and Wikipedia"
    is used by Facebook and by Wikipedia too."""
    i = group.index(last) + 1
    if i >= len(group) or not _SUCH_AS.match(masked[last.end : group[i].start]):
        return []
    result = [(group[i], gap + 2)]
    for m in group[i + 1 :]:
        if not _COORD.match(masked[result[-1][0].end : m.start]):
            break
        result.append((m, gap + 2))
    return result


def _left_list(group, left, masked, s_start=None):
    """``left`` and the mentions coordinated before it: "wind, flowing water and moving ice"."""
    result = [left]
    i = group.index(left)
    if left.features.get("coref"):
        return result  # "..., and it remains": a pronoun opens a clause, in no list
    clause = s_start is not None and _SUBORDINATE.match(masked, s_start)
    while i > 0 and _COORD.match(masked[group[i - 1].end : group[i].start]):
        if clause and "," in masked[group[i - 1].end : group[i].start] and "," not in masked[s_start : group[i - 1].end]:
            break  # "Since views require the token, `X` must ...": the comma closes the clause
        i -= 1
        result.append(group[i])
    return result


_THE = re.compile(r"\b[Tt]he\s+$")


def _named_kinds(group, masked, sentence):
    """``the `unittest` unit testing framework``: a name with its kind after it, the kind
    a phrase of several words (a single kind noun, "the `json` module", says little)."""
    found = []
    for a, b in zip(group, group[1:]):
        if (
            a.type == "code" and b.type == "concept" and " " in b.name
            and not masked[a.end : b.start].strip() and _THE.search(masked, max(0, a.start - 5), a.start)
        ):
            found.append(RelationCandidate(a, b, "is_a", 0.6, 1.0, sentence, "patterns"))
    return found


def _bare_kind(m):
    """A kind noun alone ("module", "the library"), no pronoun resolved: it names no one thing."""
    return m.type == "concept" and m.name.lower() in KIND_NOUNS and not m.features.get("coref")


# "has a `session` attribute": a verb of having, then code and its kind of member.
_HAS = re.compile(r"\b(?:has|have|had|having)\s+(?:(?:an?|the|its|their|its\s+own|their\s+own)\s+)?$")
_MEMBER_AFTER = re.compile(r"\s+(?:attribute|method|field|property|member)s?\b")


def _has_members(group, masked, sentence):
    """The attribute, method or field a thing has is part of it: "Every `Flood` object has
    a `level` attribute" (the member named by code, its kind of member after it)."""
    found = []
    for i, b in enumerate(group):
        if i == 0 or b.type != "code" or not _MEMBER_AFTER.match(masked, b.end):
            continue
        has = _HAS.search(masked, group[i - 1].end, b.start)
        if has is None:
            continue
        left, _ = _left_of(group, has.start(), masked, finite=True)
        if left is None or left is b or left.type in ("version", "DATE", "step"):
            continue
        members = [b]
        for m in group[i + 1 :]:  # "a `level` attribute and a `rise()` method"
            kind = _MEMBER_AFTER.match(masked, members[-1].end)
            if m.type != "code" or kind is None or not _COORD.match(masked[kind.end() : m.start]) or not _MEMBER_AFTER.match(masked, m.end):
                break
            members.append(m)
        found.extend(RelationCandidate(m, left, "part_of", 0.7, 1.0, sentence, "patterns") for m in members if m.norm != left.norm)
    return found


# "The `listen_port` option sets the port": code, its kind of setting, and what it decides.
_OPTION_SETS = re.compile(
    r"\s+(?:option|setting|parameter|flag|argument|(?:environment\s+)?variable)\s+(?:sets|controls|determines|specifies"
    r"|configures|selects|chooses|defines|changes)\s+(?:(?:the|an?|which|how\s+many|how\s+much|whether)\s+)?(?:[a-z-]+\s+)?$"
)


def _option_sets(group, masked, sentence):
    """What an option, setting or variable is said to set or control is configured via it:
    "The `listen_port` option sets the port the gateway listens on"."""
    found = []
    for a, b in zip(group, group[1:]):
        if a.type == "code" and b.type not in ("version", "DATE", "step") and _OPTION_SETS.fullmatch(masked, a.end, b.start):
            found.append(RelationCandidate(b, a, "configured_via", 0.7, 1.0, sentence, "patterns"))
    return found


_AND_OTHER = re.compile(r"\s*,?\s*(?:and|or)\s+(?:many\s+|several\s+|some\s+)?other\s+(?:[a-z-]+\s+)?$")


def _and_others(group, masked, sentence, s_start):
    """``oxygen, nitrogen and other gases``: the things listed before "and other" are each
    one of the kind after it."""
    found = []
    for i, (a, b) in enumerate(zip(group, group[1:])):
        if b.type != "concept" or a.type in ("version", "DATE", "step") or not _AND_OTHER.fullmatch(masked, a.end, b.start):
            continue
        for m in _left_list(group, a, masked, s_start):
            if m.type not in ("version", "DATE", "step") and m.norm != b.norm:
                found.append(RelationCandidate(m, b, "is_a", 0.6, 1.0, sentence, "patterns"))
    return found


_COLON = re.compile(r"^\s*:\s*$")
_COMMA = re.compile(r"^\s*,\s*$")
_THERE_ARE = re.compile(r"\s*[Tt]here\s+(?:are|were)\b")
_COUNTED = re.compile(r"\b(?:two|three|four|five|six|seven|eight|nine|ten|several|\d+)\s+(?:[\w-]+\s+)?$")


def _colon_items(group, noun, masked):
    """The names listed after a plural noun and a colon ("supports two interfaces: WSGI
    and ASGI"): what is said of the noun is said of each of them."""
    i = group.index(noun) + 1
    if noun.type != "concept" or not noun.name.endswith("s") or i >= len(group) or not _COLON.match(masked[noun.end : group[i].start]):
        return []
    items = [group[i]]
    for m in group[i + 1 :]:
        if not _COORD.match(masked[items[-1].end : m.start]):
            break
        items.append(m)
    return [m for m in items if m.type not in ("concept", "version", "DATE", "step")]


def _colon_lists(group, masked, sentence):
    """``two interfaces: WSGI and ASGI``: the names listed after a plural noun and a colon
    are each one of them."""
    found = []
    for i, (a, b) in enumerate(zip(group, group[1:])):
        if a.type != "concept" or not a.name.endswith("s"):
            continue
        if not _COLON.match(masked[a.end : b.start]) and not (
            _COMMA.match(masked[a.end : b.start]) and _THERE_ARE.match(sentence)
            and _COUNTED.search(masked, max(0, a.start - 24), a.start) and not group[:i]
        ):
            continue  # "There are only two booleans, `Py_False` and `Py_True`": a comma does as well
        items = [b]
        for m in group[i + 2 :]:
            if not _COORD.match(masked[items[-1].end : m.start]):
                break
            items.append(m)
        found.extend(
            RelationCandidate(m, a, "is_a", 0.6, 1.0, sentence, "patterns")
            for m in items if m.type not in ("concept", "version", "DATE", "step")
        )
    return found


# "adds X to Y", "appending X to Y", "X is inserted into Y": what is added becomes part of it;
# "remove X from Y", "deleting X from Y": what is taken out of it was part of it.
_ADD = re.compile(r"\b(?:(?:[Aa]dd|[Aa]ppend|[Ii]nsert)(?:s|ed|ing)?|(?P<out>[Rr]emov|[Dd]elet)(?:e|es|ed|ing))\b")
_ADD_OBJECT_END = re.compile(r"\s*(?:\w+\s*)?(?:,[^,.;:()]*,\s*)?(?:to|into)\s+(?:(?:the|an?|every|each|all|any|its|their|your)\s+)?(?:\w+\s+)?$")
_REMOVE_OBJECT_END = re.compile(r"\s*(?:\w+\s*)?(?:,[^,.;:()]*,\s*)?from\s+(?:(?:the|an?|every|each|all|any|its|their|your)\s+)?(?:\w+\s+)?$")
# "add X to Y and Z to W": the verb left out of a second pair.
_GAPPED_PAIR = re.compile(r"\s*,?\s*(?:and|or)\s+(?:(?:the|an?)\s+)?$")


def _added_to(group, masked, sentence, s_start, s_end):
    """``Adds the `user` attribute, representing the user, to every `HttpRequest` object``:
    the thing added (the verb's first object) is part of what it is added to; so is what is
    removed from a thing, and a second pair with the verb left out ("and Z to W")."""
    found = []
    for match in _ADD.finditer(masked, s_start, s_end):
        if _negated(masked[max(s_start, match.start() - 30) : match.end()], match.end() - match.start()):
            continue
        object_end = _REMOVE_OBJECT_END if match.group("out") else _ADD_OBJECT_END
        rights = _rights_of(group, match.end(), masked, s_end)
        if not rights:
            continue
        last = rights[-1][0]
        after = [m for m in group if m.start >= last.end]
        if after and after[0].type == "concept" and _KIND_WORD.fullmatch(after[0].name.lower()) and not masked[last.end : after[0].start].strip():
            last, after = after[0], after[1:]  # "the `user` attribute"
        for k, target in enumerate(after):
            if object_end.fullmatch(masked, last.end, target.start):
                for added, _ in rights:
                    if added.norm != target.norm:
                        found.append(RelationCandidate(added, target, "part_of", 0.75, 1.0, sentence, "patterns"))
                if k + 2 < len(after) and _GAPPED_PAIR.fullmatch(masked, target.end, after[k + 1].start) and object_end.fullmatch(
                    masked, after[k + 1].end, after[k + 2].start
                ):
                    added, target = after[k + 1], after[k + 2]
                    if added.norm != target.norm:
                        found.append(RelationCandidate(added, target, "part_of", 0.75, 1.0, sentence, "patterns"))
                break
            if target.start - last.end > 80:
                break
    return found


_PAREN = re.compile(r"^\s*\(\s*$")
# "the (Dutch) artist"; not a possessive: "her husband Pierre Curie" names a relation to
# her (a relational noun), no kind Pierre Curie is of.
_TITLE_OPENING = re.compile(r"(?:^|\W)[Tt]he\s+(?:[\w-]+\s+)?$")


def _titled(a, b, masked):
    """Whether concept ``a`` is the title of name ``b`` right after it: "the architect Ada
    Lovelace" (a noun after "the", before a name of two or more capitalised words);
    ``extraction._title_before_name`` keeps such a title a mention of its own, "her brother
    John Smith" too, but a possessive's noun is a relation to the possessor, no kind."""
    return (
        a.type == "concept" and b.type in _NAMED and masked[a.end : b.start] == " " and not b.features.get("coref")
        and " " in b.name.strip() and all(w[:1].isupper() or w.islower() and len(w) <= 3 for w in b.name.split())
        and word_class(_last_word(a.name).lower()) == "noun"
        and _TITLE_OPENING.search(masked, max(0, a.start - 24), a.start) is not None
    )


_BY = re.compile(r"\s+by\s+(?:the\s+)?")
_BY_THE_PEOPLES = re.compile(r"\s+by\s+the\s+[A-Z][a-z]+(?:an|ese|ish|ch|i)\s+")  # "by the Spanish artist X"


def _work_by(group, masked, sentence):
    """"Ivanhoe is a novel by Walter Scott", "Ivanhoe, a novel by Walter Scott": what the
    noun describes is owned by the name after "by" (after its title: "by the poet X")."""
    found = []
    for i in range(len(group) - 1):
        a, b = group[i], group[i + 1]
        if a.type in _NAMED and a.name[:1].isupper() and b.type in _NAMED and " " in b.name and _BY.fullmatch(masked, a.end, b.start) and (
            _THE_BEFORE.search(masked, max(0, a.start - 5), a.start) and not a.features.get("coref") and a.norm != b.norm
            and not _AFTER_PREPOSITION.search(masked, max(0, a.start - 16), a.start)  # "defeated at the Battle of X by Y"
        ):
            found.append(RelationCandidate(a, b, "owned_by", 0.6, 1.0, sentence, "patterns"))  # "the Mona Lisa by Leonardo da Vinci"
            continue
        if not i or a.type != "concept" or not (_BY.fullmatch(masked, a.end, b.start) or b.type == "concept" and _BY_THE_PEOPLES.fullmatch(masked, a.end, b.start)):
            continue
        if b.type == "concept" and i + 2 < len(group) and _titled(b, group[i + 2], masked):
            b = group[i + 2]
        if b.type not in _NAMED or not b.name[:1].isupper():
            continue
        described = _described(group, a, masked)
        if described is not a and described.norm != b.norm:
            found.append(RelationCandidate(described, b, "owned_by", 0.7, 1.0, sentence, "patterns"))
    return found


# Names, capitalised or found by NER.
_NAMED = frozenset(("name", "PERSON", "ORG", "GPE", "PRODUCT"))
_AND_THE = re.compile(r"\s+and\s+(?:also\s+)?the\s+$")
_SUBJECT_COPULA = re.compile(rf"\s+{_BE}\s")


def _capitals(group, masked, sentence):
    """"Lyon is the capital of Rhône", "Lyon, the capital of Rhône", "Lyon is a city ... and
    the capital of Rhône": the capital is part of what it is the capital of."""
    found = []
    for i, (a, b) in enumerate(zip(group, group[1:])):
        if a.type != "concept" or a.name.lower() not in ("capital", "capital city"):
            continue
        if b.type == "concept" and i + 2 < len(group) and re.fullmatch(r"\s+and\s+(?:(?:the|its)\s+)?(?:(?:most|least)\s+[a-z]+\s+|[a-z]+est\s+)?", masked[a.end : b.start]):
            b = group[i + 2]  # "the capital and largest city of France"
            if masked[group[i + 1].end : b.start] != " of ":
                continue
        elif masked[a.end : b.start] != " of ":
            continue
        if b.type == "concept":
            continue
        if not b.name[:1].isupper():
            continue
        described = _described(group, a, masked)
        if described is a and i and _AND_THE.fullmatch(masked, group[i - 1].end, a.start):
            first = group[0]
            if first.type != "concept" and _SUBJECT_COPULA.match(masked, first.end):
                described = first  # "X is a city ... and the capital of Y"
        if described is not a and described.norm != b.norm:
            found.append(RelationCandidate(described, b, "part_of", 0.6, 1.0, sentence, "patterns"))
    return found


# A verb's object before "from": "received a royal charter from King Charles II" says where
# the charter came from (the verb's source), not where a charter is.
_VERB_OBJECT = re.compile(r"\b(?:[a-z]+ed|took|got|won|bought|brought|sent|gave|stole)\s+(?:an?|the|his|her|its|their)\s+(?:[\w-]+\s+)?$")


def _noun_from_place(group, masked, sentence):
    """"Ada, a weaver from Leeds", "a farmer from Kent": the one a noun describes comes from
    (is located in) the name after "from"."""
    found = []
    for i, (a, b) in enumerate(zip(group, group[1:])):
        if (
            a.type == "concept" and b.type in _NAMED and b.name[:1].isupper()
            and masked[a.end : b.start] == " from " and word_class(_last_word(a.name).lower()) == "noun"
            and not _VERB_OBJECT.search(masked, max(0, a.start - 30), a.start)
        ):
            described = _described(group, a, masked)
            if described.norm != b.norm:
                found.append(RelationCandidate(described, b, "located_in", 0.6, 1.0, sentence, "patterns"))
    return found


def _place_in_place(group, masked, sentence):
    """"the Museum of Ships in Port Ellen", "Skye in Scotland": a name right before "in" and
    another name is located in it."""
    return [
        RelationCandidate(a, b, "located_in", 0.6, 1.0, sentence, "patterns")
        for a, b in zip(group, group[1:])
        if a.type in _NAMED and b.type in _NAMED and masked[a.end : b.start] == " in "
        and a.name[:1].isupper() and b.name[:1].isupper() and a.norm != b.norm
    ]


# "the `dumps()` function in the `json` module", "`gateway_connected_stations` in the Platform
# dashboard": code, its kind word, "in", and what holds it.
_CODE_IN = re.compile(r"\s*(?:(?:function|class|method|attribute|option|setting|variable|field|key|constant|parameter|command|flag|exception|decorator|type)s?\s+)?in\s+(?:the\s+|your\s+|its\s+)?")
_CODE_KIND_BEFORE_IN = re.compile(r"\s*(?:function|class|method|attribute|option|setting|variable|field|key|constant|parameter|command|flag|exception|decorator|type)s?\s+in\b")
_CONTAINER = re.compile(r"(?:module|package|library|file|section|class|directory|folder|dashboard|panel|menu|page|tab|dialog|sidebar|toolbar|table|namespace)s?$")
_FILE_NAME = re.compile(r"\w\.[a-z]{1,5}$|/$")  # "settings.py", "docs/": a file or directory holds what is in it
_CONTAINER_AFTER = re.compile(r"\s+(?:module|package|library|file|section|class|directory|folder|dashboard|panel|menu|page|tab|dialog|sidebar|toolbar|table|namespace)\b")


def _code_in_container(group, masked, sentence):
    """Code "in" the module, file, section or screen that holds it is part of it: "the
    `dumps()` function in the `json` module", "`Path` class in `pathlib`", "watch `X` in the
    Platform dashboard" (what holds it named by a container's kind, or the code's kind named)."""
    found = []
    for a, b in zip(group, group[1:]):
        if a.type != "code" or b.type in ("version", "DATE", "step") or a.norm == b.norm:
            continue
        if b.type == "concept" and not (" " in b.name and _CONTAINER.search(b.name.lower())):
            continue  # "in the Platform dashboard", not "in the background"
        if not _CODE_IN.fullmatch(masked, a.end, b.start):
            continue
        if _CONTAINER.search(b.name.lower()) or _CONTAINER_AFTER.match(masked, b.end) or _FILE_NAME.search(b.name) or (
            b.type == "code" and _CODE_KIND_BEFORE_IN.match(masked, a.end)
        ):
            found.append(RelationCandidate(a, b, "part_of", 0.6, 1.0, sentence, "patterns"))
    return found


# "a city in southern Norway", "a town on the coast of Peru": a locative preposition after
# the kind a copula or an apposition gives, past one modifier and "the X of" chains.
_IN_PLACE = re.compile(r"\s+(?:in|on|near)\s+(?:the\s+)?(?:[a-z]+(?:-[a-z]+)*\s+)?")


# Parts of a place that name where in it: "in the centre of Paris" is in Paris.
_PLACE_PARTS = frozenset(
    "centre center heart middle north south east west edge outskirts coast shore shores bank banks "
    "foot top side part suburbs".split()
)


def _place_beyond(group, right, masked):
    """The name a part of a place belongs to ("the centre of Paris", "the eastern coast of
    Honshu": Paris, Honshu), else ``right``."""
    i = group.index(right)
    if right.type == "concept" and _last_word(right.name).lower() in _PLACE_PARTS and i + 1 < len(group):
        place = group[i + 1]
        if (place.type in _NAMED or place.type == "concept") and place.name[:1].isupper() and _OF.fullmatch(masked, right.end, place.start):
            return place  # "the centre of Paris", "the west bank of the Dnieper river"
    return right


_PLACE_INSERTION = re.compile(r"\s*,\s*(?:off|near|in|on|at|along)\s+(?:the\s+)?")
_COMMA_NEXT = re.compile(r"\s*,")  # a comma closes an insertion or an apposed name


def _inserted_places(group, masked, sentence):
    """"The Great Barrier Reef, off the coast of Queensland, is": a name, then a place
    between commas that a preposition opens; the name is located there."""
    found = []
    for a, b in zip(group, group[1:]):
        if a.type not in _NAMED or not a.name[:1].isupper() or not _PLACE_INSERTION.fullmatch(masked, a.end, b.start):
            continue
        place = _place_beyond(group, b, masked)
        if place.type in _NAMED and place.name[:1].isupper() and place.norm != a.norm and _COMMA_NEXT.match(masked, place.end):
            found.append(RelationCandidate(a, place, "located_in", 0.6, 1.0, sentence, "patterns"))
    return found


_PLACE_PREPOSITION = re.compile(r"\b(?:in|at|near|from|to)\s+(?:the\s+)?$")
_MADE_FROM = re.compile(r"\b(?:generated|built|compiled|produced|rendered|converted|created|made|assembled)\s+from\s+(?:the\s+|an?\s+)?$")
_BY_MAKER = re.compile(r"\s+(?:[a-z]+\s+)?by\s+(?:the\s+)?")


def _made_from_by(group, masked, sentence):
    """"generated from reStructuredText sources by Sphinx": the maker uses what the thing
    is made from (a kind word after the source, "sources", may stand between)."""
    found = []
    for i, a in enumerate(group):
        if not _MADE_FROM.search(masked, max(0, a.start - 40), a.start):
            continue
        last, j = a, i + 1
        while j < len(group) and not masked[last.end : group[j].start].strip():
            last, j = group[j], j + 1  # "`reStructuredText`_ sources": the kind word after it
        if j < len(group) and _BY_MAKER.fullmatch(masked, last.end, group[j].start) and group[j].norm != a.norm:
            found.append(RelationCandidate(group[j], a, "uses", 0.6, 1.0, sentence, "patterns"))
    return found


_WHERE = re.compile(r",\s+where\s")
_AT_IN = re.compile(r"\b(?:at|in)\s+(?:the\s+)?$")


def _where_place(group, masked, sentence):
    """"moved to Paris, where she studied at the University of Paris": a name after "at" or
    "in" in a where-clause that follows a place (a name after a preposition of place) is in
    that place."""
    found = []
    for i, a in enumerate(group):
        if not (a.type in _NAMED and a.name[:1].isupper() and _WHERE.match(masked, a.end)):
            continue
        if not _PLACE_PREPOSITION.search(masked, max(0, a.start - 10), a.start):
            continue
        clause_end = min((masked.find(c, a.end + 2) for c in ",;." if masked.find(c, a.end + 2) >= 0), default=len(masked))
        for b in group[i + 1 :]:
            if b.start >= clause_end:
                break
            if b.type in _NAMED and b.name[:1].isupper() and b.norm != a.norm and _AT_IN.search(masked, max(0, b.start - 8), b.start):
                found.append(RelationCandidate(b, a, "located_in", 0.6, 1.0, sentence, "patterns"))
                break
    return found
_CLAUSE_AFTER = re.compile(r"\s*(?:[.;:)]|,(?!\s*(?:and|or)\b)|$)")


def _place_comma_place(group, masked, sentence):
    """"in Paris, France", "born in Salzburg, in the Holy Roman Empire": after a preposition
    of place, a name, a comma and a second name that closes the phrase: the first is in the
    second (a third name or an "and" after it would make a list: "in Paris, Rome and Oslo")."""
    found = []
    for i, (a, b) in enumerate(zip(group, group[1:])):
        if not (a.type in _NAMED and b.type in _NAMED and a.name[:1].isupper() and b.name[:1].isupper()):
            continue
        if not re.fullmatch(r",\s+(?:in\s+(?:the\s+)?)?", masked[a.end : b.start]) or a.norm == b.norm:
            continue
        if not _PLACE_PREPOSITION.search(masked, max(0, a.start - 10), a.start) or a.features.get("coref"):
            continue
        if not _CLAUSE_AFTER.match(masked, b.end) or i + 2 < len(group) and _COORD.match(masked[b.end : group[i + 2].start]):
            continue
        found.append(RelationCandidate(a, b, "located_in", 0.6, 1.0, sentence, "patterns"))
    return found


def _kind_in_place(group, masked, sentence):
    """"Oslo is a port city in southern Norway", "Nagasaki, a city on the island of
    Kyushu": what the kind is said of is located in the name after the preposition (a
    kind of person aside: "a poet in Vienna" says where one worked, not what is there)."""
    found = []
    for i, kind in enumerate(group[:-1]):
        j = i + 1
        if kind.type != "concept" or not _IN_PLACE.fullmatch(masked, kind.end, group[j].start) and not (
            masked[kind.end : group[j].start] == " of " and _last_word(kind.name).lower() in _PLACE_KINDS
        ):
            continue  # "a port city in southern Norway"; "the largest city of Germany"
        if _person_noun(_last_word(kind.name).lower()):
            continue
        described = _described(group, kind, masked)
        if described is kind or described.features.get("coref") and described.type == "concept":
            continue
        while group[j].type == "concept" and j + 1 < len(group) and j < i + 3 and _OF.fullmatch(masked, group[j].end, group[j + 1].start):
            j += 1  # "on the coast of Peru", "in the collection of the Museum"
        place = group[j]
        if place.type in _NAMED and place.name[:1].isupper() and not place.features.get("coref") and place.norm != described.norm:
            found.append(RelationCandidate(described, place, "located_in", 0.6, 1.0, sentence, "patterns"))
    return found


# Kinds of place named by "the <kind> of <Name>": "the island of Honshu", "the city of Kyoto".
_PLACE_KINDS = frozenset(
    "city town village county province state kingdom empire republic island isle region district "
    "peninsula duchy principality canton prefecture municipality borough parish".split()
)
# Buildings and the institutions housed in one, named the same way: "the abbey of Cluny",
# "the asylum of Saint-Paul", "the palace of Versailles".
_BUILDING_KINDS = frozenset(
    "abbey monastery convent priory castle palace fortress citadel cathedral church chapel basilica temple "
    "shrine mosque synagogue asylum hospital prison".split()
)
_THE_BEFORE = re.compile(r"\b[Tt]he\s+$")


def _place_of_name(a, b, masked):
    """Whether concept ``a`` and name ``b`` read "the island of Honshu", "the abbey of
    Cluny" (one place)."""
    return (
        a.type == "concept" and a.name.lower() in _PLACE_KINDS | _BUILDING_KINDS and masked[a.end : b.start] == " of "
        and b.type in _NAMED and b.name[:1].isupper() and not b.features.get("coref")
        and _THE_BEFORE.search(masked, max(0, a.start - 5), a.start) is not None
    )


def _kind_of_name(group, masked, sentence):
    """"the island of Honshu", "the city of Kyoto": the name after "of" is a place of the
    kind before it (of the kinds of place only: "the court of Louis" names no court)."""
    return [
        RelationCandidate(b, a, "is_a", 0.6, 1.0, sentence, "patterns")
        for a, b in zip(group, group[1:]) if _place_of_name(a, b, masked)
    ]


# A noun that names a part of the thing after "of": "the outer shell of the Earth".
_PART_OF_BEFORE = re.compile(
    r"\b(?:part|layer|shell|core|crust|surface|interior|portion|section|region|lobe|chamber|wing)\s+of\s+(?:the\s+|an?\s+|its\s+|their\s+)?$"
)
_APPOSED_NAME = re.compile(r"\s*,\s+(?:the\s+)?")
_APPOSITION_CLOSE = re.compile(r"\s*(?:,|\)|\s(?:is|are|was|were)\b)")


def _named_parts(group, masked, sentence):
    """"the outer shell of the Earth, the lithosphere, is ...": what an apposition names
    after a part noun and its "of" is part of the thing the "of" names."""
    found = []
    for b, c in zip(group, group[1:]):
        if not _PART_OF_BEFORE.search(masked, max(0, b.start - 30), b.start):
            continue
        if not _APPOSED_NAME.fullmatch(masked, b.end, c.start) or not _APPOSITION_CLOSE.match(masked, c.end):
            continue
        if c.type in ("version", "DATE", "step") or c.norm == b.norm or _LIST_GOES_ON.match(masked, c.end):
            continue
        found.append(RelationCandidate(c, b, "part_of", 0.6, 1.0, sentence, "patterns"))
    return found


def _titled_names(group, masked, sentence):
    """A name is what its title says: "the architect Ada Lovelace" is_a architect."""
    return [
        RelationCandidate(b, a, "is_a", 0.6, 1.0, sentence, "patterns")
        for a, b in zip(group, group[1:]) if _titled(a, b, masked)
    ]


_KIND_OPENING = re.compile(r"(?:^|\W)(?:[Tt]he|[Tt]wo|[Tt]hree|[Ff]our|[Ff]ive|[Ss]ix|[Ss]even|[Ee]ight|[Nn]ine|[Tt]en|\d+)\s+(?:[\w-]+\s+){0,2}$")


def _kind_members(group, masked, sentence):
    """"the elements polonium and radium", "the painters Monet and Renoir": a plural noun,
    then a list of two or more names of its members, each of them one of the kind; after a
    comma when the kind is counted ("its two tributaries, the White Nile and the Blue Nile")."""
    found = []
    for i, kind in enumerate(group[:-2]):
        last = _last_word(kind.name)
        if kind.type != "concept" or not last.islower() or lemma(last) == last:
            continue
        first = i + 1
        if first + 1 < len(group) and _OF.fullmatch(masked, kind.end, group[first].start):
            first += 1  # "the four moons of Jupiter, Io, Europa, ...": the members after the whole
        gap = masked[group[first - 1].end : group[first].start]
        if gap == " " and first == i + 1:
            if not _KIND_OPENING.search(masked, max(0, kind.start - 40), kind.start):
                continue
        elif not (
            _APPOSED_NAME.fullmatch(gap) and _COUNTED.search(masked, max(0, kind.start - 30), kind.start)
            and all(m.type in _NAMED for m in group[first : first + 2])
        ):
            continue  # after a comma, a counted kind only: "its two tributaries, the White Nile and the Blue Nile"
        members = [group[first]]
        for m in group[first + 1 :]:
            if not _COORD.match(masked[members[-1].end : m.start]):
                break
            members.append(m)
        if len(members) < 2 or not _AND_OR.search(masked, members[-2].end, members[-1].start):
            continue  # no list: "the elements oxygen" is no plural kind before its members
        if any(m.type in ("version", "DATE", "step", "code") or m.features.get("coref") for m in members):
            continue
        found.extend(RelationCandidate(m, kind, "is_a", 0.6, 1.0, sentence, "patterns") for m in members if m.norm != kind.norm)
    return found


# What a maker makes: "his works", "her novels", "their best known albums".
_WORK_NOUNS = frozenset(
    "work painting novel book play poem composition opera symphony film song album writing invention design "
    "sculpture building essay story".split()
)
_WORKS_VERB = re.compile(r"\s+(?:include|includes|included|are|were|comprise|comprises)\s+(?:the\s+)?")
_PERSONAL_POSSESSIVES = frozenset("his her their".split())


def _works_of(group, masked, sentence, s_end):
    """"His works include the Brandenburg Concertos and the Goldberg Variations", "her best
    known novels are Emma and Persuasion": the named works are owned by the possessor."""
    found = []
    for i, owner in enumerate(group):
        if not owner.features.get("coref") or owner.surface.lower() not in _PERSONAL_POSSESSIVES or owner.type not in _MAKERS:
            continue
        for works in group[i + 1 : i + 3]:
            between = masked[owner.end : works.start]
            if works.type == "concept" and lemma(_last_word(works.name)) in _WORK_NOUNS and _gap_words(between) <= 3 and not re.search(r"[,;:.()]", between):
                break
        else:
            continue
        verb = _WORKS_VERB.match(masked, works.end)
        if verb is None:
            continue
        for work, _ in _rights_of(group, verb.end(), masked, s_end):
            if work.type in _NAMED and work.name[:1].isupper() and not work.features.get("coref") and work.norm != owner.norm:
                found.append(RelationCandidate(work, owner, "owned_by", 0.6, 1.0, sentence, "patterns"))
    return found


_POSSESSIVE_PRONOUNS = frozenset("its his her their".split())


def _possessed_names(group, masked, sentence):
    """"Its capital, Lima, lies ...", "Her best known novel, Beloved, won ...": the name
    between commas after a possessive's noun is of that kind; a capital is part of the
    possessor, a work owned by its person."""
    found = []
    for i in range(len(group) - 2):
        owner = group[i]
        if not owner.features.get("coref") or owner.surface.lower() not in _POSSESSIVE_PRONOUNS:
            continue
        k = i + 1
        if group[k].type == "concept" and group[k].name.lower() == "best" and k + 2 < len(group):
            k += 1  # "her best known novel": "best" is no noun of its own
        kind, name = group[k], group[k + 1]
        between = masked[owner.end : kind.start]
        if kind.type != "concept" or _gap_words(between) > 3 or re.search(r"[,;:.()]", between):
            continue
        if name.type not in _NAMED or not name.name[:1].isupper() or name.features.get("coref"):
            continue
        if not _APPOSED_NAME.fullmatch(masked, kind.end, name.start) or not _COMMA_NEXT.match(masked, name.end) or _LIST_GOES_ON.match(masked, name.end):
            continue
        head = lemma(_last_word(kind.name))
        found.append(RelationCandidate(name, kind, "is_a", 0.6, 1.0, sentence, "patterns"))
        if head == "capital" and owner.norm != name.norm:
            found.append(RelationCandidate(name, owner, "part_of", 0.6, 1.0, sentence, "patterns"))
        elif head in _WORK_NOUNS and owner.type in _MAKERS:
            found.append(RelationCandidate(name, owner, "owned_by", 0.6, 1.0, sentence, "patterns"))
    return found


_AMONG_THEM = re.compile(r",\s*(?:among|amongst)\s+(?:them|these|those|which|whom|others)\s+(?:(?:are|were|is|was)\s+)?(?:the\s+)?")
_QUANTIFIED = re.compile(
    r"\b(?:two|three|four|five|six|seven|eight|nine|ten|several|many|numerous|various|some|few|dozens\s+of|hundreds\s+of|\d+)"
    r"\s+(?:[\w-]+\s+){0,2}$", re.I
)


def _among_them(group, masked, sentence, s_start, s_end):
    """"four capital cities, among them Vienna and Budapest": the names after "among
    them" are each one of the plural kind before the comma (a counted one first: "several
    cities lie on its banks, among them Basel" are cities, no banks)."""
    found = []
    for match in _AMONG_THEM.finditer(masked, s_start, s_end):
        kinds = [
            m for m in group if m.end <= match.start() and m.type == "concept" and _last_word(m.name).islower()
            and lemma(_last_word(m.name)) != _last_word(m.name)
        ]
        if not kinds:
            continue
        counted = [m for m in kinds if _QUANTIFIED.search(masked, max(s_start, m.start - 30), m.start)]
        kind = (counted or kinds)[-1]
        for member, _ in _rights_of(group, match.end(), masked, s_end):
            if member.type not in ("version", "DATE", "step") and member.norm != kind.norm:
                found.append(RelationCandidate(member, kind, "is_a", 0.55, 1.0, sentence, "patterns"))
    return found


_OF_AFTER = re.compile(r"\s+of\b")


def _second_kinds(group, masked, sentence):
    """"Kilimanjaro is a volcano in Tanzania and the highest mountain in Africa": a second
    complement is a kind too (not a relational noun before "of": "and the capital of X")."""
    found = []
    for i, kind in enumerate(group):
        if i < 2 or kind.type != "concept" or _OF_AFTER.match(masked, kind.end) or _bare_kind(kind):
            continue
        if not (group[i - 1].type in _NAMED and _AND_ANOTHER.fullmatch(masked, group[i - 1].end, kind.start)):
            continue  # "is a relay and a tide gauge": the copula's own list has it
        described = _second_complement(group, i, masked)
        if described is not None and described.norm != kind.norm:
            found.append(RelationCandidate(described, kind, "is_a", 0.55, 1.0, sentence, "patterns"))
    return found


def _acronyms(group, masked, sentence):
    """``Web Server Gateway Interface (WSGI)``: the name and its abbreviation are one thing."""
    found = []
    for a, b in zip(group, group[1:]):
        if not _PAREN.match(masked[a.end : b.start]):
            continue
        short, long_ = (b, a) if len(b.name) < len(a.name) else (a, b)
        initials = "".join(w[0] for w in re.findall(r"[A-Za-z]+", long_.name)).lower()
        letters = re.sub(r"[^a-z]", "", short.name.lower())
        if letters and (initials.startswith(letters) or letters in initials or _subsequence(letters, long_.name.lower())):
            found.append(RelationCandidate(short, long_, "same_as", 0.9, 1.0, sentence, "patterns"))
    return found


def _subsequence(letters, text):
    it = iter(text)
    return all(c in it for c in letters) and letters[0] == text[0]


# ---------------------------------------------------------------------------------------
# Structure: dependency sections, numbered steps, see-also blocks

_DEPENDENCY_HEADING = re.compile(r"\b(?:dependencies|dependency|requirements|prerequisites|requires)\b", re.I)
_CITES_HEADING = re.compile(r"\b(?:see also|references|related|further reading|bibliography)\b", re.I)
_SEEALSO_DIRECTIVE = re.compile(r"^([ \t]*)\.\. seealso::[^\n]*\n((?:[ \t]*\n|\1[ \t]+[^\n]*\n?)*)", re.M)


def structural_relations(chunk, mentions, context):
    """Dependencies/Requirements sections → depends_on, steps → precedes, See also → cites."""
    subject = context.cache.get("subject")
    found = []
    steps = sorted((m for m in mentions if m.type == "step"), key=lambda m: m.features.get("step", 0))
    for a, b in zip(steps, steps[1:]):
        if b.features.get("step") == a.features.get("step", 0) + 1:
            found.append(RelationCandidate(a, b, "precedes", 0.9, 1.0, chunk.text[a.start : a.end], "structure"))
    found.extend(_qualified_names(chunk, mentions, subject))
    if "Default:" in chunk.text:
        found.extend(_setting_entries(chunk, mentions))
    if subject is None:
        return found
    found.extend(_configuration(chunk, mentions, subject, context))
    found.extend(_byline(chunk, mentions, subject))
    if subject.type == "code" and ".. " in chunk.text:
        found.extend(_directive_members(chunk, mentions, subject))
    named = [
        m for m in outer_mentions(mentions)
        if m.type not in ("concept", "version", "DATE", "step") and m.norm != subject.norm
        and not m.features.get("coref") and m.name.lower() not in KIND_NOUNS
    ]
    for kind, rel, weight, spans in (
        ("dependencies", "depends_on", 0.8, _section_spans(chunk, _DEPENDENCY_HEADING)),
        ("see-also", "cites", 0.7, _section_spans(chunk, _CITES_HEADING) + _seealso_spans(chunk.text)),
    ):
        for a, b in spans:
            for m in named:
                if a <= m.start < b:
                    found.append(RelationCandidate(subject, m, rel, weight, 1.0, m.snippet, "structure"))
    return found


# A setting's entry in a reference: its name alone on a line, "Default: ..." after it, then
# what it decides: "Whether to store the CSRF token in the session", "The age of the cookie".
_SETTING_ENTRY = re.compile(
    r"^[ \t]*(?:#{1,6}[ \t]+)?`?([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)`?[ \t]*\n(?:[ \t]*\n)*[ \t]*Default:[^\n]*\n(?:[ \t]*\n)*"
    r"[ \t]*(?:Whether(?:\s+or\s+not)?\s+to\s+[a-z]+\s+|The\s+[a-z]+\s+of\s+)(?:(?:the|an?|its|their)\s+)?",
    re.M,
)


def _setting_entries(chunk, mentions):
    """What a setting's entry says it decides is configured via the setting: under
    "### `CSRF_USE_SESSIONS`", "Default: `False`", "Whether to store the CSRF token in
    ..." the CSRF token is; "The age of CSRF cookies" names the cookies."""
    found = []
    for entry in _SETTING_ENTRY.finditer(chunk.text):
        start, end = entry.span(1)
        setting = next((m for m in mentions if m.type == "code" and m.start is not None and m.start <= start < m.end), None)
        target = min(
            (m for m in mentions if m.start is not None and m.start >= entry.end() and m.type not in ("DATE", "version", "step")),
            key=lambda m: (m.start, -m.length), default=None,
        )
        if setting is None or target is None or target.start != entry.end() or target.norm == setting.norm:
            continue
        found.append(RelationCandidate(target, setting, "configured_via", 0.8, 1.0, chunk.text[entry.start() : entry.end()].strip(), "structure"))
    return found


# A reStructuredText description of one object: ".. class:: Flood(level)", ".. function:: ebb()".
_DIRECTIVE_ITEM = re.compile(
    r"^[ \t]*\.\.[ \t]+(?:py:)?(?:class|function|exception|data|decorator|attribute|method|classmethod|staticmethod)::[ \t]+([A-Za-z_][\w]*)(?![\w.])",
    re.M,
)


def _directive_members(chunk, mentions, subject):
    """What a module's page documents with a directive of its own (".. class:: Flood" on
    the page of ``heron``) is part of that module, whatever the name looked like in the
    line ("copyfile" reads as a word: the directive says it is code); a dotted name is left to
    ``_qualified_names`` ("Flood.rise" is part of Flood)."""
    found = []
    for item in _DIRECTIVE_ITEM.finditer(chunk.text):
        start, end = item.span(1)
        for m in mentions:
            if m.type not in ("step", "DATE", "version") and m.start is not None and m.start <= start < m.end and m.norm != subject.norm:
                found.append(RelationCandidate(m, subject, "part_of", 0.8, 1.0, item.group(0).strip(), "structure"))
                break
    return found


# A byline near the top: "2004, Ada Lovelace, Grace Hopper", "By Ada Lovelace",
# "Author: Ada Lovelace"; a line of names alone needs one of those openings.
_BYLINE = re.compile(
    r"^[ \t]*(?:\*?(?:[Ww]ritten\s+by|[Bb]y|[Aa]uthors?:|(?:[Cc]opyright\s+)?(?:\([Cc]\)\s+|©\s*)?(?:1[6-9]|20)\d\d(?:\s*[-–]\s*(?:1[6-9]|20)\d\d)?,)\*?)"
    r"[ \t]*([A-Z][\w.'’-]*(?:[ \t]+[A-Z][\w.'’-]*)+(?:[ \t]*(?:,|\band\b|&)[ \t]*[A-Z][\w.'’-]*(?:[ \t]+[A-Z][\w.'’-]*)+)*)[ \t]*$",
    re.M,
)
_PERSON = re.compile(r"[A-Z][\w.'’-]*(?:[ \t]+[A-Z][\w.'’-]*)+")


def _byline(chunk, mentions, subject):
    """The document's subject is owned_by the people of a byline in its first lines."""
    match = _BYLINE.search(chunk.text, 0, 600)
    if match is None:
        return []
    found = []
    for name in _PERSON.finditer(match.group(1)):
        start, end = match.start(1) + name.start(), match.start(1) + name.end()
        for m in mentions:
            if m.start == start and m.end == end and m.norm != subject.norm:
                found.append(RelationCandidate(subject, m, "owned_by", 0.7, 1.0, match.group(0).strip(), "structure"))
                break
    return found


def _qualified_names(chunk, mentions, subject):
    """``json.dumps`` is part of ``json``: a dotted code name is part of its prefix when
    the prefix is the document's subject or is mentioned in the same chunk."""
    found = []
    code = [m for m in mentions if m.type == "code" and not m.features.get("coref")]
    by_norm = {m.norm: m for m in code}
    for m in code:
        if "." not in m.name or m.name.startswith(".") or "/" in m.name:
            continue
        prefix = m.name.rsplit(".", 1)[0]
        if not prefix or "." in m.name.rsplit(".", 1)[1] or m.name.endswith((".py", ".txt", ".cfg", ".toml", ".json", ".yaml", ".yml", ".md", ".html", ".rst")):
            continue
        from .extraction import normalize

        norm = normalize(prefix, "code")
        owner = subject if subject is not None and subject.type == "code" and subject.norm == norm else by_norm.get(norm)
        if owner is not None and owner.norm != m.norm:
            found.append(RelationCandidate(m, owner, "part_of", 0.9, 1.0, m.snippet, "structure"))
    return found


_SETTING_AFTER = re.compile(r"\s+(?:setting|settings|option|options|environment\s+variable|configuration\s+(?:key|option|variable))\b", re.I)
_CONFIG_ROLES = frozenset("envvar option setting".split())


def _configuration(chunk, mentions, subject, context):
    """Settings, options and environment variables of the document's subject:
    ``:envvar:`PYTHONPATH```, ``the CSRF_COOKIE_NAME setting`` → subject configured_via it."""
    masked = context.analyze(chunk).masked
    found = []
    for m in mentions:
        if m.type != "code" or m.norm == subject.norm or m.features.get("coref") or m.start is None:
            continue
        if m.features.get("role") in _CONFIG_ROLES or _SETTING_AFTER.match(masked, m.end):
            found.append(RelationCandidate(subject, m, "configured_via", 0.8, 1.0, m.snippet, "structure"))
    return found


def _section_spans(chunk, heading_re):
    """Spans of the chunk under a matching heading (the whole chunk if its section matches)."""
    text = chunk.text
    section = chunk.section or ""
    trail = list(chunk.headings) if chunk.headings else [h for h in section.split(" > ") if h]
    last_heading = trail[-1] if len(trail) > 1 else ""  # the first heading is the title
    title = (chunk.title or "").strip().lower()
    headings = [
        (m.start(), m.end(), m.group(1) or m.group(2)) for m in heading_lines(text)
        if (m.group(1) or m.group(2)).strip().lower() != title
    ]
    spans = []
    if last_heading and last_heading.strip().lower() != title and heading_re.search(last_heading):
        end = headings[0][0] if headings else len(text)
        spans.append((0, end))
    for i, (start, end, title) in enumerate(headings):
        if heading_re.search(title):
            stop = headings[i + 1][0] if i + 1 < len(headings) else len(text)
            spans.append((end, stop))
    return spans


def _seealso_spans(text):
    if ".. seealso::" not in text:
        return []
    return [(m.start(), m.end()) for m in _SEEALSO_DIRECTIVE.finditer(text)]


# ---------------------------------------------------------------------------------------
# Co-occurrence


def _names_of_kinds(mentions, outer):
    """``(phrase, name)``: the names inside an outer "name and kind noun" phrase ("a WSGI
    library"), things of their own, that co-occur with the sentence as the phrase does."""
    phrases = [p for p in outer if p.type == "concept" and " " in p.name]
    if not phrases:
        return []
    return [
        (p, m) for m in mentions if m.type == "name" and m.start is not None
        for p in phrases if p is not m and _name_and_kind(p, m)
    ]


def cooccurrence_relations(chunk, mentions, context):
    """``related_to`` between neighbouring mentions of a sentence, weighted by proximity.

    Each mention is paired with the next ``cooccurrence_window`` mentions of other
    entities in its sentence, so prose with no verb pattern still forms a connected graph.
    """
    if context.settings.cooccurrence == "off":
        return []
    analysis = context.analyze(chunk)
    masked = analysis.masked
    window = context.settings.cooccurrence_window
    found = []
    groups = {}
    outer = outer_mentions(mentions)
    for m in outer:
        if m.type == "step":
            continue
        groups.setdefault(m.sentence, []).append(m)
    for index, group in groups.items():
        group.sort(key=lambda m: (m.start, -m.length))
        s_start, s_end = analysis.sentences[index]
        sentence = chunk.text[s_start:s_end]
        for i, a in enumerate(group):
            taken = 0
            for b in group[i + 1 :]:
                if taken >= window:
                    break
                if b.norm == a.norm:
                    continue
                taken += 1
                gap = _gap_words(masked[a.end : b.start]) if b.start >= a.end else 0
                weight = 0.5 if min(a.score, b.score) >= 0.7 else 0.35
                found.append(RelationCandidate(a, b, "related_to", weight, 1.0 / (1.0 + 0.1 * gap), sentence, "cooccurrence"))
    twins = _names_of_kinds(mentions, outer)
    if twins:  # "a WSGI library": WSGI co-occurs with what the phrase does
        found += [
            RelationCandidate(name if c.src is phrase else c.src, name if c.dst is phrase else c.dst, c.rel, c.weight, c.proximity, c.sentence, c.extractor)
            for phrase, name in twins for c in list(found) if (c.src is phrase or c.dst is phrase) and name.norm not in (c.src.norm, c.dst.norm)
        ]
    return found


# ---------------------------------------------------------------------------------------
# Stated relations (Open IE)

# Closed word classes of English, for reading a relation phrase without a parser.
_AUXILIARIES = frozenset(
    "am is are was were be been being has have had having do does did".split()
) | MODALS
_RELATION_PREPOSITIONS = frozenset(
    """of in on at to for from by with into onto about over under through between among
    against during without within across after before since until upon via toward towards
    behind beyond near along around throughout as like per up out off down away back above below beneath""".split()
)
# Irregular past forms and participles the verb lexicon lacks: "was born in", "fought in".
_IRREGULAR_PAST = frozenset(
    """born borne bore fought caught drew drawn flew flown forgave forgot forgotten froze frozen
    hung rode ridden rang rung sang sung sank sunk shot slept spoke spoken stole stolen swept
    swam swung tore torn woke woken wove woven bought dealt dug fed fled sought shook shone
    swore sworn wept withdrew withdrawn overcame undertook undertaken arose arisen awoke bent
    bit bitten bled blew blown bred broke broken burnt clung crept drank drunk drove driven
    ate eaten forbade forbidden knelt lent slew smelt sped spun stank stung strode strove
    thrust trod trodden upheld""".split()
)
# Words that end a clause or join two: no relation phrase holds one.
_CLAUSE_WORDS = frozenset(
    """and or but nor yet so because although though while whereas if unless whether which
    who whom whose that where when whenever than then not never cannot""".split()
)
_PHRASE_TOKEN = re.compile(r"\w[\w’'-]*")
_ONLY_WORDS = re.compile(r"[\s\w’'-]*")
_SOME_ADVERBS = frozenset("also later then still often first once already soon again jointly".split())
MAX_STATED_WORDS = 7


def _phrase_class(word, previous=None):
    """The class of one word of a relation phrase: aux, verb, adverb, prep or word;
    ``previous`` the class of the word before (None: the first), which tells whether a
    word such as "helped" or "works" is a verb there."""
    low = word.lower()
    if low in _AUXILIARIES:
        return "aux"
    if low in _RELATION_PREPOSITIONS:
        return "prep"
    if low in _SOME_ADVERBS:
        return "adverb"
    cls = word_class(low)
    if cls == "verb" or low in _IRREGULAR_PAST:
        return "verb"
    if cls == "adverb":
        return "adverb"
    if cls == "ambiguous":  # first, a bare form is as likely a noun: "a time object t"
        verb = previous in ("adverb", "aux", "verb") or previous is None and low.endswith(("s", "ed"))
        return "verb" if verb else "word"
    if cls == "noun" and low.isalpha() and len(low) > 4 and low.endswith("ed"):
        return "verb"  # a past form: "invented", "founded"
    return "word"


def _modifier(word):
    """Whether ``word``, right before a mention, belongs to it: a determiner, a number, an
    adjective, a compound modifier ("Polish-born") or a capitalized word."""
    low = word.lower()
    if low in _AUXILIARIES or low in _RELATION_PREPOSITIONS:
        return False
    return (
        low in DETERMINERS or low in STOPWORDS or "-" in word or word[0].isupper()
        or word_class(low) in ("adj", "number")
    )


def relation_phrase(between, relative=False):
    """The relation phrase the words ``between`` two mentions form, or None.

    ReVerb's syntactic constraint (Fader et al. 2011), read with the word classes this
    package has: a verb, optionally after auxiliaries and adverbs, optionally followed by
    words and ending in a preposition or a verb ("developed", "was born in", "is known
    for", "helped bring about"). The object's determiners and modifiers are left out ("a
    Polish-born"); a clause break (punctuation, a conjunction, a relative pronoun) or a
    negation means no phrase. ``relative``: the words follow "who" or "which", whose
    clause opens with its verb ("which spans").
    """
    if not _ONLY_WORDS.fullmatch(between):
        return None
    words = _PHRASE_TOKEN.findall(between)
    if not words or len(words) > MAX_STATED_WORDS + 3 or any(w.lower() in _CLAUSE_WORDS for w in words):
        return None
    while words and _modifier(words[-1]):  # the object's: "the", "a Polish-born", "its first"
        words.pop()
    if not words or len(words) > MAX_STATED_WORDS or any(w.lower().endswith(("n't", "n’t")) for w in words):
        return None
    classes = []
    for w in words:
        cls = _phrase_class(w, classes[-1] if classes else None)
        if not classes and cls == "word" and w.islower() and w.endswith("s") and (
            relative or len(words) > 1 and words[1].lower() in _RELATION_PREPOSITIONS
        ):
            cls = "verb"  # "which spans": a relative pronoun is the subject of a verb; "X hangs in"
        classes.append(cls)
    if len(words) > 2 and words[-2].lower() == "to" and classes[-3] == "verb" and classes[-1] == "word" and (
        words[-1].isalpha() and words[-1].islower() and not words[-1].endswith("s")
    ):
        classes[-1] = "verb"  # an infinitive after a verb: "used to amplify", "helped to build"
    first = next((c for c in classes if c != "adverb"), None)
    if first not in ("aux", "verb") or classes[-1] not in ("aux", "verb", "prep"):
        return None
    return " ".join(words)


# A preposition before a mention (past its determiners): the mention is that phrase's
# object, not the subject of what follows ("the capital of France is Paris").
_PREPOSITION_BEFORE = re.compile(
    r"\b(?:" + "|".join(sorted(_RELATION_PREPOSITIONS - set("up out off down away back as after before since until".split())))
    + r")\s+(?:(?:the|an?|its|their|his|her|this|these|those)\s+)?$",
    re.I,
)
# What joins a head noun to its prepositional object: "movement of the plates".
_OF_LINK = re.compile(r"\s+(?:of|in|on|at|for|from|with|by|above|below|near)\s+(?:(?:the|an?|its|their|his|her)\s+)?")
# What opens an apposition: "Johannes Gutenberg, a goldsmith from Mainz, developed".
_APPOSITION_OPENING = re.compile(r"\s*(?:a|an|the|(?P<relative>who|which))\s")
# Verbs that link a subject to a noun, which a relation phrase may then hold ("is a city
# on the island of", "became the first woman to win", "has been in the collection of").
_LINKING_VERBS = frozenset("is are was were be been being has have had become becomes became remain remains remained".split())


def _subject(group, k, masked, s_start):
    """The mention a phrase after ``group[k]`` is said of: ``group[k]``, or when that is the
    object of a preposition, the head it hangs on ("the movement of the plates causes");
    None when the chain ends in a preposition ("In 1903 ...", "until the emperor")."""
    for _ in range(3):
        m = group[k]
        if not _PREPOSITION_BEFORE.search(masked, max(s_start, m.start - 24), m.start):
            return m
        if k == 0 or not _OF_LINK.fullmatch(masked, group[k - 1].end, m.start):
            return None
        if _place_of_name(group[k - 1], m, masked):
            return m  # "the island of Crete lies in": Crete does
        k -= 1
    return None


def _apposition_subject(group, k, masked, s_start):
    """X in "X, a goldsmith from Mainz, developed ..." or "X, who lived in Y, designed ...", where ``group[k]`` ends the apposition
    ("Mainz"); None when no apposition opens after a mention."""
    opening = masked.rfind(",", s_start, group[k].start)
    match = _APPOSITION_OPENING.match(masked, opening + 1) if opening >= 0 else None
    if match is None:
        return None
    inside = _WORDS.findall(masked[opening + 1 : group[k].start])[1 if match.group("relative") else 0 :]
    if not _ONLY_WORDS.fullmatch(masked, opening + 1, group[k].start) or any(w.lower() in _CLAUSE_WORDS for w in inside):
        return None
    for j in range(k - 1, -1, -1):
        if group[j].end <= opening:
            if masked[group[j].end : opening].strip():
                return None
            return _subject(group, j, masked, s_start)
    return None


def _stated_object(group, i, masked, start, relative=False):
    """``(mention, phrase)``: the furthest mention after ``group[i]`` that a relation phrase
    from ``start`` reaches, through nouns a linking verb takes ("is a city on the island
    of Honshu": Honshu); None if the words up to the next mention form no phrase."""
    if i + 1 >= len(group) or not _ONLY_WORDS.fullmatch(masked, start, max(start, group[i + 1].start)):
        return None  # no phrase reaches the next mention, nor any after it (``relation_phrase``)
    best = None
    for j in range(i + 1, min(len(group), i + 4)):
        if j > i + 1:
            absorbed = group[j - 1]
            if absorbed.type != "concept":
                break
            verbs = [w.lower() for w in _PHRASE_TOKEN.findall(masked[start : group[i + 1].start])]
            verbs = [w for w in verbs if w in _LINKING_VERBS or _phrase_class(w, "word") in ("aux", "verb")]
            if not verbs or any(w not in _LINKING_VERBS for w in verbs):
                break
        if group[j].start < start:
            break
        phrase = relation_phrase(masked[start : group[j].start], relative)
        if phrase is not None:
            best = (group[j], phrase)
    return best


def stated_relations(chunk, mentions, context):
    """``stated`` edges: a subject and an object that one clause joins with a relation
    phrase (``relation_phrase``), as it asserts them ("Johannes Gutenberg developed the
    printing press", "the painting has been in the collection of the Museum of Modern Art").

    Open IE in ReVerb's manner: the object is the mention after the phrase (past nouns a
    linking verb takes, longest match first); the subject the mention before it, past an
    apposition ("X, a goldsmith from Mainz, developed") and prepositional objects ("the
    movement of the plates causes"). The phrase is kept in the evidence's extractor
    (``stated: developed``); ``refine.stated_facts`` makes it the relation's fact. No edge
    where a typed pattern already joins the two (``pattern_relations``, which runs first).

    Clause structure as ClausIE and OLLIE read it: a relative clause is said of the mention
    before "who", "which" or "that" ("X, which runs on Y"; "X is an engineer who designed Y":
    X; not of a bare kind, "functions that return"), and the main clause goes on past it;
    a participle after a comma is said of the noun before it ("Kyoto University, founded
    in 1897"); with a named subject, the relation is shared by coordinated subjects and
    objects ("A and B founded X", "X developed A, B and C").
    """
    if not getattr(context.settings, "stated", True):
        return []
    analysis = context.analyze(chunk)
    masked = analysis.masked
    typed = context.cache.get(("typed", chunk.id), ())
    joined = {frozenset((c.src.norm, c.dst.norm)) for c in typed}
    found = []
    for index, group in _by_sentence([m for m in mentions if m.type != "step"]).items():
        if len(group) < 2:
            continue
        s_start, s_end = analysis.sentences[index]
        if _CONDITION.match(masked, s_start):
            continue  # "If X uses Y, ...": a condition, no statement
        if not _CLAUSE_END.search(masked, s_start, s_end) or "|" in chunk.text[s_start:s_end]:
            continue  # a heading or a table row, no clause
        sentence = None
        for i, a in enumerate(group[:-1]):
            start = a.end
            relative = _RELATIVE_OPENING.match(masked, start)
            comma = coordinated = None
            if relative:
                start = relative.end()  # "X, who founded Y": X is the clause's subject
            elif i and _AND_VERB.match(masked, start):
                # "He was born in Eisenach and spent his career in Leipzig": a second verb
                # phrase, said of the sentence's subject (a name or pronoun opening it).
                coordinated = _AND_VERB.match(masked, start)
                start = coordinated.end()
            else:
                comma = _COMMA_AFTER.match(masked, start)
                if comma:
                    start = comma.end()
            hit = _stated_object(group, i, masked, start, bool(relative) and "that" not in relative.group())
            if hit is None:
                continue
            b, phrase = hit
            k = group.index(b)
            if b.surface.lower() in _POSSESSIVES and k + 1 < len(group) and not masked[b.end : group[k + 1].start].strip():
                k += 1
                b = group[k]  # "is known for its cables": the pronoun is the object's determiner
            if b.type == "concept" and k + 1 < len(group) and group[k + 1].type != "concept" and (
                not masked[b.end : group[k + 1].start].strip()
            ):
                k += 1
                b = group[k]  # "the Dutch artist Vincent van Gogh": the name says who
            if relative:
                subject = _subject(group, i, masked, s_start)
                if subject is not None:
                    subject = _described(group, subject, masked)  # "X is an engineer who designed"
                if subject is not None and subject.type == "concept":
                    continue  # "functions that return a value": said of a kind, too loose to state
            elif coordinated:
                first = group[0]
                if first.type not in _LISTING or not _OPENING.fullmatch(masked, s_start, first.start) or first is b:
                    continue
                subject = first
            elif comma:
                subject = _apposition_subject(group, i, masked, s_start)
                if subject is None and _participle(phrase):
                    subject = _subject(group, i, masked, s_start)  # "Kyoto University, founded in 1897"
            else:
                subject = _subject(group, i, masked, s_start)
            if subject is None:
                continue
            if sentence is None:
                sentence = chunk.text[s_start:s_end]
            # Lists are shared where a named thing is said of (the docs' lists of code and
            # kinds, "returns A, B and C", add more noise than facts).
            listed = subject.type in _LISTING and b.type not in ("version", "DATE")
            subjects = _conjuncts(group, group.index(subject), masked, -1) if listed and not (relative or comma) else [subject]
            subjects = [m for m in subjects if m is subject or m.type in _LISTING]
            for obj in _conjuncts(group, k, masked, 1) if listed else [b]:
                gap = _gap_words(masked[start : obj.start])
                for subj in subjects:
                    if subj.norm == obj.norm or frozenset((subj.norm, obj.norm)) in joined:
                        continue
                    if _WHERE_IT_IS.fullmatch(phrase) and obj.type in _LISTING and obj.name[:1].isupper():
                        found.append(RelationCandidate(subj, obj, "located_in", 0.6, 1.0 / (1.0 + 0.1 * gap), sentence, "patterns"))
                        continue
                    found.append(RelationCandidate(
                        subj, obj, "stated", 0.55, 1.0 / (1.0 + 0.1 * gap), sentence, STATED_PREFIX + phrase
                    ))
    return found


# A phrase that says where a thing is, before a name: "stands in", "lies on", "has been in
# the collection of" ("was born in", "worked in" say where one was for a while, and a bare
# "is in" is as often a language or a list: "the module is in Python"; those stay stated).
_WHERE_IT_IS = re.compile(
    r"(?:(?:has|have|had)\s+been|stands|stood|lies|lay|sits|sat|hangs|hung)"
    r"(?:\s+(?:now|still|today|also|\w+ly))?\s+(?:in|on|inside|within)(?:\s+the\s+(?:collection|heart|centre|center|middle|north|south|east|west)\s+of)?"
)
_COMMA_AFTER = re.compile(r"\s*,")
_AND_VERB = re.compile(r"\s*,?\s*(?:and|but)\s+(?=[a-z])")
_LISTING = frozenset(("name", "PERSON", "ORG", "GPE", "PRODUCT", "LOC", "NORP", "FAC", "EVENT", "WORK_OF_ART"))
# A relative pronoun right after a mention opens a clause said of it: "X, which runs on Y",
# "the engineer who designed Y".
_RELATIVE_OPENING = re.compile(r"\s*,?\s*(?:who|which|that)\s+")
# A join between conjuncts; one with "and"/"or" closes a list: "A, B and C".
_CONJUNCT_JOIN = re.compile(r"\s*(?:,\s*)?(?:(?P<and>and|or)\s+)?(?:(?:the|an?)\s+)?")
_CLAUSE_END = re.compile(r"[.!?:;]\W*$")
_POSSESSIVES = frozenset("its his her their our your my".split())


def _participle(phrase):
    """Whether a relation phrase opens with a participle and no auxiliary: "founded in",
    "proposed by", "used to amplify" (a reduced relative clause, said of the noun before)."""
    first = phrase.split(None, 1)[0].lower()
    return first not in _AUXILIARIES and (first in _IRREGULAR_PAST or first.endswith("ed") and _phrase_class(first) == "verb")


def _conjuncts(group, k, masked, step):
    """``group[k]`` and the mentions coordinated with it after it (``step`` 1: "developed A,
    B and C") or before it (-1: "A and B founded"): joined by commas, "and" or "or" with
    nothing else between, a list that a comma alone does not end (the last join has the
    "and" or "or"). A pronoun stands alone."""
    result = [group[k]]
    if group[k].features.get("coref"):
        return result
    closed = 1
    j = k + step
    while 0 <= j < len(group) and not group[j].features.get("coref"):
        a, b = (group[j - 1], group[j]) if step > 0 else (group[j], group[j + 1])
        join = _CONJUNCT_JOIN.fullmatch(masked, a.end, b.start)
        if join is None or a.end == b.start or not masked[a.end : b.start].strip():
            break
        result.append(group[j])
        if join.group("and"):
            closed = len(result)
            if step < 0:
                break  # "A, B and C founded": before the subject, the "and" opens the list
        j += step
    if step < 0 and closed == 1:
        return result[:1]
    return result[:closed] if step > 0 else result
