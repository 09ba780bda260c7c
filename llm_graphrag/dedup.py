"""Near-duplicate paragraph detection: MinHash-style keys over hashed word shingles.

A paragraph becomes the set of its word 3-grams (lower-cased runs of letters and digits,
so markup and punctuation do not count), each hashed to 40 bits. Within a run the whole
sorted hash set is kept and candidates are compared by their exact Jaccard similarity.
A stored signature holds only the ``k`` smallest hashes (a bottom-k MinHash sketch); for
those, the share of the ``k`` smallest hashes of the union found in both estimates the
Jaccard similarity (exactly, when both paragraphs have at most ``k`` shingles).

Candidates come from an index keyed by a hash of every pair among each set's ``keys``
smallest hashes (its leading MinHash values): paragraphs sharing two of them are compared. A near-duplicate is missed
only if the two share fewer than two of their first five values, which for Jaccard
similarity 0.85 happens about once in a thousand pairs.

A batch of paragraphs (a document) is hashed with a few numpy passes over its bytes, with
no Python work per word; ``is_duplicate()`` hashes one paragraph in plain Python to the
same values. Hashes are deterministic, so sketches and keys can be stored
(``dedup_store.py``) and looked up by a later run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import combinations

import numpy as np

DEDUP_KINDS = ("paragraph", "list", "quote", "table")
_SEPARATOR = "\x1e"
_HASH_BITS = 40
_HASH_MASK = np.uint64((1 << _HASH_BITS) - 1)
_MASK40 = (1 << _HASH_BITS) - 1
_MASK64 = (1 << 64) - 1
_KEY_MASK = (1 << 63) - 1  # index keys fit SQLite's signed integers
_PAIR_MIX = 1 << _HASH_BITS
_WORD_MIX = (0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0xD6E8FEB86659FD93)
_BASE = 0x100000001B3  # odd, so it has an inverse modulo 2**64
_BASE_INVERSE = pow(_BASE, -1, 1 << 64)
# Bytes that belong to words: ASCII letters and digits, and every byte of UTF-8
# multi-byte characters (so accented and non-Latin words count as words).
_WORD_BYTE = np.array([chr(b).isalnum() if b < 128 else True for b in range(256)], dtype=bool)
_POWERS = {}
_WORD_RUN = re.compile(rb"[0-9A-Za-z\x80-\xff]+")


def _powers(size):
    """BASE**i and BASE**-i modulo 2**64 for i < size (cached, grown by doubling)."""
    cached = _POWERS.get("size", 0)
    if cached < size:
        size = max(size, 2 * cached, 1 << 16)
        forward = np.full(size, _BASE, dtype=np.uint64)
        forward[0] = 1
        backward = np.full(size, _BASE_INVERSE, dtype=np.uint64)
        backward[0] = 1
        _POWERS.update(size=size, forward=np.cumprod(forward), backward=np.cumprod(backward))
    return _POWERS["forward"], _POWERS["backward"]


def _mix(x):
    """A fixed 64-bit mixing function (splitmix64's finalizer) over a uint64 array."""
    x = x ^ (x >> np.uint64(30))
    x = x * np.uint64(0xBF58476D1CE4E5B9)
    x = x ^ (x >> np.uint64(27))
    x = x * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def _mix_int(x):
    """``_mix()`` for one Python integer below 2**64."""
    x ^= x >> 30
    x = (x * 0xBF58476D1CE4E5B9) & _MASK64
    x ^= x >> 27
    x = (x * 0x94D049BB133111EB) & _MASK64
    return x ^ (x >> 31)


def similarity(a, b, k=64) -> float:
    """Bottom-k estimate of the Jaccard similarity of two sketches (sequences of hashes)."""
    set_a, set_b = set(a), set(b)
    union = sorted(set_a | set_b)[:k]
    if not union:
        return 0.0
    return len((set_a & set_b).intersection(union)) / len(union)


class NearDuplicateFilter:
    """Remembers paragraphs and says whether a new one nearly repeats one seen before.

    ``threshold`` is the Jaccard similarity of word-3-gram sets at or above which a
    paragraph is a duplicate. Every paragraph of ``min_words`` words or more is
    remembered, duplicate or not (so decisions do not chain); shorter ones are never
    duplicates. ``signatures`` (bytes from ``signature()``) seed the filter.
    ``duplicates`` counts the paragraphs reported as duplicates so far.
    """

    def __init__(self, threshold=0.85, k=64, shingle=3, min_words=8, keys=5, signatures=None):
        if not 1 <= shingle <= len(_WORD_MIX):
            raise ValueError(f"shingle must be between 1 and {len(_WORD_MIX)}")
        self.threshold = threshold
        self.k = k
        self.shingle = shingle
        self.min_words = max(min_words, shingle)
        self.keys = keys
        self.duplicates = 0
        self._index = {}  # pair of leading hashes -> the sketches holding it
        self._sketches = []  # sorted uint64 arrays of shingle hashes
        self._complete = []  # False for signatures, which hold only the k smallest
        self._word_cache = {}  # word bytes -> hash, for is_duplicate()
        for signature in signatures or ():
            self.add_signature(signature)

    # -- sketching -------------------------------------------------------------------

    def _words(self, texts):
        """Hashes of the words of all ``texts`` and the index of the text of each word."""
        joined = _SEPARATOR.join(texts)
        if joined.count(_SEPARATOR) != len(texts) - 1:
            joined = _SEPARATOR.join(text.replace(_SEPARATOR, " ") for text in texts)
        data = np.frombuffer(joined.lower().encode("utf-8"), dtype=np.uint8)
        in_word = np.concatenate(([False], _WORD_BYTE[data], [False]))
        edges = np.flatnonzero(in_word[1:] != in_word[:-1])
        starts, ends = edges[0::2], edges[1::2]
        # A polynomial hash of each word's bytes from prefix sums: the sum of
        # byte * BASE**-i over the word, times BASE**(last i), is position-independent.
        forward, backward = _powers(len(data) + 1)
        prefix = np.zeros(len(data) + 1, dtype=np.uint64)
        np.cumsum((data.astype(np.uint64) + np.uint64(1)) * backward[: len(data)], out=prefix[1:])
        hashes = _mix((prefix[ends] - prefix[starts]) * forward[ends - 1])
        owners = np.searchsorted(np.flatnonzero(data == 0x1E), starts)
        return hashes, owners

    def sketches(self, texts) -> list:
        """Sorted uint64 arrays of the shingle hashes of ``texts``; ``None`` if too short."""
        return self._batch(texts)[0]

    def _batch(self, texts):
        """Sketches for ``texts`` and, for each, the index keys of its leading pairs."""
        out = [None] * len(texts)
        keys = [None] * len(texts)
        if not texts:
            return out, keys
        words, owners = self._words(texts)
        lengths = np.bincount(owners, minlength=len(texts))
        enough = lengths >= self.min_words
        k = self.shingle
        n = len(words) - k + 1
        if n <= 0 or not enough.any():
            return out, keys
        shingles = words[:n] * np.uint64(_WORD_MIX[0])
        for offset in range(1, k):
            shingles = shingles + words[offset : offset + n] * np.uint64(_WORD_MIX[offset])
        # Keep the shingles that start and end in the same paragraph, of a long one.
        keep = (owners[:n] == owners[k - 1 :]) & enough[owners[:n]]
        owner = owners[:n][keep].astype(np.uint64)
        combined = (owner << np.uint64(_HASH_BITS)) | (_mix(shingles[keep]) & _HASH_MASK)
        combined.sort()
        if len(combined) > 1:  # the same shingle twice in a paragraph counts once
            combined = combined[np.concatenate(([True], combined[1:] != combined[:-1]))]
        paragraph = (combined >> np.uint64(_HASH_BITS)).astype(np.int64)
        values = combined & _HASH_MASK
        bounds = np.searchsorted(paragraph, np.arange(len(texts) + 1))
        present = np.flatnonzero(enough)
        # Index keys: a hash of each pair among the first ``keys`` values of a sketch.
        starts, stops = bounds[present], bounds[present + 1]
        pairs = list(combinations(range(self.keys), 2)) or [(0, 0)]
        left = np.array([a for a, _ in pairs])
        right = np.array([b for _, b in pairs])
        valid = (starts[:, None] + right[None, :]) < stops[:, None]
        last = len(values) - 1
        a = values[np.minimum(starts[:, None] + left[None, :], last)]
        b = values[np.minimum(starts[:, None] + right[None, :], last)]
        pair_keys = (_mix(a * np.uint64(_PAIR_MIX) + b) & np.uint64(_KEY_MASK)).tolist()
        whole = valid.all(axis=1).tolist()
        bounds = bounds.tolist()
        for row, index in enumerate(present.tolist()):
            out[index] = values[bounds[index] : bounds[index + 1]]
            if whole[row]:
                keys[index] = pair_keys[row]
            else:
                keys[index] = [key for key, ok in zip(pair_keys[row], valid[row]) if ok]
                if not keys[index]:  # a single distinct shingle: pair it with itself
                    value = int(values[bounds[index]])
                    keys[index] = [_mix_int((value * _PAIR_MIX + value) & _MASK64) & _KEY_MASK]
        return out, keys

    def signature(self, text: str) -> bytes | None:
        """The ``k`` smallest shingle hashes of ``text`` as bytes (for storage), or
        ``None`` if it is too short."""
        sketch = self.sketches([text])[0]
        return None if sketch is None else sketch[: self.k].tobytes()

    def keys_of(self, sketch) -> list:
        """The index keys of a sorted sketch: a hash of each pair among its first
        ``keys`` values (what ``sketches()`` computes alongside)."""
        first = np.asarray(sketch, dtype=np.uint64)[: self.keys]
        pairs = list(combinations(range(len(first)), 2)) or [(0, 0)]
        mixed = _mix(first[[a for a, _ in pairs]] * np.uint64(_PAIR_MIX) + first[[b for _, b in pairs]])
        return (mixed & np.uint64(_KEY_MASK)).tolist()

    def near(self, sketch, other) -> bool:
        """Whether two complete sketches' exact Jaccard similarity reaches the threshold."""
        size, other_size = len(sketch), len(other)
        # Jaccard is at most the smaller size over the larger one.
        if min(size, other_size) < self.threshold * max(size, other_size):
            return False
        shared = len(set(sketch.tolist()).intersection(other.tolist()))
        return shared / (size + other_size - shared) >= self.threshold

    # -- filtering -------------------------------------------------------------------

    def add_signature(self, signature: bytes) -> None:
        """Remember a stored signature without counting it as a duplicate."""
        sketch = np.frombuffer(signature, dtype=np.uint64)
        self._check(sketch, self.keys_of(sketch), complete=False)

    def _check(self, sketch, keys, complete=True, stored=()) -> bool:
        """True if ``sketch`` nearly matches a remembered one or one of ``stored``
        (complete sketches from elsewhere); remember it either way.

        ``keys`` hash every pair of the sketch's first ``keys`` values, so candidates
        are the sketches sharing at least two of those values with this one. Two complete
        shingle sets are compared exactly; a stored signature holds only the ``k``
        smallest values and is compared by the bottom-k estimate.
        """
        index = self._index
        candidates = set()
        for key in keys:
            found = index.get(key)
            if found is not None:
                candidates.update(found)
        duplicate = any(self.near(sketch, other) for other in stored) if complete else False
        for candidate in sorted(candidates):
            if duplicate:
                break
            other = self._sketches[candidate]
            if complete and self._complete[candidate]:
                duplicate = self.near(sketch, other)
            else:
                duplicate = similarity(sketch[: self.k].tolist(), other[: self.k].tolist(), self.k) >= self.threshold
        position = len(self._sketches)
        for key in keys:
            index.setdefault(key, []).append(position)
        self._sketches.append(sketch)
        self._complete.append(complete)
        return duplicate

    def paragraphs(self, texts, stored=None) -> list:
        """A ``Paragraph`` for each text of ``min_words`` words or more (``None`` for
        the others), checked in order: ``dropped`` when it nearly repeats a paragraph
        remembered or, when given, one of the complete sketches ``stored(keys)`` returns
        (``{key: [(id, sketch), ...]}`` for the keys of all the texts)."""
        sketches, keys = self._batch(texts)
        found = {}
        if stored is not None:
            wanted = sorted({key for ks in keys if ks for key in ks})
            found = stored(wanted) if wanted else {}
        out = []
        seq = 0
        for sketch, ks in zip(sketches, keys):
            if sketch is None:
                out.append(None)
                continue
            others = {}
            for key in ks:
                for ident, other in found.get(key, ()):
                    others[ident] = other
            dropped = self._check(sketch, ks, stored=[others[i] for i in sorted(others)])
            self.duplicates += dropped
            out.append(Paragraph(seq, dropped, sketch, ks))
            seq += 1
        return out

    def check_many(self, texts) -> list:
        """``is_duplicate()`` for each text in order, sketched in one batch."""
        return [p is not None and p.dropped for p in self.paragraphs(texts)]

    def is_duplicate(self, text: str) -> bool:
        """True if ``text`` nearly repeats a paragraph seen before; remember it either way.

        One paragraph is sketched in plain Python (numpy's per-call overhead would
        dominate); ``filter_blocks()`` or ``check_many()`` over a whole document is still
        several times faster per paragraph.
        """
        sketch, keys = self._sketch_one(text)
        if sketch is None:
            return False
        duplicate = self._check(sketch, keys)
        self.duplicates += duplicate
        return duplicate

    def _sketch_one(self, text):
        """``_batch([text])`` for one text, with Python integers instead of numpy."""
        words = _WORD_RUN.findall(text.lower().encode("utf-8"))
        if len(words) < self.min_words:
            return None, None
        cache = self._word_cache
        hashes = []
        for word in words:
            value = cache.get(word)
            if value is None:
                value = 0
                for byte in word:
                    value = (value * _BASE + byte + 1) & _MASK64
                value = cache[word] = _mix_int(value)
            hashes.append(value)
        size = self.shingle
        if size == 3:
            m0, m1, m2 = _WORD_MIX[:3]
            combined = [a * m0 + b * m1 + c * m2 for a, b, c in zip(hashes, hashes[1:], hashes[2:])]
        else:
            columns = zip(*(hashes[offset:] for offset in range(size)))
            combined = [sum(h * m for h, m in zip(group, _WORD_MIX)) for group in columns]
        values = {_mix_int(value & _MASK64) & _MASK40 for value in combined}
        sketch = sorted(values)
        first = sketch[: self.keys]
        pairs = combinations(first, 2) if len(first) > 1 else [(first[0], first[0])]
        keys = [_mix_int((a * _PAIR_MIX + b) & _MASK64) & _KEY_MASK for a, b in pairs]
        return np.array(sketch, dtype=np.uint64), keys

    def filter_blocks(self, blocks, kinds=DEDUP_KINDS, stored=None) -> tuple:
        """Drop near-duplicate blocks of the given kinds; returns ``(kept, skipped_count)``.

        Headings and code blocks are always kept. Faster than ``is_duplicate()`` per
        block, because the whole list is sketched in one batch.
        """
        kept, paragraphs = self.filter_document(blocks, kinds, stored)
        return kept, sum(p.dropped for p in paragraphs)

    def filter_document(self, blocks, kinds=DEDUP_KINDS, stored=None) -> tuple:
        """``filter_blocks()`` returning ``(kept, paragraphs)``: the ``Paragraph`` of each
        block checked, in order (``stored`` as for ``paragraphs()``)."""
        positions = [i for i, block in enumerate(blocks) if block.kind in kinds]
        checked = self.paragraphs([blocks[i].text for i in positions], stored)
        dropped = {i for i, p in zip(positions, checked) if p is not None and p.dropped}
        paragraphs = [p for p in checked if p is not None]
        if not dropped:
            return list(blocks), paragraphs
        return [b for i, b in enumerate(blocks) if i not in dropped], paragraphs


@dataclass
class Paragraph:
    """A paragraph long enough to be checked: its place among those of its document,
    whether it was dropped, its complete sketch and its index keys."""

    seq: int
    dropped: bool
    sketch: np.ndarray
    keys: list
