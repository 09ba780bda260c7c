import contextlib
import pathlib
import re

import numpy as np
import pytest

from llm_graphrag import extraction
from llm_graphrag.db import open_database
from llm_graphrag.extract import EXTRACTOR_VERSION, extract_and_link
from llm_graphrag.extraction import (
    ExtractionSettings,
    Analysis,
    ChunkText,
    ExtractionContext,
    Gazetteer,
    finish_mentions,
    lemma,
    normalize,
    salient_terms,
    subject_mention,
)
from llm_graphrag.schema import set_setting

ALL = (
    extraction.markup_mentions,
    extraction.pattern_mentions,
    extraction.identifier_mentions,
    extraction.name_mentions,
    extraction.concept_mentions,
    extraction.step_mentions,
    extraction.gazetteer_mentions,
)


def mentions_of(text, title="", extractors=ALL, gazetteer=None):
    chunk = ChunkText(1, 1, text, title=title)
    context = ExtractionContext(gazetteer=gazetteer)
    context.start_document([chunk])
    context.cache["subject"] = subject_mention(title)
    found = []
    for extract in extractors:
        found.extend(extract(chunk, context))
    return finish_mentions(chunk, found, context)


def names(mentions):
    return [(m.name, m.type) for m in mentions]


@pytest.mark.parametrize(
    "word,expected",
    [
        ("lakes", "lake"),
        ("damming", "dam"),
        ("dammed", "dam"),
        ("bodies", "body"),
        ("boxes", "box"),
        ("making", "make"),
        ("evaporating", "evaporate"),
        ("species", "species"),
        ("children", "child"),
        ("glass", "glass"),
        ("virus", "virus"),
        ("analysis", "analysis"),
        ("volcanoes", "volcano"),
        ("string", "string"),
        ("lake", "lake"),
    ],
)
def test_lemma(word, expected):
    assert lemma(word) == expected


@pytest.mark.parametrize(
    "surface,type,expected",
    [
        ("Kenji Morita", "name", "kenjimorita"),
        ("stream blockages", "concept", "streamblockage"),
        ("Windows", "name", "windows"),
        ("windows", "concept", "window"),
        ("DLLs", "name", "dll"),
        ("3.4", "version", "3.4"),
        ("v3.2.0", "version", "3.2.0"),
        ("RFC 7159", "standard", "rfc7159"),
        ("os.path.join", "code", "ospathjoin"),
        ("Tcl/Tk", "name", "tcltk"),
        ("__dict__", "code", "__dict__"),  # code keeps the underscores and dashes around it
        ("dict", "code", "dict"),
        ("--version", "code", "--version"),
        ("_asdict()", "code", "_asdict"),
        ("py_object", "code", "pyobject"),
        ("__dict__", "concept", "dict"),
    ],
)
def test_normalize(surface, type, expected):
    assert normalize(surface, type) == expected


def test_prose_concepts_share_lemmas():
    mentions = mentions_of(
        "damming a river can cause a lake to form. "
        "Other lakes formed throughout the region caused by stream blockages."
    )
    # Names are the words as written; norms put the inflections together.
    assert names(mentions) == [
        ("damming", "concept"),
        ("river", "concept"),
        ("lake", "concept"),
        ("lakes", "concept"),
        ("region", "concept"),
        ("stream blockages", "concept"),
        ("blockages", "concept"),
    ]
    assert [m.norm for m in mentions] == [
        "dam", "river", "lake", "lake", "region", "streamblockage", "blockage",
    ]
    assert [m.sentence for m in mentions] == [0, 0, 0, 1, 1, 1, 1]


def test_mention_record():
    text = "Basin uses `riffle` to read sensors."
    mentions = mentions_of(text)
    assert [
        (m.surface, m.type, m.start, m.end, m.score, m.features, m.snippet, m.extractor)
        for m in mentions
    ] == [
        ("Basin", "concept", 0, 5, 0.6, {"np": 1}, text, "concepts"),
        ("riffle", "code", 12, 18, 0.95, {"codeFont": True, "role": "literal"}, text, "markup"),
        ("sensors", "concept", 28, 35, 0.6, {"np": 1}, text, "concepts"),
    ]
    assert [(m.name, m.norm) for m in mentions] == [("Basin", "basin"), ("riffle", "riffle"), ("sensors", "sensor")]


def test_markup_rst_and_markdown():
    text = (
        "The :mod:`json` module and ``pip`` follow :pep:`405`. "
        "See `Sphinx <https://www.sphinx-doc.org/>`_ and **Beacon**, "
        "also :func:`os.path.join() <os.path.join>` and :term:`virtual environment`."
    )
    mentions = mentions_of(text, extractors=(extraction.markup_mentions,))
    assert [(m.surface, m.name, m.type) for m in mentions] == [
        ("json", "json", "code"),
        ("pip", "pip", "code"),
        (":pep:`405`", "PEP 405", "standard"),
        ("Sphinx", "Sphinx", "term"),
        ("Beacon", "Beacon", "term"),
        ("os.path.join()", "os.path.join", "code"),
        ("virtual environment", "virtual environment", "term"),
    ]


def test_patterns_versions_standards_ids_years():
    text = (
        "Requires SQLite 3.7.15 or v2.0.1-rc1, see RFC 7159, ECMA-404 and FIPS 180-2. "
        "Station AC-01 failed (CVE-2023-1234). Founded in 1998, rebuilt in the 1990s."
    )
    mentions = mentions_of(text, extractors=(extraction.pattern_mentions,))
    assert names(mentions) == [
        ("3.7.15", "version"),
        ("v2.0.1-rc1", "version"),
        ("RFC 7159", "standard"),
        ("ECMA-404", "standard"),
        ("FIPS 180-2", "standard"),
        ("AC-01", "id"),
        ("CVE-2023-1234", "id"),
        ("1998", "DATE"),
        ("1990s", "DATE"),
    ]


def test_identifiers():
    text = "Call os.path.join or read_config, then ZoneInfo; JavaScript uses requirements.txt."
    mentions = mentions_of(text, extractors=(extraction.identifier_mentions,))
    assert names(mentions) == [
        ("os.path.join", "code"),
        ("read_config", "code"),
        ("ZoneInfo", "code"),  # written like code: code, whatever NER says
        ("JavaScript", "code"),
        ("requirements.txt", "code"),
    ]


def test_names_and_acronyms():
    text = (
        "Python was created by Guido van Rossum at Stichting\nMathematisch Centrum in the "
        "Netherlands. Thanks to Fred L. Drake, Jr. and the PSF for DLLs of 4 GiB."
    )
    mentions = mentions_of(text, extractors=(extraction.name_mentions,))
    assert names(mentions) == [
        ("Guido van Rossum", "name"),
        ("Stichting Mathematisch Centrum", "name"),
        ("Netherlands", "name"),
        ("Fred L. Drake, Jr", "name"),
        ("PSF", "name"),
        ("DLLs", "name"),
    ]


def test_a_verb_the_text_writes_in_lower_case_is_no_name_alone():
    """A capitalised verb alone after a colon ("3.6: Accepts") is no name when the text also
    writes it in lower case; a verb used as a product's name ("by Excel") stays one."""
    text = "Changed in version 3.6: Accepts a path. The loader accepts a file. Data is read by Excel, line by line."
    found = [m.name for m in mentions_of(text, extractors=(extraction.name_mentions,))]
    assert "Accepts" not in found
    assert "Excel" in found


def test_a_capitalised_identifier_outside_backticks_is_code():
    """snake_case and dotted attribute names stay code wherever they are found: "The
    method FTP_TLS.prot_p secures it; see TarFile.getnames." names code, not people."""
    found = names(mentions_of(
        "The method FTP_TLS.prot_p secures the channel; see TarFile.getnames for members.",
        extractors=(extraction.name_mentions,),
    ))
    assert ("FTP_TLS.prot_p", "code") in found and ("TarFile.getnames", "code") in found


def test_capitalized_first_word_is_a_name_only_when_the_document_says_so():
    assert names(mentions_of("Frogs are amphibians.")) == [
        ("frogs", "concept"),  # a regular plural opening a sentence is a common noun
        ("amphibians", "concept"),
    ]
    assert names(mentions_of("Heron stores readings. Basin reads Heron.")) == [
        ("Heron", "name"),
        ("readings", "concept"),
        ("Basin", "concept"),  # only ever first in its sentence
        ("Heron", "name"),
    ]


def test_a_kind_noun_after_a_name_is_a_kind_with_a_but_the_name_with_the():
    found = names(mentions_of("Heron is a WSGI library. Use the Basin toolkit.", extractors=(extraction.concept_mentions,)))
    assert ("WSGI library", "concept") in found  # a kind of library
    found = names(mentions_of("It lets your Heron site serve pages.", extractors=(extraction.concept_mentions,)))
    assert ("Heron site", "concept") in found  # a possessive too: a site of yours, built with Heron
    assert not [n for n, _ in found if "toolkit" in n]  # "the Basin toolkit" is Basin
    # The name stays a thing of its own, not a modifier ("Python users" drops Python).
    assert ("Tide", "name") in names(mentions_of("Heron is a Tide library for parsing."))
    assert ("Tide library", "concept") in names(mentions_of("Heron is a Tide library for parsing."))


def test_a_possessive_ends_its_phrase():
    text = "Sellers keep the kernel’s page cache warm, and the library's build system reads Oracle's manual."
    assert [(m.surface, m.name, m.type) for m in mentions_of(text)] == [
        ("Sellers", "sellers", "concept"),  # a plural opening the sentence: a common noun
        ("kernel", "kernel", "concept"),
        ("page cache", "page cache", "concept"),
        ("cache", "cache", "concept"),
        ("library", "library", "concept"),
        ("build system", "build system", "concept"),
        ("system", "system", "concept"),
        ("Oracle", "Oracle", "name"),
        ("manual", "manual", "concept"),
    ]


def test_a_leading_modifier_from_the_stop_word_library_is_trimmed():
    text = "The specified buffer holds various log formats and associated metadata with dissolved oxygen."
    assert [(m.surface, m.type) for m in mentions_of(text)] == [
        ("buffer", "concept"),  # "specified", "various", "associated": stop words of the library
        ("log formats", "concept"),
        ("formats", "concept"),
        ("metadata", "concept"),
        ("dissolved oxygen", "concept"),  # a modifier the list does not hold stays
        ("oxygen", "concept"),
    ]


def test_a_one_word_concept_right_before_a_name_is_its_modifier():
    text = "Send a signed Kestrel Token with every outgoing `HeronRequest`, and read the tokens Basin writes."
    assert [(m.surface, m.type) for m in mentions_of(text)] == [
        ("Kestrel Token", "name"),  # not "signed"
        ("HeronRequest", "code"),  # not "outgoing"
        ("tokens", "concept"),  # a plural is no modifier: it stays before "Basin"
        ("Basin", "name"),
    ]


def test_coref_lite():
    text = (
        "The :mod:`sqlite3` module was written by Gerhard Häring. It provides an SQL interface. "
        "It's also possible to use PostgreSQL."
    )
    mentions = mentions_of(text, title=":mod:`sqlite3` --- DB-API 2.0 interface")
    corefs = [(m.surface, m.name, m.type, m.features) for m in mentions if m.antecedent]
    assert corefs == [
        ("It", "sqlite3", "code", {"antecedent": "sqlite3", "coref": True}),
    ]


