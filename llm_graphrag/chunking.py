"""Chunking loaded documents into retrieval units with preludes (seed 004 §5).

Blocks are packed whole into chunks within a token budget that depends on the kind of
document: general 500-1000 tokens, FAQs and glossaries 150-400, procedures 1000-2000.
A chunk breaks at a heading once it holds at least the minimum budget; a break inside a
section repeats the tail sentences of the previous chunk (10-20% of its tokens, 15% aimed
for). Code blocks, lists and tables are never split unless they alone exceed the budget;
oversized blocks are cut at sentence (prose) or line (code, lists, tables) boundaries.

Each chunk has a prelude, stored apart from its text, that places it in its document::

    <path> • <section> • <heading> • <heading>

``path`` is the document's path relative to the ingest root (or as given), ``section``
the chunk's top-level section (the first heading of its heading path below the document
title, or the title for text before any section), and then up to the last two headings
of the path below the section. Empty parts are left out.
"""

from __future__ import annotations

import math
import re
import string
from dataclasses import dataclass

BUDGETS = {"general": (500, 1000), "faq": (150, 400), "procedure": (1000, 2000)}
OVERLAP = 0.15
OVERLAP_RANGE = (0.10, 0.20)
SEPARATOR = " • "
_FENCE_TOKENS = 8  # two lines of ``` are a word and three marks each

_PUNCTUATION = string.punctuation.encode("ascii")
_PUNCTUATION_CHARS = frozenset(string.punctuation)
_SENTENCE_END = re.compile(r"(?:(?<=[.!?])|(?<=[.!?][\"')\]]))\s+(?=[\"'(\[`*]?[A-Z0-9])")


def count_tokens(text: str) -> int:
    """Approximate token count: whitespace-separated words plus ASCII punctuation marks.

    Close to a ``\\w+|[^\\w\\s]`` regex count (punctuation is usually a token of its own
    in subword vocabularies) at several times its speed, and additive over text joined
    with whitespace.
    """
    data = text.encode("utf-8")
    return len(text.split()) + len(data) - len(data.translate(None, _PUNCTUATION))


@dataclass
class Chunk:
    seq: int
    text: str
    prelude: str
    section: str
    headings: tuple
    token_count: int

    @property
    def embed_text(self) -> str:
        return self.prelude + "\n" + self.text


class _Unit:
    """A block, or a piece of an oversized block, ready to pack."""

    __slots__ = ("kind", "raw", "text", "tokens", "path", "heading", "joiner", "overlap")

    def __init__(self, kind, raw, text, tokens, path, heading=False, joiner="\n\n", overlap=False):
        self.kind = kind
        self.raw = raw
        self.text = text
        self.tokens = tokens
        self.path = path
        self.heading = heading
        self.joiner = joiner  # what goes before this unit when it follows another one
        self.overlap = overlap


def _render(kind, raw):
    if kind == "code":
        return "```\n" + raw + "\n```"
    if kind == "quote":
        return "> " + raw.replace("\n", "\n> ")
    return raw


def _pieces(kind, raw):
    """Sentences of prose, or lines (items with their nested lines) of anything else."""
    if kind in ("paragraph", "quote"):
        parts = _SENTENCE_END.split(raw)
        return [p for p in parts if p], " "
    lines = raw.split("\n")
    if kind == "list":
        items = []
        for line in lines:
            if items and line[:1] == " ":
                items[-1] += "\n" + line
            else:
                items.append(line)
        return items, "\n"
    return lines, "\n"


def _cut_word(word, limit):
    """A run without spaces worth more than ``limit`` tokens (minified code, a line of
    marks) cut into pieces worth at most ``limit`` (at least one character each), counted
    as ``count_tokens`` counts: one per run of non-space characters and per punctuation mark."""
    pieces, start, size, in_word = [], 0, 0, False
    for index, char in enumerate(word):
        space = char.isspace()
        cost = (not space and not in_word) + (char in _PUNCTUATION_CHARS)
        if size + cost > limit and index > start:
            pieces.append(word[start:index])
            start, size, in_word = index, 0, False
            cost = (not space) + (char in _PUNCTUATION_CHARS)
        size += cost
        in_word = not space
    pieces.append(word[start:])
    return pieces


