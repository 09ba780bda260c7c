"""Words of general English: the stop-word library's list and the bundled embedding model's
vocabulary, which extraction and the refinement judge names by."""

from functools import lru_cache


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