def test_this_module_resolves_to_document_subject():
    mentions = mentions_of(
        "This module provides an interface for parsing TOML. It does not write TOML.",
        title="tomllib — Parse TOML files",
    )
    assert [(m.surface, m.name) for m in mentions if m.antecedent] == [
        ("This module", "tomllib"),
        ("It", "tomllib"),
    ]


def test_steps():
    text = (
        "To release:\n\n"
        "1. Create the branch.\n"
        "2. Install the tools with pip.\n"
        "3. If tests fail, stop here.\n\n"
        "Reading order:\n\n"
        "1. Heron\n"
        "2. Basin\n"
    )
    mentions = [m for m in mentions_of(text) if m.type == "step"]
    assert [(m.name, m.features) for m in mentions] == [
        ("Create the branch", {"step": 1}),
        ("Install the tools with pip", {"step": 2}),
        ("If tests fail, stop here", {"step": 3}),
    ]


def test_a_step_keeps_the_phrases_inside_it():
    text = "1. Issue a certificate.\n2. Watch `stations` in the Platform dashboard for an hour.\n"
    found = names(mentions_of(text))
    assert ("Platform dashboard", "concept") in found and ("stations", "code") in found
    assert ("Platform", "name") not in found  # a name used as a modifier inside the phrase


def test_sentences_split_on_indentation_and_not_on_initials():
    text = "   global interpreter lock\n      The mechanism used by CPython.\nFred L. Drake wrote it."
    analysis = Analysis(text)
    assert [text[a:b] for a, b in analysis.sentences] == [
        "global interpreter lock",
        "The mechanism used by CPython.",
        "Fred L. Drake wrote it.",
    ]


def test_code_blocks_are_masked():
    text = "Use this::\n\n    import json\n    json.dumps(x)\n\nThen ``json`` again.\n\n```\nsecret_thing()\n```\n"
    mentions = mentions_of(text)
    assert names(mentions) == [("json", "code")]


def test_salient_terms_and_gazetteer():
    text = "# Alert rules\n\nUse **dissolved oxygen** limits with `basin-rules.yaml`.\n"
    assert sorted(salient_terms(text, "Basin alerting")) == [
        ("alert", "alert", "term"),
        ("alertrule", "alert rules", "term"),
        ("basin", "basin", "term"),
        ("basinalert", "basin alerting", "term"),
        ("basinrulesyaml", "basin-rules.yaml", "code"),
        ("dissolvedoxygen", "dissolved oxygen", "term"),
        ("oxygen", "oxygen", "term"),
    ]
    gazetteer = Gazetteer([("dissolved oxygen", "term", 3), ("Heron API", "term", 2)])
    mentions = mentions_of(
        "Low Dissolved Oxygen worries the heron api team.",
        extractors=(extraction.gazetteer_mentions,),
        gazetteer=gazetteer,
    )
    assert [(m.surface, m.name, m.type, m.features) for m in mentions] == [
        ("Dissolved Oxygen", "Dissolved Oxygen", "term", {"isGazetteerHit": True}),
        ("heron api", "heron api", "term", {"isGazetteerHit": True}),
    ]


def test_gazetteer_single_words_match_only_where_they_are_distinctive():
    # Code spans of the python3.11-doc corpus: the ``To`` of an e-mail header and a
    # ``./package/`` path once tagged every "to" and "package" of its prose.
    gazetteer = Gazetteer(
        [("To", "code", 40), ("./package/", "code", 30), ("ANY", "code", 20), ("NUMBER", "code", 9),
         ("Python", "term", 90), ("os.path", "code", 12), ("NumPy", "term", 5)]
    )
    assert sorted(gazetteer.terms) == [("number",), ("numpy",), ("os.path",), ("python",)]
    mentions = mentions_of(
        "To add a package to Python, see os.path; any number matches NUMBER. Python and numpy agree.",
        extractors=(extraction.gazetteer_mentions,),
        gazetteer=gazetteer,
    )
    assert [m.surface for m in mentions] == ["Python", "os.path", "NUMBER", "Python", "numpy"]


def test_same_span_mentions_merge_keeping_the_specific_type():
    mentions = mentions_of("Reports from AC-01 arrived.", extractors=(extraction.pattern_mentions, extraction.name_mentions))
    assert [(m.name, m.type, m.extractor) for m in mentions] == [("AC-01", "id", "patterns+names")]


def test_subject_mention():
    assert subject_mention(":mod:`json` --- JSON encoder and decoder").name == "json"
    assert subject_mention("tomllib — Parse TOML files").name == "tomllib"
    assert subject_mention("Basin").type == "name"
    assert subject_mention("Introduction") is None
    assert subject_mention("") is None


def test_a_plural_or_possessive_title_names_no_subject():
    # A page titled with a plural common noun lists such things; a possessive is a phrase.
    assert subject_mention("Settings") is None
    assert subject_mention("Django’s cache framework") is None
    assert subject_mention("Harbor's relay") is None
    assert subject_mention("Relay").name == "Relay"
    assert subject_mention("Kyoto").name == "Kyoto"
    assert subject_mention("Harbor relays").name == "Harbor relays"


def test_the_before_a_noun_phrase_title_is_no_part_of_its_subject():
    assert subject_mention("The Basin query language").name == "Basin query language"
    assert subject_mention("The Tide Atlas").name == "The Tide Atlas"  # a title, every word capitalised






# ---------------------------------------------------------------------------------------
# The engine: extract_and_link over a real database


def _db_with(tmp_path, docs):
    """A database holding ``docs``, extracted by the rule-based extractors only: the exact
    graphs below do not depend on whether the spacy extra is installed."""
    db = open_database(tmp_path / "graphrag.db")
    set_setting(db, "extract", {"ner": "off"})
    with db.atomic():
        for doc_id, (title, text) in enumerate(docs, 1):
            db["docs"].insert({"id": doc_id, "path": f"/docs/{doc_id}.md", "title": title, "hash": f"h{doc_id}"})
            db["chunks"].insert({"doc_id": doc_id, "seq": 0, "content": text})
    return db


SERVICES = [
    ("Basin", "# Basin\n\nBasin is the alerting service. It uses `riffle` to read `tidepool`."),
    ("Heron", "# Heron\n\nThe Heron service depends on `tidepool`."),
]


def _relations(db):
    return db.execute(
        "select s.name, r.rel, d.name, r.fact, r.evidence_count from relations r "
        "join entities s on s.id = r.src_id join entities d on d.id = r.dst_id order by r.id"
    ).fetchall()


def test_a_pronoun_and_a_definite_description_carry_relations_to_their_antecedents(tmp_path):
    db = _db_with(tmp_path, [
        ("Halvard Ness", "Halvard Ness was a Norwegian cartographer. He lives in Bergen."),
        ("Orla Trust", "The Orla Trust is a charity for sailors. The charity is based in Leeds."),
    ])
    extract_and_link(db)
    facts = {(s, rel, d) for s, rel, d, _, _ in _relations(db)}
    assert ("Halvard Ness", "located_in", "Bergen") in facts
    assert ("Orla Trust", "located_in", "Leeds") in facts
    assert db.execute(
        "select ev.sentence, ev.doc_id from relation_evidence ev join relations r on r.id = ev.relation_id "
        "join entities s on s.id = r.src_id where r.rel = 'located_in' order by ev.doc_id"
    ).fetchall() == [("He lives in Bergen.", 1), ("The charity is based in Leeds.", 2)]
    # The pronoun and the description are mentions of the entity they stand for.
    assert db.execute(
        "select m.surface, e.name from mentions m join entities e on e.id = m.entity_id "
        "where m.features like '%\"coref\": true%' order by m.doc_id"
    ).fetchall() == [("He", "Halvard Ness"), ("The charity", "Orla Trust")]


def test_extract_and_link_writes_the_graph(tmp_path):
    db = _db_with(tmp_path, SERVICES)
    # The documents' mentions and the new entities as stored once refined: "service" went.
    assert extract_and_link(db) == {"mentions": 12, "entities_new": 6, "relations": 7}
    # "service" was only ever the head of a longer phrase: no entity of its own (refine.py).
    assert db.execute("select id, type, name, norm, aliases, description, popularity from entities").fetchall() == [
        (1, "name", "Basin", "basin", '["Basin"]', "Basin is the alerting service.", 4),
        (2, "concept", "alerting service", "alertingservice", '["alerting service"]', "Basin is the alerting service.", 1),
        (4, "code", "riffle", "riffle", '["riffle"]', "It uses `riffle` to read `tidepool`.", 1),
        (5, "code", "tidepool", "tidepool", '["tidepool"]', "It uses `riffle` to read `tidepool`.", 2),
        (6, "name", "Heron", "heron", '["Heron"]', "The Heron service depends on `tidepool`.", 3),
        (7, "concept", "Heron service", "heronservice", '["Heron service"]', "The Heron service depends on `tidepool`.", 1),
    ]
    # Two one-sentence documents are too few for any co-occurrence to be significant:
    # only the typed relations stay.
    assert _relations(db) == [
        ("Basin", "is_a", "alerting service", "Basin is an alerting service", 1),
        ("Basin", "uses", "riffle", "Basin uses riffle", 1),
        ("Heron service", "depends_on", "tidepool", "Heron service depends on tidepool", 1),
    ]
    # (Ids aside: co-occurrence pairs in one sentence were held when written, never relations.)
    assert db.execute(
        "select e.chunk_id, e.doc_id, e.sentence, e.extractor from relation_evidence e "
        "join relations r on r.id = e.relation_id where r.rel = 'uses'"
    ).fetchall() == [(1, 1, "It uses `riffle` to read `tidepool`.", "patterns")]
    # The pronoun is a mention of the entity it stands for.
    assert db.execute("select entity_id, surface, type, span_start, span_end, link_score, features from mentions where surface = 'It'").fetchall() == [
        (1, "It", "name", 40, 42, 0.8, '{"antecedent": "Basin", "coref": true}'),
    ]
    # Entities are embedded; facts of typed relations too (co-occurrence ones are not).
    assert [r[0] for r in db.execute("select entity_id from entity_vec order by 1")] == [1, 2, 4, 5, 6, 7]
    assert db.execute("select count(*) from fact_vec").fetchone() == (3,)
    assert db.execute("select count(*) from fact_vec where relation_id not in (select id from relations)").fetchone() == (0,)
    assert db.execute("select * from gazetteer order by norm").fetchall() == [
        ("basin", "basin", "term", 1),
        ("heron", "heron", "term", 1),
        ("riffle", "riffle", "code", 1),
        ("tidepool", "tidepool", "code", 2),
    ]


def test_rerunning_on_unchanged_documents_changes_nothing(tmp_path):
    db = _db_with(tmp_path, SERVICES)
    extract_and_link(db)
    before = {t: db.execute(f"select * from {t}").fetchall() for t in ("entities", "mentions", "relations", "relation_evidence", "embeddings")}
    assert extract_and_link(db) == {"mentions": 0, "entities_new": 0, "relations": 0}
    assert extract_and_link(db, doc_ids=[1, 2]) == {"mentions": 0, "entities_new": 0, "relations": 0}
    after = {t: db.execute(f"select * from {t}").fetchall() for t in before}
    assert after == before
    assert db.execute("select id, extracted_hash from docs").fetchall() == [
        (1, f"h1:{EXTRACTOR_VERSION}"), (2, f"h2:{EXTRACTOR_VERSION}")
    ]