def _split_words(text, limit):
    words = text.split(" ")
    out, current, size = [], [], 0
    for word in words:
        tokens = count_tokens(word)
        if tokens > limit:
            if current:
                out.append(" ".join(current))
                current, size = [], 0
            out.extend(_cut_word(word, limit))
            continue
        if current and size + tokens > limit:
            out.append(" ".join(current))
            current, size = [], 0
        current.append(word)
        size += tokens
    if current:
        out.append(" ".join(current))
    return out


def _split_block(kind, raw, tokens, limit):
    """Cut an oversized block into balanced pieces of at most ``limit`` tokens."""
    parts, joiner = _pieces(kind, raw)
    sized = []
    for part in parts:
        size = count_tokens(part)
        if size > limit:
            sized.extend((p, count_tokens(p)) for p in _split_words(part, limit))
        else:
            sized.append((part, size))
    target = tokens / math.ceil(tokens / limit)
    pieces, current, size = [], [], 0
    for part, part_size in sized:
        if current and (size + part_size > limit or size >= target):
            pieces.append(joiner.join(current))
            current, size = [], 0
        current.append(part)
        size += part_size
    if current:
        pieces.append(joiner.join(current))
    return pieces, joiner


def _units(blocks, limit, piece_limit):
    units = []
    for block in blocks:
        kind, raw = block.kind, block.text
        if not raw.strip():
            continue
        if kind == "heading":
            path = tuple(block.headings) + (raw,)
            text = "#" * (block.level or 1) + " " + raw
            units.append(_Unit(kind, raw, text, count_tokens(text), path, heading=True))
            continue
        path = tuple(block.headings)
        text = _render(kind, raw)
        tokens = count_tokens(text)
        if tokens <= limit:
            units.append(_Unit(kind, raw, text, tokens, path))
            continue
        pieces, joiner = _split_block(kind, raw, count_tokens(raw), piece_limit - _FENCE_TOKENS)
        for index, piece in enumerate(pieces):
            text = _render(kind, piece)
            # Code pieces are fenced separately; prose pieces continue the paragraph.
            glue = "\n\n" if index == 0 or kind == "code" else joiner
            units.append(_Unit(kind, piece, text, count_tokens(text), path, joiner=glue))
    return units


def _overlap(group, low, high):
    """Tail of ``group`` to repeat: whole sentences / lines worth ``low``..``high`` tokens."""
    fragments = []  # (source unit, raw text, rendered text), in document order
    total = 0
    for unit in reversed(group):
        if unit.heading or unit.overlap:
            break
        parts, joiner = _pieces(unit.kind, unit.raw)
        taken = []
        if unit.kind == "code":
            total += _FENCE_TOKENS  # the repeated lines are fenced again
        for part in reversed(parts):
            size = count_tokens(part) + (part.count("\n") + 1 if unit.kind == "quote" else 0)
            if total + size > high:
                if total < low and not taken and not fragments:
                    # One long sentence: repeat its last words instead.
                    words = part.split(" ")
                    tail = []
                    for word in reversed(words):
                        word_size = count_tokens(word)
                        if total + word_size > high:
                            break
                        tail.insert(0, word)
                        total += word_size
                    if tail:
                        taken.insert(0, " ".join(tail))
                break
            taken.insert(0, part)
            total += size
            if total >= low:
                break
        if not taken and unit.kind == "code":
            total -= _FENCE_TOKENS
        if taken:
            raw = joiner.join(taken)
            text = _render(unit.kind, raw)
            fragments.insert(0, (unit, raw, text))
        if total >= low or len(taken) < len(parts):
            break
    units = []
    for index, (source, raw, text) in enumerate(fragments):
        joiner = "\n\n" if index == 0 else source.joiner
        units.append(
            _Unit(
                source.kind, raw, text, count_tokens(text), source.path, joiner=joiner, overlap=True
            )
        )
    return units


def _cut(current, low):
    """Where to end a chunk that is full: before trailing headings, or at its last heading
    when the part before that heading holds at least half the minimum budget."""
    cut = len(current)
    while cut > 0 and current[cut - 1].heading:
        cut -= 1
    for index in range(cut - 1, 0, -1):
        if current[index].heading:
            if sum(u.tokens for u in current[:index]) >= low / 2:
                cut = index
            break
    return cut or len(current)


