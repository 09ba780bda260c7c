"""Verification of a research run directory: seed 002's ``evidence/verify.json``.

The rules, applied to ``drafts/paragraphs.jsonl`` and ``evidence/citations.json``:

* A cite id **resolves** when ``citations.json`` lists it and its ``local_path`` (relative
  to the run directory) holds the cited text, whose SHA-256 is its ``quote_hash``.
* A paragraph's **claims** are its sentences, citation markers (``[C001]``) removed.
* A text **supports** a claim when the claim appears in it word for word (whitespace
  aside). Otherwise (a generated paragraph) when every number of the claim appears in
  the text, at least ``SUPPORT_SHARE`` of the claim's content words (lemmas of its
  non-stopwords) do, and the text's sentence sharing most of them is negated exactly when
  the claim is. A claim is supported when one of its paragraph's resolving citations
  supports it, or all of them together do.
* A paragraph **passes** when it has cite ids and claims, and each claim is supported.
  ``single_source_claims_count`` counts supported claims that exactly one citation
  supports on its own.
* **Conflicts**: the cited facts are, for each supported claim, the sentence of each
  citation that supports it sharing most of its content words. Two different facts
  conflict when they share at least ``CONFLICT_MIN_SHARED`` content words (numbers and
  negations aside), those make at least ``CONFLICT_OVERLAP`` of their union, and one
  is negated and the other not, or both state numbers and the numbers differ
  ("keeps readings for 30 days" against "... for 90 days").
* ``paragraph_end_citation_passed``: every paragraph ends with the markers of its cite
  ids (all of them, nothing after). ``paragraphs_jsonl_cite_ids_passed``: every line is
  a JSON object with a ``text`` string and a non-empty ``cite_ids`` list of ``C###`` ids
  that ``citations.json`` lists. ``citations_found``: the distinct cite ids of the
  paragraphs that resolve.
* ``passed``: there are paragraphs, each passes, every cite id resolves, both checks
  pass and nothing conflicts.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import pathlib
import re
from dataclasses import dataclass, field

CITE_ID = re.compile(r"^C\d{3}$")
MARKER = re.compile(r"\[(C\d{3})\]")
_END_MARKERS = re.compile(r"(?:\s*\[C\d{3}\])+\s*$")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_WORD = re.compile(r"[^\W_]+|n't", re.UNICODE)
NEGATIONS = frozenset({"not", "no", "never", "cannot", "without", "none", "nor", "neither", "n't"})
SUPPORT_SHARE = 0.8
CONFLICT_MIN_SHARED = 3
CONFLICT_OVERLAP = 0.7

PARAGRAPHS = "drafts/paragraphs.jsonl"
CITATIONS = "evidence/citations.json"
VERIFY = "evidence/verify.json"


class RunDirectoryError(Exception):
    """A run directory without the files verification reads; names the missing one."""


def quote_hash(text):
    """SHA-256 (hex) of the cited text, as ``citations.json`` stores it."""
    return hashlib.sha256(text.encode("utf8")).hexdigest()


def _squash(text):
    return " ".join(text.split())


def sentences(text):
    """Sentences of ``text`` (extraction's splitter), whitespace squashed."""
    from .extraction import split_sentences

    return [_squash(text[a:b]) for a, b in split_sentences(text) if text[a:b].strip()]


def content_words(text):
    """Lemmas of the words of ``text`` that are not stopwords, numbers or negations, a
    final e dropped (the light lemmatizer gives ``cache`` but ``caches``: ``cach``)."""
    from .extraction import STOPWORDS, lemma

    return {
        lemma(w).removesuffix("e")
        for w in (w.lower() for w in _WORD.findall(text))
        if w not in STOPWORDS and w not in NEGATIONS and len(w) > 1 and not w.isdigit()
    }


def numbers(text):
    return set(_NUMBER.findall(text))


def negated(text):
    return any(w.lower() in NEGATIONS or w.lower().endswith("n't") for w in _WORD.findall(text))


class Source:
    """A cited text, analysed once."""

    def __init__(self, cid, text):
        self.cid = cid
        self.text = text
        self.squashed = _squash(text)
        self.words = content_words(text)
        self.numbers = numbers(text)
        self.sentences = [(s, content_words(s)) for s in sentences(text)] or [(self.squashed, self.words)]

    def best_sentence(self, words):
        """The sentence sharing most of ``words`` (the first of equals)."""
        return max(self.sentences, key=lambda item: len(item[1] & words))[0]


def supports(claim, texts):
    """Whether the ``Source`` objects ``texts`` together support the sentence ``claim``."""
    squashed = _squash(claim)
    if any(squashed in source.squashed for source in texts):
        return True
    words = content_words(claim)
    if not numbers(claim) <= set().union(*(s.numbers for s in texts)):
        return False
    if words:
        known = set().union(*(s.words for s in texts))
        if len(words & known) / len(words) < SUPPORT_SHARE:
            return False
    best = max(
        (sentence for source in texts for sentence in source.sentences),
        key=lambda item: len(item[1] & words),
    )
    return negated(best[0]) == negated(claim)


def conflict(a, b):
    """Whether the cited facts (sentences) ``a`` and ``b`` contradict each other."""
    words_a, words_b = content_words(a), content_words(b)
    shared = words_a & words_b
    if len(shared) < CONFLICT_MIN_SHARED or len(shared) / len(words_a | words_b) < CONFLICT_OVERLAP:
        return False
    if negated(a) != negated(b):
        return True
    numbers_a, numbers_b = numbers(a), numbers(b)
    return bool(numbers_a and numbers_b and numbers_a != numbers_b)


@dataclass
class ParagraphCheck:
    index: int
    text: str
    cite_ids: list
    claims: list = field(default_factory=list)  # {"text", "supported", "sources"}
    well_formed: bool = True
    ends_with_citations: bool = False

    @property
    def passed(self):
        return (
            bool(self.cite_ids and self.claims)
            and self.well_formed
            and all(c["supported"] for c in self.claims)
        )

    def to_dict(self):
        return {
            "index": self.index,
            "passed": self.passed,
            "cite_ids": self.cite_ids,
            "ends_with_citations": self.ends_with_citations,
            "claims": self.claims,
        }


@dataclass
class VerifyReport:
    """``summary`` is verify.json; ``paragraphs`` say which claims failed and why."""

    summary: dict
    paragraphs: list


def read_paragraphs(run_dir):
    """``[(index, object or None)]`` of the non-blank lines of ``paragraphs.jsonl``."""
    path = pathlib.Path(run_dir) / PARAGRAPHS
    if not path.exists():
        raise RunDirectoryError(f"{path} does not exist: is {run_dir} a research run directory?")
    lines = []
    for index, line in enumerate(path.read_text(encoding="utf8").splitlines()):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except ValueError:
            data = None
        lines.append((index, data))
    return lines


def read_sources(run_dir):
    """``({cid: Source}, listed cids)``: the citations whose text resolves, and all listed."""
    run_dir = pathlib.Path(run_dir)
    path = run_dir / CITATIONS
    if not path.exists():
        raise RunDirectoryError(f"{path} does not exist: is {run_dir} a research run directory?")
    try:
        citations = json.loads(path.read_text(encoding="utf8"))
    except ValueError as ex:
        raise RunDirectoryError(f"{path} is not JSON: {ex}") from ex
    if not isinstance(citations, list):
        raise RunDirectoryError(f"{path} must hold a JSON list of citations")
    listed, sources = set(), {}
    for citation in citations:
        if not isinstance(citation, dict) or not isinstance(citation.get("cid"), str):
            continue
        listed.add(citation["cid"])
        local = citation.get("local_path")
        if not local:
            continue
        file = run_dir / local
        if not file.is_file():
            continue
        text = file.read_text(encoding="utf8")
        if citation.get("quote_hash") != quote_hash(text):
            continue
        sources[citation["cid"]] = Source(citation["cid"], text)
    return sources, listed


def verify_directory(run_dir):
    """Check a run directory's paragraphs against its citations: a ``VerifyReport``."""
    lines = read_paragraphs(run_dir)
    sources, listed = read_sources(run_dir)
    checks = []
    ids_ok = True
    used = set()
    facts = []  # (cid, sentence) of every supported claim
    for index, data in lines:
        text = data.get("text") if isinstance(data, dict) else None
        cite_ids = data.get("cite_ids") if isinstance(data, dict) else None
        well_formed = (
            isinstance(text, str)
            and isinstance(cite_ids, list)
            and bool(cite_ids)
            and all(isinstance(c, str) and CITE_ID.match(c) and c in listed for c in cite_ids)
        )
        ids_ok = ids_ok and well_formed
        text = text if isinstance(text, str) else ""
        cite_ids = [c for c in cite_ids if isinstance(c, str)] if isinstance(cite_ids, list) else []
        used.update(cite_ids)
        check = ParagraphCheck(index, text, cite_ids, well_formed=well_formed)
        tail = _END_MARKERS.search(text)
        check.ends_with_citations = bool(cite_ids) and tail is not None and (
            sorted(set(MARKER.findall(tail.group()))) == sorted(set(cite_ids))
        )
        cited = [sources[c] for c in dict.fromkeys(cite_ids) if c in sources]
        for claim in sentences(MARKER.sub(" ", text)):
            alone = [s.cid for s in cited if supports(claim, [s])]
            supported = bool(alone) or (bool(cited) and supports(claim, cited))
            check.claims.append({"text": claim, "supported": supported, "sources": alone})
            if supported:
                words = content_words(claim)
                for source in cited if not alone else [s for s in cited if s.cid in alone]:
                    facts.append((source.cid, source.best_sentence(words)))
        checks.append(check)
    distinct_facts = list(dict.fromkeys(sentence for _, sentence in facts))
    conflicts = sum(conflict(a, b) for a, b in itertools.combinations(distinct_facts, 2))
    found = len([c for c in used if c in sources])
    claims = [claim for check in checks for claim in check.claims]
    summary = {
        "stage": "verify",
        "status": "completed",
        "verified_claims_count": sum(c["supported"] for c in claims),
        "single_source_claims_count": sum(c["supported"] and len(c["sources"]) == 1 for c in claims),
        "conflicts_count": conflicts,
        "total_paragraphs": len(checks),
        "paragraph_without_citation_count": sum(not check.cite_ids for check in checks),
        "paragraph_end_citation_passed": all(check.ends_with_citations for check in checks),
        "paragraphs_jsonl_cite_ids_passed": ids_ok,
        "citations_found": found,
    }
    summary["passed"] = bool(
        checks
        and all(check.passed for check in checks)
        and found == len(used)
        and summary["paragraph_end_citation_passed"]
        and ids_ok
        and conflicts == 0
    )
    return VerifyReport(summary, [check.to_dict() for check in checks])