def test_only_the_given_documents_are_extracted(tmp_path):
    db = _db_with(tmp_path, SERVICES)
    # Heron (title, heading, text), Heron service, service, tidepool
    assert extract_and_link(db, doc_ids=[2]) == {"mentions": 5, "entities_new": 3, "relations": 2}
    assert db.execute("select distinct doc_id from mentions").fetchall() == [(2,)]
    assert extract_and_link(db, doc_ids=[]) == {"mentions": 0, "entities_new": 0, "relations": 0}


def test_changed_document_replaces_what_it_contributed(tmp_path):
    db = _db_with(tmp_path, SERVICES)
    extract_and_link(db)
    with db.atomic():
        db.execute("update chunks set content = ? where doc_id = 2", ["# Heron\n\nHeron uses `riffle`."])
        db.execute("update docs set hash = 'h2b' where id = 2")
    assert extract_and_link(db) == {"mentions": 4, "entities_new": 0, "relations": 2}
    assert db.execute("select name, popularity from entities order by id").fetchall() == [
        ("Basin", 4), ("alerting service", 1), ("riffle", 2), ("tidepool", 1), ("Heron", 3),
    ]
    assert _relations(db) == [
        ("Basin", "is_a", "alerting service", "Basin is an alerting service", 1),
        ("Basin", "uses", "riffle", "Basin uses riffle", 1),
        ("Heron", "uses", "riffle", "Heron uses riffle", 1),
    ]
    # The entity nothing mentions any more is gone, with its vector.
    assert db.execute("select count(*) from entity_vec where entity_id = 7").fetchone() == (0,)


def test_prose_sentences_share_concept_entities(tmp_path):
    db = _db_with(
        tmp_path,
        [
            (None, "damming a river can cause a lake to form"),
            (None, "Other lakes formed throughout the region caused by stream blockages."),
        ],
    )
    extract_and_link(db)
    assert db.execute(
        "select e.name, group_concat(distinct m.doc_id) from mentions m join entities e on e.id = m.entity_id "
        "group by e.id order by e.id"
    ).fetchall() == [
        ("damming", "1"), ("river", "1"), ("lake", "1,2"), ("region", "2"), ("stream blockages", "2"),
    ]
    assert _relations(db) == [
        ("river", "causes", "lake", "river causes lake", 1),
        ("lake", "stated", "region", "lake formed throughout region", 1),
        # "caused by" points from the cause (the participle hangs on the noun before it)
        ("stream blockages", "causes", "region", "stream blockages causes region", 1),
    ]


def test_settings_from_the_seed_config_shape():
    settings = ExtractionSettings.from_dict(
        {"ner": "spacy:en_core_web_sm", "gazetteer": {"mine_topk": 500, "min_freq": 3}, "unknown": 1}
    )
    assert (settings.ner, settings.gazetteer_topk, settings.gazetteer_min_freq) == ("auto", 500, 3)
    assert ExtractionSettings.from_dict(None) == ExtractionSettings()


def test_an_extractors_own_type_wins_a_span_over_spacys_label_but_not_over_code():
    """Same span: a type no built-in extractor gives ("vessel") beats spaCy's generic ORG,
    and an identifier beats both."""
    Mention = extraction.Mention

    def found(text, *extractors):
        return [(m.surface, m.type, m.extractor) for m in mentions_of(text, extractors=extractors)]

    def ships(chunk, context):
        return [Mention("Kestrel", "vessel", 13, 20, 0.8, extractor="ships")]

    def ner(chunk, context):  # what spaCy's small model tags this span as
        return [Mention("Kestrel", "ORG", 13, 20, 0.85, {"ner": "ORG"}, extractor="spacy")]

    def code(chunk, context):
        return [Mention("Kestrel", "code", 13, 20, 0.9, extractor="identifiers")]

    text = "We sailed on Kestrel today."
    assert found(text, ner, ships) == [("Kestrel", "vessel", "ships+spacy")]
    assert found(text, ships, ner, code) == [("Kestrel", "code", "identifiers+ships+spacy")]


def test_spacy_named_entities_when_the_extra_is_installed():
    pytest.importorskip("spacy")  # the README's test command installs the spacy extra
    # spaCy without its model is a broken install of the extra: fail, do not skip.
    assert extraction.spacy_pipeline() is not None, "pip install 'datasette-graphrag[spacy]'"
    text = "Guido van Rossum created Python at CWI in Amsterdam in 1991. Microsoft ships Windows."
    mentions = mentions_of(text, extractors=(extraction.spacy_mentions,))
    assert [(m.surface, m.type, m.start, m.end) for m in mentions] == [
        ("Guido van Rossum", "PERSON", 0, 16),
        ("Amsterdam", "GPE", 42, 51),
        ("1991", "DATE", 55, 59),
        ("Microsoft", "ORG", 61, 70),
        ("Windows", "PRODUCT", 77, 84),
    ]


def test_spacy_dates_name_a_time_not_a_span_of_it():
    pytest.importorskip("spacy")
    assert extraction.spacy_pipeline() is not None, "pip install 'datasette-graphrag[spacy]'"
    mentions = [
        (m.surface, m.type) for m in extraction.spacy_mentions(
            ChunkText(1, 1, "The mill opened around 1788 and closed two years later, in the nineteenth century.", title=""),
            _ner_context("The mill opened around 1788 and closed two years later, in the nineteenth century."),
        ) if m.type == "DATE"
    ]
    assert ("two years later", "DATE") not in mentions
    assert ("around 1788", "DATE") not in mentions
    assert all(surface in ("1788", "nineteenth century") for surface, _ in mentions)


def _ner_context(text):
    context = ExtractionContext(extraction.ExtractionSettings(ner="auto"))
    context.start_document([ChunkText(1, 1, text, title="")])
    return context


def test_descriptions_drop_markdown_bold_markers(tmp_path):
    from llm_graphrag.db import open_database
    from llm_graphrag.ingest import ingest_docs

    (tmp_path / "glossary.md").write_text(
        "# Glossary\n\n**tidepool**: The lab's time-series store.\n"
    )
    db = open_database(tmp_path / "g.db")
    ingest_docs(db, [str(tmp_path / "glossary.md")])
    descriptions = {
        row[0] for row in db.execute("select description from entities where norm = 'tidepool'")
    }
    assert descriptions == {"tidepool: The lab's time-series store."}


def test_worker_processes_extract_exactly_what_one_process_does(tmp_path):
    """The sample corpus extracted with two worker processes and with none: same graph."""
    from llm_graphrag.ingest import ingest_docs

    corpus = pathlib.Path(__file__).parent.parent / "sample-corpus"
    tables = {
        "entities": "id, type, name, norm, aliases, description, popularity, meta",
        "mentions": "*",
        "relations": "*",
        "relation_evidence": "*",
        "embeddings": "collection_id, id, embedding, content_hash",
    }
    graphs = []
    for workers in (0, 2):
        db = open_database(tmp_path / f"workers{workers}.db")
        ingest_docs(db, [str(corpus)], extract=False)
        totals = extract_and_link(db, workers=workers)
        graphs.append((totals, {t: db.execute(f"select {c} from {t} order by rowid").fetchall() for t, c in tables.items()}))
    assert graphs[0][0]["relations"] > 500
    assert graphs[1] == graphs[0]



def _sample_db(path):
    from llm_graphrag.ingest import ingest_docs

    db = open_database(path)
    ingest_docs(db, [str(pathlib.Path(__file__).parent.parent / "sample-corpus")], extract=False)
    return db


def _full_text_state(db):
    """The deferred triggers, and what each word of the facts and names finds."""
    triggers = db.execute(
        "select name, sql from sqlite_master where type = 'trigger' and (tbl_name in ('entities', 'relations') "
        "and name glob '*_a[diu]' or name = 'relation_evidence_added') order by name"
    ).fetchall()
    words = sorted({w for (fact,) in db.execute("select fact from relations") for w in re.findall(r"[a-z]{4,}", fact.lower())})
    found = {}
    for table in ("entities", "relations"):
        for word in words[::7]:
            found[table, word] = [r for (r,) in db.execute(f"select rowid from {table}_fts where {table}_fts match ? order by rowid", [word])]
    return triggers, found


def _vector_state(db):
    """The vector triggers, and every vector of the entity and fact vec0 indexes."""
    triggers = db.execute(
        "select name, sql from sqlite_master where type = 'trigger' and name glob 'embeddings_vec_*' order by name"
    ).fetchall()
    vectors = {
        table: db.execute(f"select {pk}, embedding from {table} order by {pk}").fetchall()
        for table, pk in (("entity_vec", "entity_id"), ("fact_vec", "relation_id"))
    }
    return triggers, vectors


def _graph_rows(db):
    """Mentions, entities, relations and evidence, without ids that a rerun gives anew."""
    return [
        db.execute(sql).fetchall()
        for sql in (
            "select entity_id, doc_id, chunk_id, span_start, span_end, surface, type, score, link_score from mentions order by 1, 2, 3, 4",
            "select id, type, name, norm, aliases, description, popularity from entities order by id",
            "select id, src_id, dst_id, rel, weight, confidence, fact, evidence_count from relations order by id",
            "select relation_id, chunk_id, doc_id, sentence, confidence from relation_evidence order by 1, 2, 4",
        )
    ]


def _evidence_counts(db):
    """``(id, evidence_count, evidence rows)`` of every relation."""
    return db.execute(
        "select id, evidence_count, (select count(*) from relation_evidence e where e.relation_id = relations.id) "
        "from relations order by id"
    ).fetchall()


def test_bulk_extraction_defers_triggers_with_the_same_result(tmp_path, monkeypatch):
    """A bulk run suspends the entity and relation full-text triggers and the evidence
    counting trigger: it rebuilds the indexes at the end and counts evidence itself.
    Triggers, search results and counts come out as with the triggers in place."""
    from llm_graphrag import extract, schema

    suspended = []
    monkeypatch.setattr(schema, "suspend_triggers", lambda db, triggers, real=schema.suspend_triggers: (suspended.append(triggers), real(db, triggers)))
    deferred = _sample_db(tmp_path / "deferred.db")
    triggers_before = _full_text_state(deferred)[0]
    vector_triggers = _vector_state(deferred)[0]
    extract_and_link(deferred, workers=0)
    assert suspended == [extract.DEFERRED_TRIGGERS]
    monkeypatch.setattr(extract, "DEFERRED_TRIGGERS", {})
    row_by_row = _sample_db(tmp_path / "row_by_row.db")
    extract_and_link(row_by_row, workers=0)
    state = _full_text_state(deferred)
    assert state[0] == triggers_before and len(state[0]) == 7
    assert state == _full_text_state(row_by_row)
    assert sum(len(ids) for ids in state[1].values()) > 100
    assert deferred.execute("select count(*) from graphrag_settings where key = 'deferred_triggers'").fetchone() == (0,)
    counts = _evidence_counts(deferred)
    assert counts == _evidence_counts(row_by_row)
    assert all(count == rows for _, count, rows in counts) and sum(rows for _, _, rows in counts) > len(counts)
    # The bulk run wrote entity and fact vectors into vec0 itself: the same rows.
    vectors = _vector_state(deferred)
    assert vectors == _vector_state(row_by_row)
    assert vectors[0] == vector_triggers and len(vector_triggers) == 9
    assert len(vectors[1]["entity_vec"]) > 1000 and len(vectors[1]["fact_vec"]) > 100
    stored = deferred.execute(
        "select cast(e.id as integer), e.embedding from embeddings e join collections c on c.id = e.collection_id "
        "where c.name = 'entities' order by 1"
    ).fetchall()
    assert stored == vectors[1]["entity_vec"]


