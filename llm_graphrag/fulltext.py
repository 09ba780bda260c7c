"""Full-text search of questions: their content words and the FTS5 expressions for them."""

import functools
import re

WORD = re.compile(r"[^\W_]+", re.UNICODE)  # a word: letters and digits, no underscore


@functools.lru_cache(maxsize=1)
def _stopwords():
    from .extraction import STOPWORDS

    return STOPWORDS


def query_words(text):
    """Lower-case words of ``text`` without stopwords (all words when only stopwords)."""
    stopwords = _stopwords()
    words = [w.lower() for w in WORD.findall(text or "")]
    content = [w for w in words if w not in stopwords and len(w) > 1]
    return list(dict.fromkeys(content or words))


def fts_match(words, prefix=False):
    """An FTS5 expression matching any of ``words`` (quoted: never a syntax error).

    ``prefix`` also matches words that start with each one.
    """
    star = "*" if prefix else ""
    return " OR ".join('"{}"{}'.format(w.replace('"', ""), star) for w in words)


def fts_query(text):
    """The FTS5 expression keyword search uses for free ``text`` (stopwords dropped)."""
    return fts_match(query_words(text))