def _pack(units, low, high, overlap):
    """Group units into chunks; returns lists of units (repeated tails included)."""
    groups = []
    current, size, content = [], 0, 0  # content: tokens that are not repeated tail
    for unit in units:
        if unit.heading and content >= low:
            groups.append(current)
            current, size, content = [unit], unit.tokens, unit.tokens
            continue
        while size + unit.tokens > high and any(not (u.heading or u.overlap) for u in current):
            cut = _cut(current, low)
            group, current = current[:cut], current[cut:]
            groups.append(group)
            if overlap > 0 and not (current and current[0].heading):
                # A break inside a section: repeat the tail of the previous chunk.
                group_size = sum(u.tokens for u in group)
                target = max(1, round(group_size * overlap))
                limit = max(target, int(group_size * OVERLAP_RANGE[1]))
                current = _overlap(group, target, limit) + current
            size = sum(u.tokens for u in current)
            content = sum(u.tokens for u in current if not u.overlap)
        # Make room: drop the repeated tail first, then headings left without content:
        # the prelude still names those the unit sits under; others (an empty section's,
        # before a sibling) are a chunk of their own.
        while current and current[0].overlap and size + unit.tokens > high:
            size -= current.pop(0).tokens
        if current and size + unit.tokens > high:
            unnamed = [u for u in current if not (u.heading and u.path == unit.path[: len(u.path)])]
            if unnamed:
                groups.append(unnamed)
            current, size, content = [], 0, 0
        current.append(unit)
        size += unit.tokens
        content += unit.tokens
    if current:
        groups.append(current)
    # A short chunk (under half the minimum, or under the minimum at the end) joins the
    # chunk before it when both fit in the budget.
    merged = groups[:1]
    for index, group in enumerate(groups[1:], 1):
        own = [u for u in group if not u.overlap]
        own_size = sum(u.tokens for u in own)
        small = own_size < (low if index == len(groups) - 1 else low / 2)
        if small and sum(u.tokens for u in merged[-1]) + own_size <= high:
            merged[-1] = merged[-1] + own
        else:
            merged.append(group)
    return merged


def _budget(kind, settings):
    budgets = dict(BUDGETS)
    budgets.update(settings.get("budgets") or {})
    low, high = budgets.get(kind) or budgets["general"]
    overlap = settings.get("overlap", OVERLAP)
    if not 0 <= overlap <= OVERLAP_RANGE[1]:
        raise ValueError(f"overlap must be between 0 and {OVERLAP_RANGE[1]}, not {overlap}")
    return int(low), int(high), overlap


def make_prelude(path: str, title: str, headings, top_heading: str = "") -> tuple:
    """``(prelude, section)`` for a chunk whose first block sits under ``headings``.

    The first heading is dropped from the path when it is the document title (or
    ``top_heading``, the document's single top-level heading).
    """
    parts = list(headings)
    if parts and (parts[0].casefold() == title.casefold() or parts[0] == top_heading):
        parts = parts[1:]
    section = parts[0] if parts else title
    prelude = SEPARATOR.join(p for p in [path, section, *parts[1:][-2:]] if p)
    return prelude, section


def chunk_document(document, settings: dict | None = None) -> list:
    """Split a ``LoadedDocument`` into ``Chunk`` objects.

    ``settings`` may hold ``budgets`` (kind -> ``(min, max)`` tokens, merged over
    ``BUDGETS``), ``overlap`` (fraction of the previous chunk to repeat, at most 0.2;
    0 turns it off) and ``path`` (the path to show in preludes).
    """
    settings = settings or {}
    low, high, overlap = _budget(document.kind or "general", settings)
    # Pieces of oversized blocks leave a fifth of the budget for a repeated tail or
    # the headings above them.
    units = _units(document.blocks, high, high - max(8, high // 5))
    if not units:
        return []
    if sum(u.tokens for u in units) <= high:
        groups = [units]
    else:
        groups = _pack(units, low, high, overlap)
    path = settings.get("path") or document.relpath or document.path
    tops = [b for b in document.blocks if b.kind == "heading"]
    top_heading = ""
    if tops:
        top_level = min(b.level for b in tops)
        top = [b for b in tops if b.level == top_level]
        if len(top) == 1 and top[0] is tops[0]:
            top_heading = top[0].text
    chunks = []
    for seq, group in enumerate(groups):
        parts = [group[0].text]
        for unit in group[1:]:
            parts.append(unit.joiner)
            parts.append(unit.text)
        text = "".join(parts)
        headings = group[0].path
        prelude, section = make_prelude(path, document.title, headings, top_heading)
        chunks.append(
            Chunk(
                seq=seq,
                text=text,
                prelude=prelude,
                section=section,
                headings=headings,
                token_count=sum(u.tokens for u in group),
            )
        )
    return chunks