def _indexes(db):
    return db.execute("select name, sql from sqlite_master where type = 'index' and sql is not null order by name").fetchall()


def _graph_rows(db):
    return [
        db.execute(sql).fetchall()
        for sql in (
            "select id, type, name, norm, aliases, description, popularity, meta, status from entities order by id",
            "select id, entity_id, doc_id, chunk_id, span_start, span_end, surface, type, link_score, meta from mentions order by id",
            "select * from relations order by id",
            "select * from relation_evidence order by id",
            "select * from held_evidence order by rowid",
        )
    ]


def test_bulk_extraction_drops_write_only_indexes_while_it_writes(tmp_path, monkeypatch):
    """A bulk run of new documents writes without ``extract.DEFERRED_INDEXES`` and creates
    them again before it refines: the same indexes after, and the same rows as a run that
    keeps them up to date row by row."""
    from llm_graphrag import extract

    deferred = _sample_db(tmp_path / "deferred.db")
    indexes = _indexes(deferred)
    assert set(extract.DEFERRED_INDEXES) <= {name for name, _ in indexes}
    during = []
    real_flush, real_refine = extract._flush, extract.refine_graph
    refining = []  # the indexes there when the graph is refined; during: before the first refinement
    monkeypatch.setattr(extract, "_flush", lambda db, *a: (refining or during.append({n for n, _ in _indexes(db)}), real_flush(db, *a))[1])
    monkeypatch.setattr(extract, "refine_graph", lambda db, *a, **k: (refining.append({n for n, _ in _indexes(db)}), real_refine(db, *a, **k))[1])
    extract_and_link(deferred, workers=0)
    assert during and all(not names & set(extract.DEFERRED_INDEXES) for names in during)
    assert refining and all(set(extract.DEFERRED_INDEXES) <= names for names in refining)
    assert _indexes(deferred) == indexes
    assert deferred.execute("select count(*) from graphrag_settings where key = 'deferred_indexes'").fetchone() == (0,)
    monkeypatch.setattr(extract, "DEFERRED_INDEXES", ())
    row_by_row = _sample_db(tmp_path / "row_by_row.db")
    extract_and_link(row_by_row, workers=0)
    rows = _graph_rows(deferred)
    assert rows == _graph_rows(row_by_row) and len(rows[1]) > 1000


def test_the_next_run_creates_indexes_a_killed_run_left_dropped(tmp_path):
    from llm_graphrag.extract import DEFERRED_INDEXES
    from llm_graphrag.schema import suspend_indexes

    db = _sample_db(tmp_path / "graphrag.db")
    extract_and_link(db, workers=0)
    indexes = _indexes(db)
    suspend_indexes(db, DEFERRED_INDEXES)  # as a run killed midway leaves them
    assert not {name for name, _ in _indexes(db)} & set(DEFERRED_INDEXES)
    assert extract_and_link(db) == {"mentions": 0, "entities_new": 0, "relations": 0}
    assert _indexes(db) == indexes
    assert db.execute("select count(*) from graphrag_settings where key = 'deferred_indexes'").fetchone() == (0,)


def test_triggers_put_back_during_a_bulk_run_count_evidence_once(tmp_path, monkeypatch):
    """Another run may put the triggers back while a bulk run goes on (it mends what it
    takes for a killed run): from then on the trigger counts, not the bulk run as well."""
    from llm_graphrag import extract, schema

    db = _sample_db(tmp_path / "graphrag.db")
    flushes = []
    real_flush = extract._flush

    def flush(db, *args):
        flushes.append(1)
        if len(flushes) == 2:
            schema.restore_triggers(db)
            db.conn.commit()
        return real_flush(db, *args)

    monkeypatch.setattr(extract, "_flush", flush)
    monkeypatch.setattr(extract._Batch, "MAX_DOCUMENTS", 4)
    extract_and_link(db, workers=0)
    assert len(flushes) > 3
    counts = _evidence_counts(db)
    assert all(count == rows for _, count, rows in counts) and len(counts) > 50
    assert len(_full_text_state(db)[0]) == 7


def test_a_failed_bulk_run_leaves_full_text_indexed(tmp_path, monkeypatch):
    from llm_graphrag import extract

    db = _sample_db(tmp_path / "graphrag.db")
    calls = []
    real_write = extract._write

    def failing_write(*args):
        calls.append(1)
        if len(calls) == 36:  # the last document: earlier batches were committed
            raise RuntimeError("disk full")
        return real_write(*args)

    monkeypatch.setattr(extract, "_write", failing_write)
    monkeypatch.setattr(extract._Batch, "MAX_DOCUMENTS", 8)
    with pytest.raises(RuntimeError):
        extract_and_link(db, workers=0)
    triggers, found = _full_text_state(db)
    assert len(triggers) == 7
    assert all(count == rows for _, count, rows in _evidence_counts(db))
    rows = db.execute("select id, fact from relations").fetchall()
    assert len(rows) > 50  # the batches committed before the failure stay
    for relation_id, fact in rows[::10]:
        word = re.findall(r"[A-Za-z]{4,}", fact)[0]
        assert relation_id in [r for (r,) in db.execute("select rowid from relations_fts where relations_fts match ?", [word])]


def test_vectors_written_while_their_trigger_is_suspended_replace_as_the_trigger_does(tmp_path):
    """While a bulk run has the vec0 insert triggers out, ``write_embeddings`` writes vec0
    itself, replacing stored vectors; opening the database meanwhile leaves them out."""
    from llm_graphrag.embeddings import write_embeddings
    from llm_graphrag.extract import DEFERRED_TRIGGERS
    from llm_graphrag.schema import restore_triggers, suspend_triggers

    db = open_database(tmp_path / "graphrag.db")
    first, second = np.eye(2, 256, dtype="<f4"), np.eye(2, 256, k=5, dtype="<f4")
    with db.atomic():
        write_embeddings(db, "entities", [1, 2], first, ["one", "two"])
    suspend_triggers(db, DEFERRED_TRIGGERS)
    open_database(tmp_path / "graphrag.db").conn.close()  # another process opens it meanwhile
    inserting = [name for name, _ in _vector_state(db)[0] if name.startswith("embeddings_vec_insert_")]
    assert inserting == ["embeddings_vec_insert_chunks"]
    with db.atomic():
        write_embeddings(db, "entities", [2, 3], second, ["two again", "three"])
        write_embeddings(db, "facts", [7], second[:1])
    expected = [(1, first[0].tobytes()), (2, second[0].tobytes()), (3, second[1].tobytes())]
    assert _vector_state(db)[1] == {"entity_vec": expected, "fact_vec": [(7, second[0].tobytes())]}
    restore_triggers(db)  # nothing is missing, so nothing is copied twice
    assert _vector_state(db)[1]["entity_vec"] == expected
    with db.atomic():  # and with the trigger back, the trigger replaces
        write_embeddings(db, "entities", [3], first[1:])
    assert _vector_state(db)[1]["entity_vec"] == expected[:2] + [(3, first[1].tobytes())]
    assert len(_vector_state(db)[0]) == 9


def test_batches_that_only_insert_check_foreign_keys_once(tmp_path, monkeypatch):
    """Documents extracted for the first time are written with foreign-key enforcement off
    and their parents checked per batch; documents extracted again keep it on (their old
    rows go through cascades). The results are those of writing with it on."""
    from llm_graphrag import extract

    enforced = []
    real_write = extract._write

    def write(db, prepared, *args):
        enforced.append((prepared.extracted_before, db.execute("pragma foreign_keys").fetchone()[0]))
        return real_write(db, prepared, *args)

    monkeypatch.setattr(extract, "_write", write)
    db = _sample_db(tmp_path / "graphrag.db")
    extract_and_link(db, workers=0)
    # Documents linked before an entity they should have gone to are extracted again
    # (extract._misplaced_generic, _lost_heads): those keep enforcement on.
    assert (False, 0) in enforced and set(enforced) <= {(False, 0), (True, 1)}
    assert db.execute("pragma foreign_keys").fetchone() == (1,)
    assert db.execute("pragma foreign_key_check").fetchall() == []
    unchecked = _graph_rows(db)
    enforced.clear()
    extract_and_link(db, workers=0, force=True)
    # a forced run takes the documents' rows back first, then writes them as new ones
    assert (False, 0) in enforced and set(enforced) <= {(False, 0), (True, 1)}

    enforced.clear()
    monkeypatch.setattr(extract, "foreign_keys_off", lambda db: contextlib.nullcontext())
    enforcing = _sample_db(tmp_path / "enforcing.db")
    extract_and_link(enforcing, workers=0)
    assert (False, 1) in enforced and set(enforced) <= {(False, 1), (True, 1)}
    assert _graph_rows(enforcing) == unchecked and len(unchecked[0]) > 1000


def test_a_bulk_run_spaces_checkpoints_and_puts_the_default_back(tmp_path, monkeypatch):
    from llm_graphrag import extract
    from llm_graphrag.db import BULK_CHECKPOINT_PAGES

    spacing = []
    real_write = extract._write

    def write(db, prepared, *args):
        spacing.append(db.execute("pragma wal_autocheckpoint").fetchone()[0])
        return real_write(db, prepared, *args)

    monkeypatch.setattr(extract, "_write", write)
    db = _sample_db(tmp_path / "graphrag.db")
    before = db.execute("pragma wal_autocheckpoint").fetchone()[0]
    extract_and_link(db, workers=0)
    assert spacing and set(spacing) == {BULK_CHECKPOINT_PAGES} != {before}
    assert db.execute("pragma wal_autocheckpoint").fetchone()[0] == before


def test_a_batch_whose_documents_were_deleted_meanwhile_is_not_stored(tmp_path, monkeypatch):
    from llm_graphrag import extract
    from llm_graphrag.db import connect

    db = _sample_db(tmp_path / "graphrag.db")
    monkeypatch.setattr(extract._Batch, "MAX_DOCUMENTS", 8)
    real_flush = extract._flush
    flushes = []

    def flush(db, batch, *args):
        flushes.append([p.extracted.doc_id for p in batch.documents])
        if len(flushes) == 2:  # another process deletes a document of this batch
            other = connect(tmp_path / "graphrag.db")
            other.execute("delete from docs where id = ?", [batch.documents[3].extracted.doc_id])
            other.commit()
            other.close()
        return real_flush(db, batch, *args)

    monkeypatch.setattr(extract, "_flush", flush)
    with pytest.raises(extract.ChangedMeanwhile, match="1 of the docs .* were deleted .* run extract again"):
        extract_and_link(db, workers=0)
    stored = {doc_id for (doc_id,) in db.execute("select distinct doc_id from mentions")}
    assert stored == set(flushes[0])  # the first batch, and nothing of the second
    assert db.execute("pragma foreign_keys").fetchone() == (1,)
    assert db.execute("pragma foreign_key_check").fetchall() == []
    assert len(_full_text_state(db)[0]) == 7 and len(_vector_state(db)[0]) == 9


def test_the_next_run_mends_triggers_a_killed_run_left_suspended(tmp_path):
    from llm_graphrag.extract import DEFERRED_TRIGGERS
    from llm_graphrag.schema import suspend_triggers

    db = _sample_db(tmp_path / "graphrag.db")
    extract_and_link(db, workers=0)
    triggers = _full_text_state(db)[0]
    suspend_triggers(db, DEFERRED_TRIGGERS)  # as a run killed midway leaves it
    quillwort = db.execute("insert into entities (type, name, norm) values ('name', 'Quillwort', 'quillwort')").lastrowid
    vector = np.linspace(-1, 1, 256, dtype="<f4").tobytes()
    db.execute(
        "insert into embeddings (collection_id, id, embedding) values ((select id from collections where name = 'entities'), ?, ?)",
        [str(quillwort), vector],
    )
    # Evidence someone adds meanwhile is counted when the trigger is put back.
    relation_id, chunk_id, doc_id = db.execute("select id, chunk_id, (select doc_id from chunks where id = chunk_id) from relations limit 1").fetchone()
    db.execute("insert into relation_evidence (relation_id, chunk_id, doc_id, sentence) values (?, ?, ?, 'added by hand')", [relation_id, chunk_id, doc_id])
    db.conn.commit()
    assert _full_text_state(db)[0] == []
    assert extract_and_link(db) == {"mentions": 0, "entities_new": 0, "relations": 0}
    assert _full_text_state(db)[0] == triggers
    assert db.execute("select name from entities_fts where entities_fts match 'quillwort'").fetchall() == [("Quillwort",)]
    assert all(count == rows for _, count, rows in _evidence_counts(db))
    # So are vectors that another writer (llm embed-multi, say) stored meanwhile.
    assert db.execute("select embedding from entity_vec where entity_id = ?", [quillwort]).fetchall() == [(vector,)]
    # The setting as the previous version named it is mended too.
    suspend_triggers(db, DEFERRED_TRIGGERS)
    db.execute("update graphrag_settings set key = 'fts_deferred' where key = 'deferred_triggers'")
    db.conn.commit()
    assert extract_and_link(db) == {"mentions": 0, "entities_new": 0, "relations": 0}
    assert _full_text_state(db)[0] == triggers
    assert db.execute("select count(*) from graphrag_settings where key like '%deferred%'").fetchone() == (0,)


def test_documents_a_run_extracts_again_are_linked_again_not_extracted_again(tmp_path, monkeypatch):
    """A run's later rounds (documents linked before an entity they should have gone to,
    ``extract._misplaced_generic``) link what was found in them again instead of finding it
    again (``extract._ExtractedCache``), and store what finding it again stores."""
    from llm_graphrag import extract

    found, rounds = [], []
    real_find, real_run = extract._extract_document, extract._run
    monkeypatch.setattr(extract, "_extract_document", lambda document: found.append(document[0]) or real_find(document))
    monkeypatch.setattr(extract, "_run", lambda db, pending, *a, **k: rounds.append([p[0] for p in pending]) or real_run(db, pending, *a, **k))
    graphs = {}
    for kept in (0, extract._ExtractedCache.MAX_MENTIONS):
        monkeypatch.setattr(extract._ExtractedCache, "MAX_MENTIONS", kept)
        found.clear()
        rounds.clear()
        db = _sample_db(tmp_path / f"kept-{kept}.db")
        extract_and_link(db, workers=0)
        assert len(rounds) > 1  # the sample corpus has documents to link again
        documents = sorted(d for (d,) in db.execute("select id from docs"))
        assert sorted(found) == (sorted(documents + [d for r in rounds[1:] for d in r]) if kept == 0 else documents)
        graphs[kept] = _graph_rows(db)
    assert graphs[0] == graphs[extract._ExtractedCache.MAX_MENTIONS]


def test_a_list_of_code_spans_has_a_sentence_per_item(tmp_path):
    # Python's c-api/stable.html lists functions this way; every mention needs a sentence,
    # or relation extraction has none to read (it stopped the whole ingest).
    text = "- `PyCodec_RegisterError()`\n- `PyCodec_ReplaceErrors()`\n- `PyGC_Collect()`\n"
    assert [text[a:b] for a, b in Analysis(text).sentences] == [
        "- `PyCodec_RegisterError()`", "- `PyCodec_ReplaceErrors()`", "- `PyGC_Collect()`",
    ]
    page = tmp_path / "docs" / "stable.md"
    page.parent.mkdir()
    page.write_text(text)
    from llm_graphrag.api import GraphRAG

    graph = GraphRAG(tmp_path / "graphrag.db")
    assert graph.ingest(page.parent, workers=0)["errors"] == []
    assert graph.db.execute("select name, type from entities where name like 'Py%' order by name").fetchall() == [
        ("PyCodec_RegisterError", "code"), ("PyCodec_ReplaceErrors", "code"), ("PyGC_Collect", "code"),
    ]


def test_a_section_title_cited_in_plain_text_is_a_term():
    text = (
        "See Rotating keys for usage details. See the Station Registry documentation. "
        "See Ingest gateway ordering. See below. see it. See also Tide tables."
    )
    cited = [
        (m.name, m.type) for m in mentions_of(text, extractors=(extraction.pattern_mentions,))
        if m.features.get("cited")
    ]
    assert cited == [
        ("Rotating keys", "term"), ("Station Registry", "term"), ("Ingest gateway ordering", "term"),
        ("Tide tables", "term"),
    ]


def test_a_verb_after_a_subject_pronoun_and_an_adverb_is_no_noun():
    found = names(mentions_of("The gateway is fast, but it only supports tide tables.", extractors=(extraction.concept_mentions,)))
    assert found == [("gateway", "concept"), ("tide tables", "concept"), ("tables", "concept")]


def test_a_pronoun_takes_the_previous_sentence_subject_not_a_prepositional_object():
    mentions = mentions_of("The fastest broker supported by Basin, Kestrel is small. It is used by Heron.")
    assert [(m.surface, m.name) for m in mentions if m.antecedent] == [("It", "Kestrel")]


def _corefs(mentions):
    return [(m.surface, m.name) for m in mentions if m.antecedent]


def test_personal_pronouns_take_the_person_not_a_place():
    mentions = mentions_of(
        "Halvard Ness was a Norwegian cartographer. He was born in Bergen in 1822 and moved to "
        "Oslo, where he taught at the naval academy. His charts of the fjords stayed in use for decades.",
        title="Halvard Ness",
    )
    assert _corefs(mentions) == [("He", "Halvard Ness"), ("he", "Halvard Ness"), ("His", "Halvard Ness")]


def test_a_pronoun_keeps_to_its_gender_and_a_title_names_the_other_person():
    mentions = mentions_of(
        "Ingrid Holm was a Swedish botanist. Together with her brother Erik Holm she described "
        "forty mosses. He later became a bishop and gave her his herbarium."
    )
    assert _corefs(mentions) == [
        ("her", "Ingrid Holm"), ("she", "Ingrid Holm"), ("He", "Erik Holm"), ("her", "Ingrid Holm"), ("his", "Erik Holm"),
    ]


def test_it_never_stands_for_a_person():
    # "his" says Olav Brekke is a person, so "its" is the society's.
    mentions = mentions_of(
        "The Halden Society is a learned society in Oslo. Olav Brekke served as its secretary until his death."
    )
    assert _corefs(mentions) == [("its", "Halden Society"), ("his", "Olav Brekke")]


def test_a_one_word_name_is_no_person_unless_stated_so():
    assert _corefs(mentions_of("The tool Kestrel reads tide tables. He wrote it in a week.")) == [("it", "Kestrel")]
    mentions = mentions_of("In 8 AD the emperor sent Ovid, a Roman poet, to Tomis. He died there.")
    assert _corefs(mentions) == [("He", "Ovid")]


def test_a_definite_description_takes_the_name_stated_of_its_class():
    mentions = mentions_of(
        "Lake Sorrel is a glacial lake in Tasmania. Trout were released there in 1900, and the lake "
        "is now closed to fishing. Marta Quint, a potter from Delft, moved to Hobart. The potter "
        "sold her jugs at the harbour."
    )
    assert _corefs(mentions) == [("the lake", "Lake Sorrel"), ("The potter", "Marta Quint"), ("her", "Marta Quint")]
    # The noun stays a mention of the class too.
    assert ("lake", "concept") in [(m.name, m.type) for m in mentions if m.start and m.start > 60]


def test_a_definite_description_takes_the_subject_named_by_its_noun():
    mentions = mentions_of("Founded in 1850, it grew fast. The society now has a library in Leeds.", title="Orla Society")
    assert _corefs(mentions)[-1] == ("The society", "Orla Society")


def test_definite_descriptions_that_name_no_stated_class_stay_concepts():
    # A predicate, a plural, an apposition after a preposition, a noun with "of": none is an anaphor.
    mentions = mentions_of(
        "Brenn is a city in Norway. Tromsø is the city of the north. On Linux, a symlink is a file. "
        "The symlink is read first. Brenn has two harbours, and the cities trade fish."
    )
    assert _corefs(mentions) == []


def test_markdown_underscore_bold_is_a_term_and_a_dunder_name_is_code():
    found = names(mentions_of("__Tidepool__ calls `__init__` and __init__ here.", extractors=(extraction.markup_mentions, extraction.identifier_mentions)))
    assert found == [("Tidepool", "term"), ("__init__", "code"), ("__init__", "code")]


def test_no_mention_is_empty_where_a_signature_shares_the_stars_of_bold_parameters():
    # Sphinx API pages (Flask's) put "**options" in a signature before "**rule**" and
    # "**options**": the stars pair up across them and left a bold of no characters.
    text = "post(rule, **options) Shortcut for `route()`. Parameters: **rule** (str) – **options** (Any) – Return type: Callable"
    found = mentions_of(text)
    assert found and all(m.end > m.start and m.name.strip() for m in found)


def test_a_relation_pattern_survives_a_mention_of_no_word():
    # A relation rule that reads a mention's last word must not fail on a name of none.
    from llm_graphrag.relations import _last_word

    assert _last_word("") == "" and _last_word("noble gases") == "gases"


def test_inline_html_tags_in_markdown_are_markup():
    analysis = Analysis('## <a id="intro">1.</a> Introduction <br/> see :ref:`Tides <a-label>`')
    assert analysis.masked.split() == ["1.", "Introduction", "see", "Tides"]


def test_a_gerund_with_an_object_is_a_verb_but_an_opening_one_names_an_activity():
    found = names(mentions_of(
        "The relay is a tool for handling stale readings, utilizing Harbor caches. "
        "Buoys send an incoming request. Damming a river can cause a lake.",
        extractors=(extraction.concept_mentions,),
    ))
    assert found == [
        ("relay", "concept"), ("tool", "concept"), ("stale readings", "concept"), ("readings", "concept"),
        ("Harbor caches", "concept"), ("caches", "concept"), ("buoys", "concept"),
        ("incoming request", "concept"), ("request", "concept"),
        ("Damming", "concept"), ("river", "concept"), ("lake", "concept"),
    ]


def test_a_gerund_before_of_names_an_action_not_a_thing():
    found = names(mentions_of(
        "Development and tracking of buoy reports happen at the harbor. It allows sharing of setup code. "
        "Flooding covers the fields. The painting of the harbor hangs there.",
        extractors=(extraction.concept_mentions,),
    ))
    assert not any(name.lower() in ("tracking", "sharing") for name, _ in found)
    assert ("buoy reports", "concept") in found and ("setup code", "concept") in found
    # A gerund before no "of", and an -ing noun of the lexicon, stay things.
    assert ("Flooding", "concept") in found or ("flooding", "concept") in found
    assert ("painting", "concept") in found


def test_a_plural_gerund_noun_meets_its_singular():
    assert [normalize(w) for w in ("settings", "setting", "readings", "reading", "strings", "string")] == [
        "set", "set", "read", "read", "string", "string",
    ]


def test_a_title_after_a_kind_of_document_names_its_subject_and_an_activity_names_nothing():
    found = [subject_mention(t) for t in ("README:  Tidepool", "Runbook: rotating keys", "Caching", "Estuary")]
    assert [(m.name, m.type) if m else None for m in found] == [("Tidepool", "name"), None, None, ("Estuary", "name")]


def test_a_link_text_names_its_page_without_the_article():
    text = "See [the Tide Atlas page](https://x.org) and `the Harbor guide <https://y.org>`_ here."
    found = mentions_of(text, extractors=(extraction.markup_mentions,))
    assert [(m.name, m.type, text[m.start : m.end]) for m in found] == [
        ("Tide Atlas page", "term", "Tide Atlas page"), ("Harbor guide", "term", "Harbor guide"),
    ]


def test_an_ing_word_between_nouns_is_part_of_a_compound():
    found = names(mentions_of(
        "The Tidepool gauge logging service uses an error handling routine.", extractors=(extraction.concept_mentions,)
    ))
    assert found == [
        ("Tidepool gauge logging service", "concept"), ("service", "concept"),
        ("error handling routine", "concept"), ("routine", "concept"),
    ]


def test_an_adjective_that_is_also_a_noun_ends_a_phrase_after_a_name():
    found = names(mentions_of(
        "Kestrel is the main Python standard for tides, and the standard library.", extractors=(extraction.concept_mentions,)
    ))
    assert found == [
        ("Kestrel", "concept"), ("Python standard", "concept"), ("standard", "concept"), ("tides", "concept"),
        ("standard library", "concept"), ("library", "concept"),
    ]


def test_a_name_only_used_as_a_modifier_is_no_mention_of_its_own():
    found = names(mentions_of("Many Heron users read the Kestrel manual. Basin is a cross-platform GUI toolkit. Only Kestrel is small."))
    # Heron and GUI only modify a phrase; Kestrel is also said on its own, so it stays everywhere.
    assert found == [
        ("Heron users", "concept"), ("users", "concept"), ("Kestrel manual", "concept"), ("Kestrel", "name"),
        ("manual", "concept"), ("Basin", "concept"), ("cross-platform GUI toolkit", "concept"), ("toolkit", "concept"),
        ("Kestrel", "name"),
    ]


def test_a_meaningful_adjective_keeps_a_generic_noun_a_phrase():
    found = names(mentions_of("The model uses critical built-in types and standard types.", extractors=(extraction.concept_mentions,)))
    assert found == [("model", "concept"), ("built-in types", "concept"), ("standard types", "concept")]


def test_a_capitalised_gerund_opens_a_title_not_a_name():
    found = names(mentions_of(
        "The guide explains it; read Making Tidepool fast, then visit Beijing Normal University today.",
        extractors=(extraction.name_mentions,),
    ))
    assert found == [("Tidepool", "name"), ("Beijing Normal University", "name")]


def test_a_common_adjectives_superlative_is_an_adjective():
    assert [extraction.word_class(w) for w in ("fastest", "largest", "biggest", "easiest", "forest", "harvest")] == [
        "adj", "adj", "adj", "adj", "noun", "noun",
    ]
    found = names(mentions_of("The fastest, most efficient cache is Basin.", extractors=(extraction.concept_mentions,)))
    assert found == [("cache", "concept")]  # "most efficient" is a degree too (_MOST_BEFORE)


def test_an_imperative_opening_a_list_item_is_a_verb():
    found = names(mentions_of("- Edit the tide settings file.\n- Restart your relay.", extractors=(extraction.concept_mentions,)))
    assert found == [("tide settings file", "concept"), ("file", "concept"), ("relay", "concept")]


def test_an_s_word_after_and_before_an_article_is_a_coordinated_verb():
    found = names(mentions_of("The relay stores readings and abstracts the sending of tides.", extractors=(extraction.concept_mentions,)))
    assert found == [("relay", "concept"), ("readings", "concept"), ("tides", "concept")]


def test_an_s_word_before_a_verb_is_its_subject_noun():
    found = names(mentions_of("The default error views require the token, and the heart pumps blood.", extractors=(extraction.concept_mentions,)))
    assert found == [
        ("default error views", "concept"), ("views", "concept"), ("token", "concept"), ("heart", "concept"), ("blood", "concept"),
    ]


def test_an_s_word_before_a_number_word_is_a_verb():
    found = names(mentions_of("Then Basin supports two formats, and the heron lays three eggs. Kestrel uses Basin."))
    assert found == [
        ("Basin", "name"), ("formats", "concept"), ("heron", "concept"), ("eggs", "concept"), ("Kestrel", "concept"), ("Basin", "name"),
    ]


def test_a_year_in_a_copyright_or_a_byline_is_a_date():
    def years(text):
        return [m.name for m in mentions_of(text, extractors=(extraction.pattern_mentions,)) if m.type == "DATE"]

    assert years("Basin tide tables\n=================\n2004, Ada Lovelace, Grace Hopper\n\nThe tables list tides.") == ["2004"]
    assert years("Copyright (c) 1998 Ada Lovelace. The gauge paper (2011) and © 2020 Basin.") == ["1998", "2011", "2020"]
    # A number that only looks like a year is none.
    assert years("It has 2004 lines, and port 2020 is open.") == []


def test_a_year_opening_a_sentence_an_early_year_and_a_year_joined_to_one_are_dates():
    def years(text):
        return [m.name for m in mentions_of(text, extractors=(extraction.pattern_mentions,)) if m.type == "DATE"]

    assert years("In 1887 the mill burned. Since 1952 the bridge stands.") == ["1887", "1952"]
    assert years("The abbey was built around 1120 and rebuilt in 1350.") == ["1120", "1350"]
    assert years("The almanac came out in 1751 and 1763, the atlas from 1914 to 1918.") == ["1751", "1763", "1914", "1918"]
    # A count after a preposition is none, nor an early number without one.
    assert years("The mill grinds 1200 sacks in 1500 hours; in 1200 bytes, 2020.1 and 1400.") == []


def test_a_name_with_accented_letters_is_one_name():
    text = "The ferry sails from Århus to Ølstykke, and the guide Zoë Brontë-Lévêque waits in São Tomé."
    found = [m.name for m in mentions_of(text, extractors=(extraction.name_mentions,))]
    assert found == ["Århus", "Ølstykke", "Zoë Brontë-Lévêque", "São Tomé"]


def test_a_title_before_a_full_name_stays_a_concept():
    found = names(mentions_of("The parcel went to the gardener Rosa Whitlock and to her cousin Tom Ashby."))
    assert ("gardener", "concept") in found and ("Rosa Whitlock", "name") in found
    assert ("cousin", "concept") in found and ("Tom Ashby", "name") in found


def test_a_phrase_ends_before_a_longer_name_it_runs_into():
    found = names(mentions_of("The gauge was read by the Welsh surveyor Morgan van Rhys at dawn."))
    assert ("Welsh surveyor", "concept") in found and ("Morgan van Rhys", "name") in found


def test_an_ing_noun_heading_a_compound_before_a_preposition_is_a_noun():
    found = names(mentions_of("The chapel keeps a wall painting by a local monk and a cave painting."))
    assert ("wall painting", "concept") in found and ("cave painting", "concept") in found


def test_where_a_thing_comes_from_is_no_part_of_its_kind():
    found = names(mentions_of("Hal Brook was a Welsh-born potter and the Leeds-based mill sold his jugs."))
    assert ("potter", "concept") in found and ("mill", "concept") in found
    assert not [n for n, _ in found if "born" in n.lower() or "based" in n.lower()]


def test_a_peoples_adjective_is_no_part_of_a_kind_of_person():
    found = names(mentions_of("Hal Brook was a Moroccan potter. The Swedish glass sold well. Run the Debian installer."))
    assert ("potter", "concept") in found and ("Moroccan", "name") not in found and ("Moroccan potter", "concept") not in found
    assert ("Swedish glass", "concept") in found  # a thing's origin may be its kind
    assert ("Debian installer", "concept") in found  # a name's, not a people's


def test_an_opening_gerund_of_a_verb_takes_an_object():
    found = names(mentions_of("## Enabling tide gauges\n\nFlowing water erodes banks.", extractors=(extraction.concept_mentions,)))
    assert found == [("tide gauges", "concept"), ("gauges", "concept"), ("Flowing water", "concept"), ("water", "concept"), ("banks", "concept")]


def test_an_adverb_in_ly_modifies_a_verb_never_a_noun():
    found = names(mentions_of(
        "Heron quietly supports tide tables and greatly increase gauge accuracy. A daily report lists buoys.",
        extractors=(extraction.concept_mentions,),
    ))
    assert found == [
        ("Heron", "concept"), ("tide tables", "concept"), ("tables", "concept"),
        ("gauge accuracy", "concept"), ("accuracy", "concept"), ("daily report", "concept"), ("report", "concept"),
        ("buoys", "concept"),
    ]


def test_a_hyphenated_word_in_ly_is_an_adjective():
    found = names(mentions_of("Kestrel is the new, buoy-friendly protocol.", extractors=(extraction.concept_mentions,)))
    assert found == [("Kestrel", "concept"), ("buoy-friendly protocol", "concept"), ("protocol", "concept")]


def test_a_gerund_coordinated_with_a_verb_gerund_is_a_verb():
    found = names(mentions_of(
        "It guards gauges by adding the tide marks to tables and checking readings for errors. "
        "Erosion is caused by wind, flowing water and moving ice.",
        extractors=(extraction.concept_mentions,),
    ))
    assert ("checking readings", "concept") not in found and ("readings", "concept") in found
    assert ("flowing water", "concept") in found and ("moving ice", "concept") in found


def test_an_acronym_after_a_common_noun_heads_a_compound():
    found = names(mentions_of("Buoys keep a station ID and send the gauge URL to Kestrel."))
    assert ("station ID", "concept") in found and ("gauge URL", "concept") in found
    # The acronym is no name of its own there (a head of three letters or more is still
    # the compound's head mention, as "tables" is of "tide tables").
    assert ("ID", "name") not in found


def test_this_class_is_no_name_for_the_module_a_page_documents():
    mentions = mentions_of("This module holds relays. This class is a subclass of `Relay`.", title="tidepool — Tides")
    assert [(m.surface, m.name) for m in mentions if m.antecedent] == [("This module", "tidepool")]


def test_a_code_span_before_a_word_is_a_noun_phrase_so_the_word_may_be_its_verb():
    found = names(mentions_of(":func:`tide.read` returns a gauge tuple. Then `ebb` returns a buoy.", extractors=(extraction.concept_mentions,)))
    assert ("returns", "concept") not in found and ("gauge tuple", "concept") in found and ("buoy", "concept") in found


def test_a_literal_value_in_code_font_is_no_entity():
    found = names(mentions_of("Default: `False`. Set ``TIDE_CACHE`` to ``None`` or :const:`True`."))
    assert found == [("TIDE_CACHE", "code")]


def test_a_leading_adverb_compound_is_trimmed_like_a_common_adjective():
    found = names(mentions_of("Buoys send highly-optimised readings to a newly-created relay.", extractors=(extraction.concept_mentions,)))
    assert found == [("buoys", "concept"), ("readings", "concept"), ("relay", "concept")]


def test_a_code_kind_word_after_a_code_span_is_no_entity_of_its_own():
    found = names(mentions_of("Read the `depth` attribute of the ``Gauge`` object; the `tide` module logs it.", extractors=(extraction.markup_mentions, extraction.concept_mentions)))
    assert ("attribute", "concept") not in found and ("object", "concept") not in found
    assert ("depth", "code") in found and ("Gauge", "code") in found
    # Not after a code span, the same word is a concept.
    assert ("attribute", "concept") in names(mentions_of("Every buoy has an attribute.", extractors=(extraction.concept_mentions,)))


def test_a_heading_of_section_words_only_names_no_thing():
    text = "## 2. Overview\n\nBuoys measure tides.\n\n## Tide tables\n\nThe overview lists buoys."
    found = names(mentions_of(text, extractors=(extraction.concept_mentions,)))
    assert found.count(("overview", "concept")) == 1  # the prose mention, not the heading
    assert ("Tide tables", "concept") in found or ("tide tables", "concept") in found


def test_a_month_alone_is_no_name_and_a_count_no_concept():
    found = names(mentions_of("The Harbour Board met in March 1921 and again in October. It kept thirty boats for twenty-one years.", extractors=(extraction.name_mentions, extraction.concept_mentions, extraction.pattern_mentions)))
    assert ("Harbour Board", "name") in found and ("1921", "DATE") in found and ("boats", "concept") in found
    assert not {("March", "name"), ("October", "name"), ("thirty boats", "concept"), ("twenty-one", "concept"), ("years", "concept"), ("twenty-one years", "concept")} & set(found)


def test_born_is_a_verb_form():
    found = names(mentions_of("Born in a fishing town, the keeper was born poor.", extractors=(extraction.concept_mentions,)))
    assert ("born", "concept") not in found and ("Born", "concept") not in found and ("keeper", "concept") in found


def test_a_plural_before_a_comma_stays_a_noun():
    found = names(mentions_of("The harbour is known for its wooden jetties, Norse carvings and salt marshes.", extractors=(extraction.name_mentions, extraction.concept_mentions)))
    assert ("wooden jetties", "concept") in found or ("jetties", "concept") in found
    # Without the comma, the plural before a name is the verb: "the release bundles Tcl".
    found = names(mentions_of("The harbour release bundles Tidekit.", extractors=(extraction.concept_mentions,)))
    assert ("harbour release", "concept") in found and not any("bundles" in n for n, _ in found)


PAIRS = [
    ("Basin", "# Basin\n\nBasin reads `tidepool` with `riffle`. Basin alerts `heron` on call."),
    ("Heron", "# Heron\n\nThe `heron` pager wakes `riffle` owners. Basin pages `heron` at night."),
    ("Kelp", "# Kelp\n\n`kelp` stores `tidepool` rows. `kelp` and `riffle` share a cache."),
]


def _related_inserts(db):
    """Log the ids of the ``related_to`` relations inserted from now on."""
    db.conn.execute("create table related_log (id integer)")
    db.conn.execute(
        "create trigger related_logged after insert on relations when new.rel = 'related_to' "
        "begin insert into related_log values (new.id); end"
    )


def _held(db):
    return sorted(db.execute(
        "select s.norm, d.norm, h.rel, h.doc_id, h.sentence, h.confidence, h.extractor from held_evidence h "
        "join entities s on s.id = h.src_id join entities d on d.id = h.dst_id"
    ).fetchall())


def test_weak_cooccurrence_is_held_when_written_with_the_graph_unchanged(tmp_path, monkeypatch):
    """A co-occurrence pair in fewer sentences than refinement keeps a relation of goes to
    held_evidence as it is written (``extract._too_weak``), not made a relation that
    refinement then holds: the graph is the same as making it a relation first, ids aside."""
    from llm_graphrag import extract
    from test_watch import snapshot

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    held_at_once = _db_with(tmp_path / "a", PAIRS)
    _related_inserts(held_at_once)
    extract_and_link(held_at_once, workers=0)
    monkeypatch.setattr(extract, "_too_weak", lambda *args: False)
    made_first = _db_with(tmp_path / "b", PAIRS)
    _related_inserts(made_first)
    extract_and_link(made_first, workers=0)
    held = _held(held_at_once)
    assert held and held == _held(made_first)
    assert snapshot(held_at_once) == snapshot(made_first)
    # Only pairs with two sentences between the documents were made relations.
    logged = lambda db: db.execute("select count(*) from related_log").fetchone()[0]  # noqa: E731
    assert logged(held_at_once) < logged(made_first)


def test_a_document_linked_again_keeps_its_unchanged_mention_and_held_rows(tmp_path, monkeypatch):
    """A document extracted again (``extract._again_rounds``) keeps the mention and held
    evidence rows that its new extraction repeats, and writes only the others
    (``extract._changed_rows``): the graph is the one deleting and inserting every row gives,
    ids aside."""
    from llm_graphrag import extract
    from test_watch import snapshot

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    kept, real = [], extract._changed_rows

    def counting(conn, table, key, old, rows):
        new = real(conn, table, key, old, rows)
        kept.append((table, len(rows) - len(new)))
        return new

    monkeypatch.setattr(extract, "_changed_rows", counting)
    diffed = _sample_db(tmp_path / "a" / "graphrag.db")
    extract_and_link(diffed, workers=0)
    assert {table for table, n in kept if n} == {"mentions", "held_evidence"}

    def rewrite_all(conn, table, key, old, rows):
        conn.executemany(f"delete from {table} where {key} = ?", [(row[0],) for row in old])
        return rows

    monkeypatch.setattr(extract, "_changed_rows", rewrite_all)
    rewritten = _sample_db(tmp_path / "b" / "graphrag.db")
    extract_and_link(rewritten, workers=0)
    assert _held(diffed) and _held(diffed) == _held(rewritten)
    assert snapshot(diffed) == snapshot(rewritten)
    # fewer rows written: the kept ones have the ids they had
    last = lambda db: db.execute("select max(id) from mentions").fetchone()[0]  # noqa: E731
    assert last(diffed) < last(rewritten)


def test_an_s_word_after_a_sentences_opening_noun_phrase_is_its_only_verb():
    found = names(mentions_of("The tide rises in the estuary.", extractors=(extraction.concept_mentions,)))
    assert found == [("tide", "concept"), ("estuary", "concept")]
    # Another verb in the sentence, or no full sentence: the -s word stays a noun.
    found = names(mentions_of("The tide rises in spring are small.", extractors=(extraction.concept_mentions,)))
    assert ("tide rises", "concept") in found
    found = names(mentions_of("The tide rises in the estuary", extractors=(extraction.concept_mentions,)))
    assert ("tide rises", "concept") in found


def test_a_ranking_word_is_no_part_of_a_kinds_name():
    found = names(mentions_of("Orsk is the largest salt marsh and the second-longest estuary.", extractors=(extraction.concept_mentions,)))
    assert ("salt marsh", "concept") in found and ("estuary", "concept") in found
    assert not [n for n, _ in found if "largest" in n or "longest" in n]


def test_an_ing_word_after_a_kind_of_person_is_what_the_person_does():
    found = names(mentions_of("Mara Lind, a weaver living in Tarnby, sold cloth.", extractors=(extraction.concept_mentions,)))
    assert ("weaver", "concept") in found
    assert not [n for n, _ in found if "living" in n]
    # A compound's head after a thing stays: "an oil painting by".
    found = names(mentions_of("The museum shows an oil painting by Mara Lind.", extractors=(extraction.concept_mentions,)))
    assert ("oil painting", "concept") in found


def test_a_direction_word_is_an_adverb():
    assert extraction.word_class("northward") == "adverb" and extraction.word_class("homewards") == "adverb"
    assert extraction.word_class("reward") != "adverb"


def test_an_irregular_participle_after_a_copula_is_no_noun():
    found = names(mentions_of("The mill was driven by the river, and the tide was drawn by the moon.", extractors=(extraction.concept_mentions,)))
    assert not [n for n, _ in found if n in ("driven", "drawn")]


def test_a_name_may_hold_of_the():
    found = names(mentions_of("Mara Lind joined the Guild of the Orsk Weavers in 1901.", extractors=(extraction.name_mentions,)))
    assert ("Guild of the Orsk Weavers", "name") in found
    # Not from a capitalised word opening the sentence.
    found = names(mentions_of("Copies of the Orsk Almanac are rare.", extractors=(extraction.name_mentions,)))
    assert ("Copies of the Orsk Almanac", "name") not in found


def test_a_verb_after_a_pronoun_and_a_frequency_adverb_is_no_noun():
    found = names(mentions_of("Herons are birds. They mostly hunt eels in marshes.", extractors=(extraction.concept_mentions,)))
    assert ("eels", "concept") in found and not [n for n, _ in found if "hunt" in n]


def test_an_s_word_after_an_opening_name_before_a_preposition_is_its_verb():
    text = "Install Tidecache first. Tidecache runs as a daemon and is given some memory."
    found = names(mentions_of(text, extractors=(extraction.concept_mentions,)))
    assert ("Tidecache runs", "concept") not in found and ("daemon", "concept") in found
    # A plural noun after a name, the verb later, stays the name's compound.
    found = names(mentions_of("Install Tidecache first. Tidecache users in Oslo are happy.", extractors=(extraction.concept_mentions,)))
    assert ("Tidecache users", "concept") in found


def test_a_word_wordnet_lists_only_as_an_adjective_is_no_noun():
    assert extraction.word_class("persistent") == "adj" and extraction.word_class("concise") == "adj"
    assert extraction.word_class("commercial") == "noun"  # a noun too: "a television commercial"
    assert extraction.word_class("licensed") != "adj"  # a participle: the sentence tells
    found = names(mentions_of("A shelf is a persistent, dictionary-like object.", extractors=(extraction.concept_mentions,)))
    assert ("persistent", "concept") not in found and ("shelf", "concept") in found


def test_a_word_wordnet_lists_only_as_a_verb_is_a_verb():
    assert extraction.word_class("interfere") == "verb" and extraction.word_class("interferes") == "verb"
    assert extraction.word_class("gauge") == "noun"  # a noun too
    found = names(mentions_of("The gauge works by interfering with the tide.", extractors=(extraction.concept_mentions,)))
    assert not any(name.startswith("interfer") for name, _ in found)


def test_a_noun_with_an_adjective_ending_wordnet_never_calls_an_adjective_is_a_noun():
    assert extraction.word_class("archive") == "noun" and extraction.word_class("forest") == "noun"
    assert extraction.word_class("famous") == "adj" and extraction.word_class("relative") == "adj"
    found = names(mentions_of("The tide archive stores the readings.", extractors=(extraction.concept_mentions,)))
    assert ("tide archive", "concept") in found


def test_an_abstract_noun_is_an_entity_only_in_a_typed_relation(tmp_path):
    db = _db_with(tmp_path, [
        ("Basin", "The maintenance of the tide gauge is simple. Earthquakes are caused by faults."),
    ])
    extract_and_link(db)
    names = {name for (name,) in db.execute("select name from entities")}
    assert "maintenance" not in names  # an act, in no typed relation
    assert "earthquakes" in names  # an event, but what faults cause
    facts = {(s, rel, d) for s, rel, d, _, _ in _relations(db)}
    assert ("faults", "causes", "earthquakes") in facts


def test_an_abstract_noun_the_document_counts_names_a_thing(tmp_path):
    db = _db_with(tmp_path, [
        ("Basin", "Each task reads the gauge. A task is queued when the tide turns. Maintenance is simple."),
    ])
    extract_and_link(db)
    names = {name for (name,) in db.execute("select name from entities")}
    assert "task" in names  # "a task": a count noun, whatever its dictionary senses
    assert "Maintenance" not in names and "maintenance" not in names  # a mass noun, no "a"


def test_a_plural_kind_before_its_members_is_no_compound_and_no_verb():
    found = {m.name for m in mentions_of("The chemist isolated the metals cobalt and nickel.")}
    assert {"metals", "cobalt", "nickel"} <= found and "metals cobalt" not in found
    found = {m.name for m in mentions_of("The planets mercury, venus and mars orbit close to the sun.")}
    assert {"planets", "mercury", "venus"} <= found
    found = {m.name for m in mentions_of("Cancer cells divide more often.")}
    assert "Cancer cells" in found and not [n for n in found if "divide" in n]


def test_a_comparative_after_far_or_before_than_is_no_noun():
    found = {m.name for m in mentions_of("The railway made journeys far shorter.")}
    assert "journeys" in found and not [n for n in found if "shorter" in n or "far" in n]
    found = {m.name for m in mentions_of("Copper is softer than bronze.")}
    assert {"Copper", "bronze"} <= found and not [n for n in found if "softer" in n]
    assert "far corner" in {m.name for m in mentions_of("The chest stood in the far corner.")}


def test_the_word_before_an_adverb_of_manner_after_the_opening_noun_is_its_verb():
    found = {m.name for m in mentions_of("The rumour spread quickly through the town.")}
    assert {"rumour", "town"} <= found and not [n for n in found if "spread" in n]
    assert "mill wheel" in {m.name for m in mentions_of("The mill wheel turned slowly.")}


def test_an_adjective_after_most_is_a_degree_no_part_of_the_kind():
    found = {m.name for m in mentions_of("Lagos is the most populous city in Nigeria.")}
    assert "city" in found and "populous city" not in found
    assert "Web servers" in {m.name for m in mentions_of("It runs on most Web servers.")}


def test_leads_to_and_belongs_to_are_verbs_and_their_to_a_preposition():
    found = {m.name for m in mentions_of("Overgrazing reduces grass cover and leads to soil erosion.")}
    assert "soil erosion" in found and not [n for n in found if "leads" in n]
    assert "users" in {m.name for m in mentions_of("Add users and groups to the list.")}


def test_an_s_verb_after_the_opening_phrase_with_a_second_verb_phrase_after():
    found = {m.name for m in mentions_of("The Atacama desert covers much of Chile and is very dry.")}
    assert "Atacama desert" in found and not [n for n in found if "covers" in n]


def test_it_opening_a_sentence_takes_the_title_subject_that_opened_the_last_one():
    found = mentions_of("Saturn is the sixth planet from the Sun. It is a gas giant.", title="Saturn")
    assert [m.name for m in found if m.features.get("coref")] == ["Saturn"]


def test_a_word_of_praise_before_a_noun_is_no_part_of_its_kind():
    found = {m.name for m in mentions_of("Its famous bridges draw many visitors.")}
    assert "bridges" in found and "famous bridges" not in found


def test_a_place_name_goes_on_past_st_mt_and_a_possessive_before_its_kind():
    found = {m.name for m in mentions_of("Pilgrims walk from Mt. Tabor to St. Anne's Church past Hadrian's Wall.")}
    assert {"Mt. Tabor", "St. Anne's Church", "Hadrian's Wall"} <= found
    assert "Hamlet" in {m.name for m in mentions_of("We read Marlowe's Hamlet.")}


def test_a_word_opening_a_sentence_before_a_comma_and_an_apposition_is_no_imperative():
    found = {m.name for m in mentions_of("Keratin, a protein found in hair, is tough.")}
    assert {"Keratin", "protein"} <= found
    assert "Edit" not in {m.name for m in mentions_of("Edit the settings file.")}


def test_a_direction_superlative_in_most_ranks_and_is_no_part_of_the_kind():
    found = {m.name for m in mentions_of("Unst is the northernmost island of Britain.")}
    assert "island" in found and "northernmost island" not in found


def test_a_word_after_a_coordinated_plural_subject_is_its_verb():
    found = {m.name for m in mentions_of("Otters, herons and anglers fish the river.")}
    assert {"anglers", "river"} <= found and not [n for n in found if "fish" in n]


def test_a_base_verb_after_an_opening_list_of_three_is_the_lists_verb():
    found = {m.name for m in mentions_of("Oak, ash and beech form the old wood.")}
    assert {"beech", "old wood"} <= found or {"beech", "wood"} <= found
    assert not [n for n in found if "form" in n]
    assert "output stream" in {m.name for m in mentions_of("Input and output stream processing is slow.")}


def test_the_word_after_a_subject_that_agrees_with_it_as_a_verb_is_its_verb():
    found = {m.name for m in mentions_of("Sap flows up the trunk in spring.")}
    assert {"Sap", "trunk", "spring"} <= found and not [n for n in found if "flows" in n]
    found = {m.name for m in mentions_of("Rats spread fleas in crowded cities.")}
    assert {"rats", "fleas"} <= found and not [n for n in found if "spread" in n]
    found = {m.name for m in mentions_of("Fog forms when warm air meets cold water.")}
    assert {"Fog", "air", "water"} <= found and not [n for n in found if "forms" in n]
    found = {m.name for m in mentions_of("During the night the temperature drops sharply.")}
    assert {"night", "temperature"} <= found and not [n for n in found if "drops" in n]
    found = {m.name for m in mentions_of("Ice crystals form inside the caves.")}
    assert {"Ice crystals", "caves"} <= found and not [n for n in found if "form" in n.split()]


def test_a_compound_whose_head_does_not_agree_as_a_verb_stays_a_compound():
    found = {m.name for m in mentions_of("Salt crystals form cubes.")}
    assert {"Salt crystals", "cubes"} <= found and not [n for n in found if "form" in n.split()]
    found = {m.name for m in mentions_of("Winter storms damage the coast.")}
    assert "Winter storms" in found and not [n for n in found if "damage" in n]
    assert "tide gauge readings" in {m.name for m in mentions_of("The tide gauge readings are stored.")}


def test_a_phrase_never_repeats_its_word():
    found = {m.name for m in mentions_of("Glaciers Glaciers are slow rivers of ice.")}
    assert "Glaciers Glaciers" not in found and {"Glaciers", "rivers", "ice"} <= found
    found = {m.name for m in mentions_of("The bog holds a kind of moss peat moss.")}
    assert "peat moss" in found and not [n for n in found if n.count("moss") > 1]
    assert "Bora Bora" in {m.name for m in mentions_of("They sailed to Bora Bora last year.")}
    assert {m.name for m in mentions_of("Notes Notes Notes are kept here.")} == {"Notes"}


def test_a_verb_after_subjects_joined_by_and_or_before_a_bare_infinitive():
    found = {m.name for m in mentions_of("Wind and rain shape the cliffs.")}
    assert {"Wind", "rain", "cliffs"} <= found and not [n for n in found if "shape" in n]
    found = {m.name for m in mentions_of("Salt helps preserve fish.")}
    assert {"Salt", "fish"} <= found and not [n for n in found if "helps" in n]
    assert "mass transfer" in {m.name for m in mentions_of("Heat and mass transfer occurs in boilers.")}


def test_a_verb_after_a_subject_with_its_prepositional_phrase_a_focus_word_or_after_let_make_help():
    found = {m.name for m in mentions_of("Layers of silt cover the valley floor.")}
    assert {"layers", "silt", "valley floor"} <= found and not [n for n in found if "cover" in n]
    found = {m.name for m in mentions_of("Only the female wasps sting.")}
    assert "female wasps" in found and not [n for n in found if "sting" in n]
    found = {m.name for m in mentions_of("Rain makes the soil swell.")}
    assert {"Rain", "soil"} <= found and not [n for n in found if "swell" in n]
    found = {m.name for m in mentions_of("If the pipe bursts then water floods the cellar.")}
    assert {"pipe", "water", "cellar"} <= found
    found = {m.name for m in mentions_of("The flood left salt water in the fields.")}
    assert "salt water" in found  # after a preposition, no subject: "from salt water"


def test_latin_plurals_of_biology_are_plurals():
    assert normalize("bacteria") == normalize("bacterium") == "bacterium"
    assert normalize("flagella") == "flagellum"
    found = {m.norm for m in mentions_of("Bacteria ferment the sugar.")}
    assert {"bacterium", "sugar"} <= found and not [n for n in found if "ferment" in n]


def test_a_verb_of_a_relative_clause_or_a_second_verb_after_and():
    found = {m.name for m in mentions_of("Ships carry engines that burn diesel.")}
    assert {"engines", "diesel"} <= found and not [n for n in found if "burn" in n]
    found = {m.name for m in mentions_of("Glaciers exert forces that crack the bedrock.")}
    assert {"forces", "bedrock"} <= found and not [n for n in found if "crack" in n]
    found = {m.name for m in mentions_of("The press removes the husks and often cuts the stalks.")}
    assert {"husks", "stalks"} <= found and not [n for n in found if "cuts" in n]
    assert "water tanks" in {m.name for m in mentions_of("The quarry supplies stone and water tanks.")}
    found = {m.name for m in mentions_of("Heavy grazing strips the hillsides.")}
    assert "hillsides" in found and not [n for n in found if "strips" in n]


def test_a_gerund_before_its_verb_is_the_subject():
    found = {m.name for m in mentions_of("Intensive farming exhausts the soil.")}
    assert {"Intensive farming", "soil"} <= found and not [n for n in found if "exhausts" in n]
    assert "shoes" in {m.name for m in mentions_of("Running shoes wear out.")}


def test_a_word_that_would_rather_be_the_verb_keeps_the_words_before_it_a_compound():
    assert "Safety boots" in {m.name for m in mentions_of("Safety boots and goggles protect the workers.")}
    assert "Cutting peat bricks" in {m.name for m in mentions_of("Cutting peat bricks warms the house.")}
    found = {m.name for m in mentions_of("Rapid warming causes ice floes.")}
    assert "ice floes" in found and not [n for n in found if "causes" in n]


def test_a_clause_after_as_or_a_verb_after_a_preposition_leaves_the_word_before_a_noun_or_a_verb():
    found = {m.name for m in mentions_of("The kit adds new tools, and better engine parts as they are released.")}
    assert "engine parts" in found  # "as they are released" is a clause of its own
    found = {m.name for m in mentions_of("Most algae drift by means of currents.")}
    assert "currents" in found and not [n for n in found if "drift" in n]  # "means" after "by" is no verb


def test_a_plural_wordnet_also_lists_as_an_adjective_is_a_noun_when_its_singular_is_no_adjective():
    assert extraction.word_class("clouds") == "noun" and extraction.word_class("bats") == "noun"
    assert extraction.word_class("sideways") == "adj"
    assert "clouds" in {m.name for m in mentions_of("The rain falls from the clouds.")}
