import pytest

from llm_graphrag import extraction, relations
from llm_graphrag.extraction import ChunkText, ExtractionContext, finish_mentions, subject_mention
from llm_graphrag.relations import fact_text

EXTRACTORS = (
    extraction.markup_mentions,
    extraction.pattern_mentions,
    extraction.identifier_mentions,
    extraction.name_mentions,
    extraction.concept_mentions,
    extraction.step_mentions,
)


def candidates(text, extractor, title="", section="", headings=(), settings=None):
    chunk = ChunkText(1, 1, text, section=section, headings=headings, title=title)
    context = ExtractionContext(settings)
    context.start_document([chunk])
    context.cache["subject"] = subject_mention(title)
    mentions = []
    for extract in EXTRACTORS:
        mentions.extend(extract(chunk, context))
    mentions = finish_mentions(chunk, mentions, context)
    return [
        (c.src.name, c.rel, c.dst.name, c.weight, round(c.proximity, 3))
        for c in extractor(chunk, mentions, context)
    ]


def pattern_triples(text):
    """``{(source, relation, target)}`` the sentence patterns find in ``text``."""
    return {(src, rel, dst) for src, rel, dst, *_ in candidates(text, relations.pattern_relations)}


@pytest.mark.parametrize(
    "text,expected",
    [
        ("Basin uses riffle.", [("Basin", "uses", "riffle", 0.8, 1.0)]),
        ("Heron depends on tidepool.", [("Heron", "depends_on", "tidepool", 0.85, 1.0)]),
        ("The Export API is used by Estuary.", [("Estuary", "uses", "Export API", 0.8, 1.0)]),
        ("Basin is configured via `basin-rules.yaml`.", [("basin", "configured_via", "basin-rules.yaml", 0.85, 1.0)]),
        ("Basin integrates with Beacon.", [("Basin", "integrates_with", "Beacon", 0.85, 1.0)]),
        ("Basin is owned by Data Products.", [("Basin", "owned_by", "Data Products", 0.8, 1.0)]),
        ("Basin is part of Insight.", [("Basin", "part_of", "Insight", 0.8, 1.0)]),
        ("Copper is a metal.", [("Copper", "is_a", "metal", 0.6, 1.0)]),
        ("Erosion is caused by wind and flowing water.", [
            ("wind", "causes", "Erosion", 0.85, 1.0),
            ("flowing water", "causes", "Erosion", 0.85, 1.0),
        ]),
        ("Damming a river can cause a lake to form.", [("river", "causes", "lake", 0.8, 0.769)]),
        ("JSON is specified by RFC 7159.", [("RFC 7159", "defines", "JSON", 0.8, 1.0)]),
        ("Installation tools such as pip and venv.", [
            ("pip", "is_a", "Installation tools", 0.55, 1.0),
            ("venv", "is_a", "Installation tools", 0.55, 1.0),
        ]),
        ("For use by other Python users.", []),
    ],
)
def test_pattern_relations(text, expected):
    assert candidates(text, relations.pattern_relations) == expected


def test_coordinated_verb_phrase_takes_the_sentence_subject():
    text = "The :mod:`sqlite3` module provides an SQL interface, and requires SQLite 3.7.15 or newer."
    assert candidates(text, relations.pattern_relations) == [
        ("sqlite3", "depends_on", "SQLite", 0.85, round(1 / 1.15, 3)),
    ]


def test_a_second_verb_phrase_after_a_bare_and_takes_the_sentence_subject():
    text = "The Basin package was written by Ada Lovelace and is maintained by the Tide Group."
    found = pattern_triples(text)
    assert ("Basin package", "owned_by", "Tide Group") in found
    assert ("Ada Lovelace", "owned_by", "Tide Group") not in found


def test_a_name_after_at_or_in_in_a_where_clause_is_in_the_place_before_it():
    found = pattern_triples("Ada Lovelace moved to Bergen, where she taught at the Tide School.")
    assert ("Tide School", "located_in", "Bergen") in found
    # No place before: "the survey, where ..." names no place.
    found = pattern_triples("Ada Lovelace read the survey, where she found the Tide School.")
    assert not any(rel == "located_in" for _, rel, _ in found)


def test_what_a_thing_is_allowed_to_do_is_no_relation():
    text = "Estuary will allow your Heron site to use the Basin cache."
    assert not [rel for _, rel, *_ in candidates(text, relations.pattern_relations) if rel == "uses"]
    assert candidates("The Heron site uses the Basin cache.", relations.pattern_relations)[0][1] == "uses"


def test_code_in_what_holds_it_is_part_of_it():
    found = pattern_triples
    assert ("tide_dump", "part_of", "basin") in found("Use the `tide_dump()` function in the `basin` module.")
    assert ("Reef", "part_of", "heron") in found("The `Reef` class in `heron` reads logs.")
    assert ("HERON_DEBUG", "part_of", "basin.toml") in found("Set `HERON_DEBUG` in `basin.toml`.")
    # In a step too: what a step holds is said in it.
    text = "1. Issue a certificate.\n2. Watch `tide_level` in the Basin dashboard for an hour.\n"
    assert ("tide_level", "part_of", "Basin dashboard") in found(text)
    # No container: "in the background" holds nothing; "`x` in Heron" says no kind.
    assert not found("Run `tidegen` in the background.") and not found("Call `tidegen` in Heron.")


def test_what_a_thing_is_made_from_by_a_maker_the_maker_uses():
    assert ("Tidegen", "uses", "Markdown") in pattern_triples("These pages are generated from `Markdown` sources by `Tidegen`.")
    assert ("pip", "uses", "sdist") in pattern_triples("The wheel is built from the sdist by pip.")


def test_a_preposition_between_a_trigger_and_a_mention_means_the_object_was_skipped():
    found = candidates("The wheel is kept and used in subsequent installs for the Basin package.", relations.pattern_relations)
    assert not [c for c in found if c[1] == "uses"]
    found = candidates("The wheel is used in the Basin package.", relations.pattern_relations)
    assert [c for c in found if c[1] == "uses"]


def test_abbreviations_are_the_same_thing():
    text = "The Web Server Gateway Interface (WSGI) is a standard."
    assert candidates(text, relations.pattern_relations) == [
        ("WSGI", "same_as", "Web Server Gateway Interface", 0.9, 1.0),
    ]


def test_see_references_are_citations_of_the_document_subject():
    text = "See :pep:`405` for more background."
    assert candidates(text, relations.pattern_relations, title="venv — Creation of virtual environments") == [
        ("venv", "cites", "PEP 405", 0.7, 1.0),
    ]


def test_dependencies_section_and_see_also_block():
    text = (
        "# Basin\n\nThe alerting service.\n\n## Requirements\n\n- `tidepool` 2.1\n- Python 3.11\n\n"
        "## Notes\n\nBasin talks to Heron.\n\n.. seealso::\n\n   Module :mod:`hmac`\n      Hashes.\n"
    )
    assert candidates(text, relations.structural_relations, title="Basin") == [
        ("Basin", "depends_on", "tidepool", 0.8, 1.0),
        ("Basin", "depends_on", "Python", 0.8, 1.0),
        ("Basin", "cites", "hmac", 0.7, 1.0),
    ]


def test_dependencies_section_from_chunk_headings():
    assert candidates(
        "- `riffle`\n- `tidepool`\n", relations.structural_relations,
        title="Heron", headings=("Heron", "Dependencies"),
    ) == [
        ("Heron", "depends_on", "riffle", 0.8, 1.0),
        ("Heron", "depends_on", "tidepool", 0.8, 1.0),
    ]


def test_numbered_steps_precede_each_other():
    text = "1. Stop the gateway.\n2. Rotate the certificate.\n3. Start the gateway.\n"
    assert candidates(text, relations.structural_relations) == [
        ("Stop the gateway", "precedes", "Rotate the certificate", 0.9, 1.0),
        ("Rotate the certificate", "precedes", "Start the gateway", 0.9, 1.0),
    ]


def test_cooccurrence_links_neighbours_by_proximity():
    text = "Beavers build dams across streams."
    assert candidates(text, relations.cooccurrence_relations) == [
        ("beavers", "related_to", "dams", 0.35, round(1 / 1.1, 3)),
        ("dams", "related_to", "streams", 0.35, round(1 / 1.1, 3)),
    ]
    settings = extraction.ExtractionSettings(cooccurrence="off")
    assert candidates(text, relations.cooccurrence_relations, settings=settings) == []


def test_fact_text():
    assert fact_text("Basin", "uses", "riffle") == "Basin uses riffle"
    assert fact_text("copper", "is_a", "metal") == "copper is a metal"
    assert fact_text("pip", "is_a", "installer program") == "pip is an installer program"
    assert fact_text("Heron", "depends_on", "tidepool") == "Heron depends on tidepool"
    assert fact_text("A", "related_to", "B") == "A is related to B"


def test_trigger_lead_words_skip_only_word_starts_where_nothing_matches():
    """``TRIGGER_LEADS`` keeps the trigger scan to likely word starts: over the sample
    corpus, the golden passages and one phrase per pattern, the scan finds exactly what
    the patterns find without it."""
    import pathlib
    import re

    root = pathlib.Path(__file__).parent.parent
    texts = [p.read_text() for p in sorted((root / "sample-corpus").rglob("*.*"))]
    texts += [p.read_text() for p in sorted((root / "tests" / "golden").glob("*.yaml"))]
    phrases = [
        "A is used by B", "A uses B", "A is based on B", "A is implemented with B", "A is backed by B", "A is required by B", "A depends on B", "A is part of B",
        "A is bundled in B", "A found in B", "A appears in B", "A contains B", "A integrates with B", "A is compatible with B", "A is supported by B", "A supports B", "A is configured via B",
        "A is maintained by B", "B is the author of A", "B maintains A", "A, founded in 1900 by B", "B wrote A", "A is originally defined in B", "A defines B", "A provides B",
        "A is a kind of B", "A is a subclass of B", "A is widely regarded as a B", "A is the largest of all B", "A is one of the B", "A is a B", "A, a B", "A such as B",
        "A is caused by B", "A leads to B", "A brought about B", "A is generated by B", "A converts the water into B",
        "A is located in B", "A hosted at B", "A flows through B", "A took place in B", "A is set in B", "A was declared a B", "A is used as a B", "A reads its configuration from B", "A is home to B", "A is stored in B", "A lies in B", "A is made of B", "A supersedes B", "A, also known as B", "A, officially B",
    ]
    assert len(phrases) == len(relations._PATTERNS)
    unguarded = re.compile(
        r"(?:(?<![A-Za-z0-9_])(?=[a-z])|(?=,))(?:"
        + "|".join(f"(?P<p{i}>{p})" for i, (p, _, _, _) in enumerate(relations._PATTERNS))
        + ")"
    )
    seen = set()
    for text in texts + phrases:
        expected = [(m.span(), m.lastgroup) for m in unguarded.finditer(text)]
        assert [(m.span(), m.lastgroup) for m in relations._TRIGGERS.finditer(text)] == expected
        seen.update(group for _, group in expected)
    assert seen == {f"p{i}" for i in range(len(relations._PATTERNS))}


def test_structure_of_documentation_qualified_names_and_settings():
    text = "Call json.dumps or json.decoder.JSONDecoder; set the JSON_INDENT setting or :envvar:`PYTHONIOENCODING`."
    found = candidates(text, relations.structural_relations, title=":mod:`json` --- JSON encoder and decoder")
    assert sorted(found) == [
        ("json", "configured_via", "JSON_INDENT", 0.8, 1.0),
        ("json", "configured_via", "PYTHONIOENCODING", 0.8, 1.0),
        ("json.dumps", "part_of", "json", 0.9, 1.0),
    ]


def test_a_negated_trigger_states_no_relation():
    assert candidates("Basin is not used by Heron.", relations.pattern_relations) == []
    assert candidates("Basin doesn't require Heron.", relations.pattern_relations) == []
    assert candidates("Heron never depends on Basin.", relations.pattern_relations) == []
    assert candidates("Copper is a metal, not a gas.", relations.pattern_relations) == [
        ("Copper", "is_a", "metal", 0.6, 1.0),
    ]


@pytest.mark.parametrize(
    "text,expected",
    [
        ("OSError is a subclass of Exception and BaseException.", [
            ("OSError", "is_a", "Exception", 0.85, 1.0), ("OSError", "is_a", "BaseException", 0.85, 1.0),
        ]),
        ("Basin is an instance of Store.", [("Basin", "is_a", "Store", 0.85, 1.0)]),
        ("Heron inherits from Store.", [("Heron", "is_a", "Store", 0.85, 1.0)]),
        ("Heron is derived from Store.", [("Heron", "is_a", "Store", 0.85, 1.0)]),
        # Plural subjects: "are instances of", "are kinds of".
        ("Then gauges are instances of Store.", [("gauges", "is_a", "Store", 0.85, 1.0)]),
        ("Then Heron is a sub-class of Store.", [("Heron", "is_a", "Store", 0.85, 1.0)]),
        ("Then relays are kinds of Store.", [("relays", "is_a", "Store", 0.85, 1.0)]),
        # The trigger's own word named as a thing is no trigger: "the build and packaging system".
        ("Kestrel is the original build and packaging system.", [
            ("Kestrel", "is_a", "build", 0.6, 0.87), ("Kestrel", "is_a", "packaging system", 0.6, 0.87),
        ]),
    ],
)
def test_subclass_instance_and_inheritance_are_is_a(text, expected):
    assert candidates(text, relations.pattern_relations) == expected


@pytest.mark.parametrize(
    "text,expected",
    [
        # An insertion between commas, opened by "being" or a participle, is skipped.
        ("Tidepool, being a message broker, needs a disk cache.", [
            ("Tidepool", "is_a", "message broker", 0.6, 1.0),
            ("Tidepool", "depends_on", "disk cache", 0.85, 0.769),
        ]),
        # ...and the trigger's preposition may be repeated in a coordination.
        ("Estuary, specified by RFC 9999 and by ECMA-999, is a data exchange format.", [
            ("RFC 9999", "defines", "Estuary", 0.8, 1.0),
            ("ECMA-999", "defines", "Estuary", 0.8, 1.0),
            ("Estuary", "is_a", "data exchange format", 0.6, 0.87),
        ]),
        # A relative clause's verb has the mention before "which" as its subject.
        ("RFC 9999 (which obsoletes RFC 8888) is short.", [("RFC 9999", "refers_to", "RFC 8888", 0.6, 0.87)]),
        ("Basin talks to Heron, which uses Kestrel.", [("Heron", "uses", "Kestrel", 0.8, 0.87)]),
        # An insertion opened otherwise is not skipped.
        ("Tidepool, as a message broker, needs a disk cache.", [
            ("message broker", "depends_on", "disk cache", 0.85, 0.87),
        ]),
    ],
)
def test_insertions_and_relative_clauses(text, expected):
    assert candidates(text, relations.pattern_relations) == expected


@pytest.mark.parametrize(
    "text,expected",
    [
        ("Basin is written, tested, and packaged quietly by Data Products.", [
            ("Basin", "owned_by", "Data Products", 0.8, 1.0),
        ]),
        ("Basin became part of Insight.", [("Basin", "part_of", "Insight", 0.8, 1.0)]),
        # "not only" denies nothing; "not" does.
        ("Basin not only remains part of Insight.", [("Basin", "part_of", "Insight", 0.8, 0.769)]),
        ("Basin is not part of Insight.", []),
    ],
)
def test_coordinated_participles_and_part_of_verbs(text, expected):
    assert candidates(text, relations.pattern_relations) == expected


def test_names_listed_after_a_plural_noun_and_a_colon_are_each_one():
    assert candidates("Basin reads two formats: Parquet, Avro and CSV.", relations.pattern_relations) == [
        ("Parquet", "is_a", "formats", 0.6, 1.0),
        ("Avro", "is_a", "formats", 0.6, 1.0),
        ("CSV", "is_a", "formats", 0.6, 1.0),
    ]
    # Not after a singular noun, and not prose concepts.
    assert candidates("Basin reads one format: Parquet.", relations.pattern_relations) == []
    assert candidates("Basin reads two formats: tables and logs.", relations.pattern_relations) == []


def test_no_copula_subject_after_a_preposition():
    # "the two supported by Kestrel are ...": Kestrel is not what the sentence says is X...
    # (what is said is that Kestrel supports them: test_a_participle_opening_its_clause_...)
    found = candidates("The two supported by Kestrel are Basin and Heron.", relations.pattern_relations)
    assert [c for c in found if c[1] == "is_a"] == []
    # ...but an apposition may follow a preposition.
    assert candidates("It is written by Kestrel, a data team.", relations.pattern_relations) == [
        ("Kestrel", "is_a", "data team", 0.55, 1.0),
    ]


@pytest.mark.parametrize(
    "text,expected",
    [
        # "X, a Y" after a word (not only after markup) is an apposition...
        ("It holds the sources for Basin, a message broker.", [("Basin", "is_a", "message broker", 0.55, 1.0)]),
        # ...but not where the comma closes an opening clause or phrase...
        # (and the condition itself states nothing: test_an_opening_condition_states_no_relation)
        ("If Basin needs another broker, a list of options is kept.", []),
        ("In Basin, a message broker is built in.", []),
        # ...nor in a list.
        ("It holds Basin, a message broker and a disk cache.", []),
    ],
)
def test_appositions_after_a_comma(text, expected):
    assert candidates(text, relations.pattern_relations) == expected


def test_see_under_a_documented_item_is_cited_by_that_item():
    text = (
        "class `TidepoolMiddleware`:\n\nAdds the station to every request. See Station lookups.\n\n"
        "### `TIDEPOOL_CACHE`\n\nWhere stations are cached. See Cache backends for usage details.\n"
    )
    found = candidates(text, relations.pattern_relations, title="Middleware")
    assert [f for f in found if f[1] == "cites"] == [
        ("TidepoolMiddleware", "cites", "Station lookups", 0.7, 1.0),
        ("TIDEPOOL_CACHE", "cites", "Cache backends", 0.7, 1.0),
    ]
    # Without a documented item above it, a title seen only in plain text is not cited by
    # the page's subject; a name or code span still is.
    found = candidates("See Station lookups. See `tidepool.cache`.", relations.pattern_relations, title="Tidepool")
    assert found == [("Tidepool", "cites", "tidepool.cache", 0.7, 1.0)]


def test_a_definitions_opening_noun_phrase_stands_for_its_term():
    glossary = (
        "tide gauge\n"
        "   The instrument used by the :term:`Harbour Office` to log water levels.\n"
        "   It is read hourly.\n"
    )
    assert candidates(glossary, relations.pattern_relations) == [
        ("Harbour Office", "uses", "tide gauge", 0.8, 0.87),
        ("tide gauge", "is_a", "instrument", 0.6, 1.0),
    ]
    item = "class `TidepoolMiddleware`: \n\nMiddleware for station lookups.\n"
    assert candidates(item, relations.pattern_relations) == [
        ("TidepoolMiddleware", "is_a", "Middleware", 0.6, 1.0),
    ]
    # A paragraph after an ordinary line defines nothing.
    assert candidates("Stations report hourly.\n\nThe gauge is used by Basin.\n", relations.pattern_relations) == [
        ("Basin", "uses", "gauge", 0.8, 1.0),
    ]


@pytest.mark.parametrize(
    "text,expected",
    [
        # "used to" + a verb states a purpose, not what is used.
        ("A gauge is a tool used to measure salinity.", [("gauge", "is_a", "tool", 0.6, 1.0)]),
        # A verb's subject is no prepositional object: the noun the phrase hangs on is...
        ("The cache of Basin uses Kestrel.", [("cache", "uses", "Kestrel", 0.8, 0.87)]),
        # ...or, when that is no mention, nothing.
        ("The silt that settles behind a weir forms a delta.", []),
        # A participle hangs on the noun right before it, wherever that stands.
        ("The details of the wire format used by Basin are long.", [("Basin", "uses", "wire format", 0.8, 1.0)]),
    ],
)
def test_purpose_and_prepositional_objects(text, expected):
    assert candidates(text, relations.pattern_relations) == expected


def test_a_present_participle_produces():
    assert candidates("Basin ships a command line tool producing `.tide` and `.wave` files.", relations.pattern_relations) == [
        ("command line tool", "produces", ".tide", 0.7, 1.0),
        ("command line tool", "produces", ".wave", 0.7, 1.0),
    ]


def test_a_code_name_followed_by_its_kind():
    assert candidates("The `tidepool` message queue library is small.", relations.pattern_relations) == [
        ("tidepool", "is_a", "message queue library", 0.6, 1.0),
    ]
    # A capitalised name before a phrase is its modifier ("the Basin standard library"),
    # and one kind noun alone says little.
    assert candidates("The Basin standard library is small.", relations.pattern_relations) == []
    assert candidates("The `tidepool` module is small.", relations.pattern_relations) == []


def test_located_in_from_a_participle_without_a_verb():
    assert candidates("Basin sends to the Tide Exchange hosted at tides.example.org.", relations.pattern_relations) == [
        ("Tide Exchange", "located_in", "tides.example.org", 0.75, 1.0),
    ]
    assert candidates("Mailing lists are hosted by SourceHut.", relations.pattern_relations) == [
        ("Mailing lists", "located_in", "SourceHut", 0.75, 0.87),
    ]


def test_examples_after_such_as_share_the_relation():
    assert candidates("Kestrel is used by stations such as Heron and Egret.", relations.pattern_relations) == [
        ("stations", "uses", "Kestrel", 0.8, 1.0),
        ("Heron", "uses", "Kestrel", 0.8, 0.769),
        ("Egret", "uses", "Kestrel", 0.8, 0.769),
        ("Heron", "is_a", "stations", 0.55, 1.0),
        ("Egret", "is_a", "stations", 0.55, 1.0),
    ]


def test_a_pronoun_opens_a_clause_and_is_in_no_list():
    text = "`basin` laid the ground for the ingest layer, and it remains part of Insight."
    assert candidates(text, relations.pattern_relations, title="basin — the broker") == [
        ("basin", "part_of", "Insight", 0.8, 1.0),
    ]


def test_appearing_in_a_list_is_part_of_it():
    text = "`TidepoolMiddleware` must appear in `MIDDLEWARE` before the cache."
    assert candidates(text, relations.pattern_relations) == [("TidepoolMiddleware", "part_of", "MIDDLEWARE", 0.7, 0.87)]


def test_an_insertion_giving_another_name_is_skipped():
    text = "Tidepool, or `tp` as short version, is a message broker."
    assert candidates(text, relations.pattern_relations) == [("Tidepool", "is_a", "message broker", 0.6, 0.87)]


def test_support_between_named_things_integrates_them():
    assert candidates("Then Basin supports Heron and Kestrel.", relations.pattern_relations) == [
        ("Basin", "integrates_with", "Heron", 0.7, 1.0), ("Basin", "integrates_with", "Kestrel", 0.7, 1.0),
    ]
    assert candidates("The Export API is supported by Heron.", relations.pattern_relations) == [
        ("Heron", "integrates_with", "Export API", 0.7, 1.0),
    ]
    # A property is no named thing.
    assert candidates("Then Basin only supports synchronous code.", relations.pattern_relations) == []


def test_what_is_said_of_a_plural_noun_before_a_colon_is_said_of_the_names_listed():
    assert candidates("Then Basin uses two formats: Parquet and Avro.", relations.pattern_relations) == [
        ("Basin", "uses", "formats", 0.8, 0.87), ("Basin", "uses", "Parquet", 0.8, 0.769),
        ("Basin", "uses", "Avro", 0.8, 0.769), ("Parquet", "is_a", "formats", 0.6, 1.0),
        ("Avro", "is_a", "formats", 0.6, 1.0),
    ]


def test_a_name_before_an_adjective_noun_is_its_modifier():
    assert candidates("Then WSGI is the main Python standard for servers.", relations.pattern_relations) == [
        ("WSGI", "is_a", "Python standard", 0.6, 0.87),
    ]


def test_code_defines_the_code_it_provides():
    text = "This module provides :class:`Tide` and :func:`ebb`. It provides fast access."
    assert candidates(text, relations.pattern_relations, title="tidepool — Tides") == [
        ("tidepool", "defines", "Tide", 0.7, 1.0), ("tidepool", "defines", "ebb", 0.7, 1.0),
    ]
    # A name is no code: what it provides, it does not define.
    assert candidates("Then Heron provides :class:`Tide`.", relations.pattern_relations) == []


def test_an_instruction_to_specify_is_no_definition():
    assert candidates("Then each client must specify the Basin port. Then Heron specifies Kestrel.", relations.pattern_relations) == [
        ("Heron", "defines", "Kestrel", 0.8, 1.0),
    ]


def test_a_participle_after_a_describing_noun_is_said_of_the_named_thing():
    assert candidates("Chlorophyll is a green pigment found in the chloroplasts of plant cells.", relations.pattern_relations) == [
        ("Chlorophyll", "is_a", "pigment", 0.6, 0.87), ("Chlorophyll", "located_in", "chloroplasts", 0.75, 0.87),
    ]
    assert candidates("Then Heron, a small relay used by Basin, is here.", relations.pattern_relations) == [
        ("Heron", "is_a", "relay", 0.55, 0.87), ("Basin", "uses", "Heron", 0.8, 1.0),
    ]


def test_based_on_is_use_and_compatible_with_integrates():
    found = [candidates(t, relations.pattern_relations) for t in (
        "Then Basin is based on Heron.", "Then Basin is based in Lisbon.", "Then Basin is compatible with Heron.",
    )]
    assert found == [
        [("Basin", "uses", "Heron", 0.7, 1.0)], [("Basin", "located_in", "Lisbon", 0.8, 1.0)],
        [("Basin", "integrates_with", "Heron", 0.7, 1.0)],
    ]


@pytest.mark.parametrize(
    "text,expected",
    [
        ("Then Basin is implemented with Heron.", [("Basin", "uses", "Heron", 0.75, 1.0)]),
        ("Then Basin is written in Kestrel.", [("Basin", "uses", "Kestrel", 0.75, 1.0)]),
        ("Then Basin is backed by Heron.", [("Basin", "uses", "Heron", 0.7, 1.0)]),
        # A participle after a describing noun is said of the named thing, code or not.
        ("Then Heron, a small relay implemented with the Kestrel toolkit, is here.", [
            ("Heron", "is_a", "relay", 0.55, 0.87), ("Heron", "uses", "Kestrel", 0.75, 0.87),
        ]),
        # Written by someone is still ownership.
        ("Then Basin is written by Heron.", [("Basin", "owned_by", "Heron", 0.8, 1.0)]),
    ],
)
def test_what_a_thing_is_implemented_with_or_backed_by_it_uses(text, expected):
    assert candidates(text, relations.pattern_relations) == expected


def test_a_comma_closing_an_opening_clause_ends_no_list_of_subjects():
    text = "Since the relays require the tide table, `Basin` must appear in `STATIONS`."
    assert candidates(text, relations.pattern_relations) == [
        ("relays", "depends_on", "tide table", 0.85, 0.87), ("Basin", "part_of", "STATIONS", 0.7, 0.87),
    ]


def test_coordinate_adjectives_before_a_category():
    assert candidates("Then Kestrel is the new, buoy-friendly protocol.", relations.pattern_relations) == [
        ("Kestrel", "is_a", "buoy-friendly protocol", 0.6, 0.87),
    ]
    # A comma after anything but adjectives still ends the phrase.
    assert candidates("Then Kestrel is, however, the protocol.", relations.pattern_relations) == []


def test_a_coordination_skips_a_parenthesis_and_kind_words_beside_code():
    found = candidates(
        "This module provides :class:`Tide` objects (the :class:`Tide` class) and the functions :func:`ebb`, :func:`flow`.",
        relations.pattern_relations, title="tidepool — Tides",
    )
    assert found == [
        ("tidepool", "defines", "Tide", 0.7, 1.0), ("tidepool", "defines", "ebb", 0.7, 1.0),
        ("tidepool", "defines", "flow", 0.7, 1.0),
    ]
    found = candidates("Then Estuary is specified by RFC 9999 (which obsoletes RFC 8888) and by ECMA-999.", relations.pattern_relations)
    assert ("ECMA-999", "defines", "Estuary", 0.8, 1.0) in found and ("RFC 8888", "defines", "Estuary", 0.8, 1.0) not in found


def test_what_is_added_to_a_thing_is_part_of_it():
    assert candidates(
        "Adds the `station` attribute, naming the nearest buoy, to every `TideReading` object.", relations.pattern_relations,
    ) == [("station", "part_of", "TideReading", 0.75, 1.0)]
    assert candidates("It guards gauges by appending the tide marks to Basin tables.", relations.pattern_relations) == [
        ("tide marks", "part_of", "Basin tables", 0.75, 1.0),
    ]
    assert candidates("Then Heron never adds tide marks to Basin.", relations.pattern_relations) == []


def test_what_is_removed_from_a_thing_was_part_of_it():
    assert candidates(
        "You might as well remove the `Heron` line from `STACK` and `'tide.marks'` from your `APPS`.", relations.pattern_relations,
    ) == [("Heron", "part_of", "STACK", 0.75, 1.0), ("'tide.marks'", "part_of", "APPS", 0.75, 1.0)]
    assert candidates("Deleting the Kestrel relay from the Basin cluster frees a port.", relations.pattern_relations) == [
        ("Kestrel relay", "part_of", "Basin cluster", 0.75, 1.0),
    ]
    assert candidates("Then add `Kestrel` to `HERONS` and `Avro` to `FORMATS`.", relations.pattern_relations) == [
        ("Kestrel", "part_of", "HERONS", 0.75, 1.0), ("Avro", "part_of", "FORMATS", 0.75, 1.0),
    ]
    assert candidates("Never remove `Kestrel` from `HERONS`.", relations.pattern_relations) == []


def test_a_passive_product_points_from_its_maker():
    assert candidates("Oxygen is produced by plants.", relations.pattern_relations) == [("plants", "produces", "Oxygen", 0.7, 1.0)]
    assert candidates("The file `basin.lock` generated by `heron build` lists the pins.", relations.pattern_relations) == [
        ("heron build", "produces", "basin.lock", 0.7, 1.0),
    ]
    assert candidates("The default `tide.cfg` created by `heron init` has `Kestrel` enabled.", relations.pattern_relations) == [
        ("heron init", "produces", "tide.cfg", 0.7, 1.0),
    ]
    # Made by a person or a group: no product; written/created by is owned_by.
    assert candidates("The Basin toolkit, created by Ada Lovelace, keeps tide tables.", relations.pattern_relations) == [
        ("Basin", "owned_by", "Ada Lovelace", 0.7, 0.87),
    ]
    assert candidates("Basin was created by Ada Lovelace.", relations.pattern_relations) == [
        ("Basin", "owned_by", "Ada Lovelace", 0.8, 1.0),
    ]


def test_a_participle_opening_its_clause_is_said_of_the_copulas_complements():
    assert candidates("The two supported by Kestrel are Basin and Heron.", relations.pattern_relations) == [
        ("Kestrel", "integrates_with", "Basin", 0.7, 0.87), ("Kestrel", "integrates_with", "Heron", 0.7, 0.87),
    ]
    assert candidates(
        "There are several tide bindings; the only ones used by Kestrel are `basin` and `heron`.", relations.pattern_relations,
    ) == [("Kestrel", "uses", "basin", 0.8, 0.87), ("Kestrel", "uses", "heron", 0.8, 0.87)]
    # A noun of its own before the participle, or a denial: nothing for the complements.
    assert candidates("Those supported by Kestrel are not Basin.", relations.pattern_relations) == []
    assert candidates("The backend used by Kestrel is Basin.", relations.pattern_relations) == [
        ("Kestrel", "uses", "backend", 0.8, 1.0),
    ]


def test_a_participle_without_a_copula_hangs_on_the_nearest_noun_only():
    assert candidates("Basin links tide gauges and relay daemons written in Rust.", relations.pattern_relations) == [
        ("relay daemons", "uses", "Rust", 0.75, 1.0),
    ]
    assert candidates("Tide gauges and relay daemons used by Basin stay small.", relations.pattern_relations) == [
        ("Basin", "uses", "relay daemons", 0.8, 1.0),
    ]
    # With a copula the whole list is the subject.
    assert candidates("Tide gauges and relay daemons are used by Basin.", relations.pattern_relations) == [
        ("Basin", "uses", "relay daemons", 0.8, 1.0), ("Basin", "uses", "Tide gauges", 0.8, 1.0),
    ]


def test_an_opening_condition_states_no_relation():
    assert candidates("If Basin needs Kestrel, install Heron first.", relations.pattern_relations) == []
    assert candidates("Unless Basin uses Kestrel, the relay is idle.", relations.pattern_relations) == []
    assert candidates("Should your relay require Kestrel, Basin uses Heron.", relations.pattern_relations) == [
        ("Basin", "uses", "Heron", 0.8, 1.0),
    ]
    assert candidates("Basin uses Kestrel if Heron is missing.", relations.pattern_relations) == [
        ("Basin", "uses", "Kestrel", 0.8, 1.0),
    ]


def test_where_a_thing_is_kept_or_lives_is_where_it_is_located():
    assert candidates("The tide tables are kept in Basin.", relations.pattern_relations) == [
        ("tide tables", "located_in", "Basin", 0.7, 1.0),
    ]
    assert candidates("Herons live in marshes and estuaries.", relations.pattern_relations) == [
        ("herons", "located_in", "marshes", 0.7, 1.0), ("herons", "located_in", "estuaries", 0.7, 1.0),
    ]
    assert candidates("The Kestrel wheel is installed under the Basin prefix.", relations.pattern_relations) == [
        ("Kestrel wheel", "located_in", "Basin prefix", 0.7, 0.87),
    ]


def test_what_a_thing_is_made_of_is_part_of_it():
    assert candidates("Basin grit is made of quartz and feldspar.", relations.pattern_relations) == [
        ("quartz", "part_of", "Basin grit", 0.7, 1.0), ("feldspar", "part_of", "Basin grit", 0.7, 1.0),
    ]
    assert candidates("A Kestrel frame is composed of a header and a payload.", relations.pattern_relations) == [
        ("header", "part_of", "Kestrel frame", 0.7, 0.87), ("payload", "part_of", "Kestrel frame", 0.7, 0.87),
    ]


def test_a_possessor_on_the_right_is_not_the_object():
    assert candidates("Kestrel uses Basin's tide tables.", relations.pattern_relations) == [
        ("Kestrel", "uses", "tide tables", 0.8, 1.0),
    ]
    # A quoted name is no possessor.
    assert candidates("Kestrel uses 'basin' tables and Heron.", relations.pattern_relations) == [
        ("Kestrel", "uses", "basin", 0.8, 1.0),
    ]


def test_a_means_after_an_infinitives_object_goes_with_the_subject():
    assert candidates(
        "When no tables are found, Kestrel will try to build a tide table using the gauge's tide records.", relations.pattern_relations,
    ) == [("Kestrel", "produces", "tide table", 0.7, 0.625), ("Kestrel", "uses", "tide records", 0.8, 0.87)]
    # No subject before the infinitive: nothing; no infinitive: the noun before it.
    assert candidates("A script to draw tide charts using Basin.", relations.pattern_relations) == [
        ("script", "uses", "Basin", 0.8, 1.0),
    ]  # (not "A tool to ...": a bare kind noun names no one thing, test_a_bare_kind_noun_is_no_source_of_a_relation)
    assert candidates("To draw tide charts using Basin, run it.", relations.pattern_relations) == []
    assert candidates("The relay using Basin is fast.", relations.pattern_relations) == [("relay", "uses", "Basin", 0.8, 1.0)]


def test_a_byline_names_the_owners_of_the_documents_subject():
    text = "Basin tide tables\n=================\n2004, Ada Lovelace, Grace Hopper\n\nThe tables list tides."
    assert candidates(text, relations.structural_relations, title="Basin tide tables") == [
        ("Basin tide tables", "owned_by", "Ada Lovelace", 0.7, 1.0), ("Basin tide tables", "owned_by", "Grace Hopper", 0.7, 1.0),
    ]
    text = "# Basin tide tables\n\nBy Ada Lovelace and Grace Hopper\n\nThe tables list tides."
    assert candidates(text, relations.structural_relations, title="Basin tide tables") == [
        ("Basin tide tables", "owned_by", "Ada Lovelace", 0.7, 1.0), ("Basin tide tables", "owned_by", "Grace Hopper", 0.7, 1.0),
    ]
    # A line of names with no byline opening is none.
    text = "# Supported platforms\n\nRed Hat Linux, Apple Mac OS\n\nBoth work."
    assert candidates(text, relations.structural_relations, title="Supported platforms") == []


def test_a_noun_sharing_a_compounds_head_names_no_category():
    assert candidates("`heron` is the original tide and flood gauge.", relations.pattern_relations) == [
        ("heron", "is_a", "flood gauge", 0.6, 0.87),
    ]
    # An adjective opens the second conjunct, or a determiner: two categories.
    assert candidates("Copper is a metal and electrical conductor.", relations.pattern_relations) == [
        ("Copper", "is_a", "metal", 0.6, 1.0), ("Copper", "is_a", "electrical conductor", 0.6, 1.0),
    ]
    assert candidates("Kestrel is a relay and a tide gauge.", relations.pattern_relations) == [
        ("Kestrel", "is_a", "relay", 0.6, 1.0), ("Kestrel", "is_a", "tide gauge", 0.6, 1.0),
    ]


def test_typed_relations_reach_the_database(tmp_path):
    """The rules above, through the whole pipeline: extraction, linking and refinement."""
    from llm_graphrag.db import open_database
    from llm_graphrag.extract import extract_and_link
    from llm_graphrag.schema import set_setting

    db = open_database(tmp_path / "graphrag.db")
    set_setting(db, "extract", {"ner": "off"})
    text = (
        "Heron is a relay. The `Heron` class adds the `tide` attribute, naming the buoy, to every `Reading` object. "
        "Heron is implemented with Kestrel. So Heron currently supports two formats: Parquet and Avro."
    )
    with db.atomic():
        db["docs"].insert({"id": 1, "path": "/docs/heron.md", "title": "Heron", "hash": "h1"})
        db["chunks"].insert({"doc_id": 1, "seq": 0, "content": text})
    extract_and_link(db)
    found = set(db.execute(
        "select s.name, r.rel, d.name from relations r join entities s on s.id = r.src_id "
        "join entities d on d.id = r.dst_id where r.rel != 'related_to'"
    ).fetchall())
    assert {("tide", "part_of", "Reading"), ("Heron", "uses", "Kestrel")} <= found
    # integrates_with is symmetric: stored either way round.
    for other in ("Parquet", "Avro"):
        assert ("Heron", "integrates_with", other) in found or (other, "integrates_with", "Heron") in found


def test_a_list_of_indefinite_noun_phrases_holds_no_apposition():
    text = "Then x may be either a gauge, a relay, a buoy or a tide table."
    assert [c for c in candidates(text, relations.pattern_relations) if c[1] == "is_a"] == []
    # A name before the comma still opens an apposition.
    assert candidates("It holds the sources for Basin, a message broker.", relations.pattern_relations) == [
        ("Basin", "is_a", "message broker", 0.55, 1.0),
    ]


def test_a_plural_copula_before_an_adverb_names_no_category():
    assert candidates("Then tide tables are highly gauge dependent.", relations.pattern_relations) == []
    assert candidates("Then tide tables are now buoy records.", relations.pattern_relations) == []
    assert candidates("Then tide tables are buoy records.", relations.pattern_relations) == [
        ("tide tables", "is_a", "buoy records", 0.6, 1.0),
    ]


def test_a_plural_verb_before_a_code_span_is_a_verb_not_a_noun():
    assert candidates("Then `Heron` supports `Kestrel`. The modern relay requires :class:`Tide`.", relations.pattern_relations) == [
        ("Heron", "integrates_with", "Kestrel", 0.7, 1.0), ("relay", "depends_on", "Tide", 0.85, 1.0),
    ]


def test_names_counted_after_there_are_and_a_comma_are_each_one():
    assert candidates("There are only two relays, `Heron` and `Egret`.", relations.pattern_relations) == [
        ("Heron", "is_a", "relays", 0.6, 1.0), ("Egret", "is_a", "relays", 0.6, 1.0),
    ]
    # Uncounted, or not opened by "there are", a comma lists nothing of the kind.
    assert candidates("There are relays, `Heron` and `Egret`.", relations.pattern_relations) == []
    assert candidates("Basin reads two relays, `Heron` and `Egret`.", relations.pattern_relations) == []


def test_a_title_before_a_full_name_is_what_the_name_is():
    found = candidates("The orchard was planted by the gardener Rosa Whitlock, and her cousin Tom Ashby sold the apples.", relations.pattern_relations)
    assert ("Rosa Whitlock", "is_a", "gardener", 0.6, 1.0) in found
    # After a possessive the noun is a relation to the possessor (her cousin), no kind.
    assert ("Tom Ashby", "is_a", "cousin", 0.6, 1.0) not in found
    # A one-word name, or no "the" before the noun, tells no title.
    found = candidates("The gardener Rosa pruned it. Orchard Rosa Whitlock grew.", relations.pattern_relations)
    assert not [c for c in found if c[1] == "is_a"]


def test_a_maker_after_a_participle_with_no_copula_owns_the_thing():
    found = candidates("The almanac, published by Harriet Quill in 1802, sold well.", relations.pattern_relations)
    assert ("almanac", "owned_by", "Harriet Quill", 0.75, 1.0) in found
    found = candidates("The Quill Press was founded in 1790 by the printer Harriet Quill.", relations.pattern_relations)
    assert ("Quill Press", "owned_by", "Harriet Quill", 0.75, 0.769) in found
    assert ("Harriet Quill", "is_a", "printer", 0.6, 1.0) in found


def test_a_name_in_a_name_is_located_in_it():
    found = candidates("The ferry leaves the Harbour Museum in Port Ellen at noon.", relations.pattern_relations)
    assert ("Harbour Museum", "located_in", "Port Ellen", 0.6, 1.0) in found
    # A concept in a name, or a name and a name with more between, is no place in a place.
    found = candidates("The gauges in Port Ellen and Islay in winter read low.", relations.pattern_relations)
    assert not [c for c in found if c[1] == "located_in"]


def test_a_work_by_a_name_is_owned_by_it():
    found = candidates("Ivanhoe is a historical novel by Walter Scott, and the list is sorted by Name.", relations.pattern_relations)
    assert ("Ivanhoe", "owned_by", "Walter Scott", 0.7, 1.0) in found
    assert not [c for c in found if c[1] == "owned_by" and c[2] == "Name"]


def test_a_noun_from_a_name_is_located_in_it():
    found = candidates("Ada Thorne, a weaver from Leeds, sold cloth to a merchant from Bruges.", relations.pattern_relations)
    assert ("Ada Thorne", "located_in", "Leeds", 0.6, 1.0) in found
    assert ("merchant", "located_in", "Bruges", 0.6, 1.0) in found
    # A verb's object: "from" says where it came from, not where it is.
    found = candidates("The guild received a royal charter from Ada Thorne.", relations.pattern_relations)
    assert not [c for c in found if c[1] == "located_in"]


def test_a_capital_is_part_of_what_it_is_the_capital_of():
    found = candidates("Tartu is a town on the Emajõgi and the capital of Tartu County.", relations.pattern_relations)
    assert ("Tartu", "part_of", "Tartu County", 0.6, 1.0) in found
    found = candidates("The museum holds Port Ellen, the capital of Islay, on a map.", relations.pattern_relations)
    assert ("Port Ellen", "part_of", "Islay", 0.6, 1.0) in found


def test_names_typed_by_ner_count_as_names():
    from llm_graphrag.extraction import Mention

    text = "The Harbour Museum in Port Ellen keeps a map by the surveyor Ada Thorne from Leeds."
    at = lambda s, typ: Mention(s, typ, text.index(s), text.index(s) + len(s))  # noqa: E731
    group = [at("Harbour Museum", "ORG"), at("Port Ellen", "GPE"), at("map", "concept"), at("surveyor", "concept"), at("Ada Thorne", "PERSON"), at("Leeds", "GPE")]
    found = {(c.src.name, c.rel, c.dst.name) for c in relations._place_in_place(group, text, text)}
    assert found == {("Harbour Museum", "located_in", "Port Ellen")}
    found = {(c.src.name, c.rel, c.dst.name) for c in relations._titled_names(group, text, text)}
    assert found == {("Ada Thorne", "is_a", "surveyor")}


def test_based_in_after_a_phrase_places_the_noun_the_phrase_hangs_on():
    found = candidates("The Quill Press is a printing house for almanacs based in Leeds.", relations.pattern_relations)
    assert ("Quill Press", "located_in", "Leeds", 0.75, 1.0) in found
    assert not [c for c in found if c[0] == "almanacs"]


@pytest.mark.parametrize(
    "text,expected",
    [
        ("The steam engine brought about the Industrial Revolution.", [("steam engine", "causes", "Industrial Revolution", 0.75, 0.87)]),
        ("The survey gave rise to the Tidal Atlas.", [("survey", "causes", "Tidal Atlas", 0.75, 0.87)]),
        ("The tide brought the boats about noon.", []),
    ],
)
def test_phrasal_causatives(text, expected):
    assert [c for c in candidates(text, relations.pattern_relations) if c[1] == "causes"] == expected


@pytest.mark.parametrize(
    "between,expected",
    [
        (" developed the ", "developed"),
        (" was born in ", "was born in"),
        (" is known for ", "is known for"),
        (" later helped bring about the ", "later helped bring about"),
        (" has been in the collection of the ", "has been in the collection of"),
        (" was a Polish-born ", "was"),
        (" on the ", None),  # no verb
        (" developed paper ", None),  # ends in a noun: the object is not what follows
        (" and ", None),
        (", which built ", None),  # a clause break
        (" who built the ", None),
        (" did not invent the ", None),  # a denial states nothing
        (" never designed ", None),
        (" used to amplify ", "used to amplify"),  # an infinitive after a verb ends a phrase
    ],
)
def test_relation_phrase(between, expected):
    assert relations.relation_phrase(between) == expected


def _stated(chunk, mentions, context):
    """What ``stated_relations`` finds after ``pattern_relations``, as the engine runs them."""
    relations.pattern_relations(chunk, mentions, context)
    return relations.stated_relations(chunk, mentions, context)


@pytest.mark.parametrize(
    "text,expected",
    [
        ("Tomas Berg repaired the Harbour Bridge.", [("Tomas Berg", "stated", "Harbour Bridge", 0.55, 0.833)]),
        ("Tomas Berg was born in Umea.", [("Tomas Berg", "stated", "Umea", 0.55, 0.769)]),
        # past an apposition, and past a prepositional object, to the subject
        ("Tomas Berg, a carpenter from Umea, repaired the Harbour Bridge.", [
            ("Tomas Berg", "stated", "Harbour Bridge", 0.55, 0.833),
        ]),
        ("The workshop of Tomas Berg built the Harbour Bridge.", [("workshop", "stated", "Harbour Bridge", 0.55, 0.833)]),
        # nouns a linking verb takes are part of the phrase
        ("Umea has a harbour on the coast of Sweden.", [("Umea", "stated", "Sweden", 0.55, 0.588)]),
        ("Umea is a town on the coast of Sweden.", []),  # located_in (_kind_in_place)
        ("The Harbour Bridge is known for its cables.", [("Harbour Bridge", "stated", "cables", 0.55, 0.714)]),
        # a relative clause is said of the mention before it; the main clause goes on past it
        ("Tomas Berg, who lived in Umea, repaired the Harbour Bridge.", [
            ("Tomas Berg", "stated", "Umea", 0.55, 0.833),
            ("Tomas Berg", "stated", "Harbour Bridge", 0.55, 0.833),
        ]),
        ("The Harbour Bridge, which spans the Pite River, opened in 1901.", [
            ("Harbour Bridge", "stated", "Pite River", 0.55, 0.833),
            ("Harbour Bridge", "stated", "1901", 0.55, 0.833),
        ]),
        # "an engineer who": the one the noun describes
        ("Ada Lund is an engineer who repaired the Harbour Bridge.", [("Ada Lund", "stated", "Harbour Bridge", 0.55, 0.833)]),
        # coordinated objects and subjects share the relation
        ("Tomas Berg repaired the Harbour Bridge, the Umea Tower and the Pite Mill.", [
            ("Tomas Berg", "stated", "Harbour Bridge", 0.55, 0.833),
            ("Tomas Berg", "stated", "Umea Tower", 0.55, 0.667),
            ("Tomas Berg", "stated", "Pite Mill", 0.55, 0.526),
        ]),
        ("Tomas Berg and Ada Lund repaired the Harbour Bridge.", [
            ("Ada Lund", "stated", "Harbour Bridge", 0.55, 0.833),
            ("Tomas Berg", "stated", "Harbour Bridge", 0.55, 0.833),
        ]),
        # a comma alone makes no list: "In Umea," is no subject
        ("In Umea, Ada Lund repaired the Harbour Bridge, the tallest in Sweden.", [
            ("Ada Lund", "stated", "Harbour Bridge", 0.55, 0.833),
        ]),
        # a participle after a comma is said of the noun before it (a reduced relative clause)
        ("Umea Academy, founded in 1897, is a school.", [("Umea Academy", "stated", "1897", 0.55, 0.833)]),
        ("The Umea Press was a machine made to print maps.", [
            ("Umea Press", "stated", "maps", 0.55, 0.625),
            ("machine", "stated", "maps", 0.55, 0.769),
        ]),
        # nothing stated: a denial, a condition, no verb
        ("Tomas Berg never repaired the Harbour Bridge.", []),
        ("If Tomas Berg repaired the Harbour Bridge, it would stand.", []),
        ("Tomas Berg and the Harbour Bridge.", []),
        ("Tomas Berg repaired the Harbour Bridge", []),  # a heading: no clause
        ("| Tomas Berg | repaired the Harbour Bridge. |", []),  # a table row
        ("A time object t is aware.", []),  # a bare "object" after a noun is no verb
        # a typed pattern already joins the two
        ("Copper is a metal.", []),
        ("The Umea Guild was founded by Tomas Berg in 1850.", []),
    ],
)
def test_stated_relations(text, expected):
    assert candidates(text, _stated) == expected


def test_stated_relations_keep_their_phrase_and_can_be_switched_off():
    text = "Tomas Berg was born in Umea."
    chunk = ChunkText(1, 1, text)
    context = ExtractionContext()
    context.start_document([chunk])
    mentions = finish_mentions(chunk, [m for e in EXTRACTORS for m in e(chunk, context)], context)
    assert [c.extractor for c in _stated(chunk, mentions, context)] == ["stated: was born in"]
    settings = extraction.ExtractionSettings(stated=False)
    assert candidates(text, _stated, settings=settings) == []
    assert fact_text("Tomas Berg", "stated", "Umea", "was born in") == "Tomas Berg was born in Umea"


def test_a_pronoun_after_a_noun_is_no_title_of_its_antecedent():
    # "winters he" is no "the surveyor Ada Thorne": the pronoun stands for Ada Thorne, who is
    # no winter.
    found = candidates(
        "Ada Thorne was a surveyor from Leeds. Over the next winters he charted the Islay coast.",
        relations.pattern_relations,
    )
    assert ("Ada Thorne", "is_a", "surveyor", 0.6, 1.0) in found
    assert not [c for c in found if c[2] in ("winters", "winter")]


@pytest.mark.parametrize(
    "text,expected",
    [
        ("Tomas Berg wrote Umea Tales.", [("Umea Tales", "owned_by", "Tomas Berg", 0.7, 1.0)]),
        # coordinated makers, an apposition, a relative pronoun after a describing noun
        ("Tomas Berg and Ada Lund founded the Umea Guild in 1850.", [
            ("Umea Guild", "owned_by", "Ada Lund", 0.7, 0.87),
            ("Umea Guild", "owned_by", "Tomas Berg", 0.7, 0.87),
        ]),
        ("Tomas Berg, a carpenter from Umea, designed the Harbour Bridge.", [
            ("Tomas Berg", "is_a", "carpenter", 0.55, 1.0),
            ("Harbour Bridge", "owned_by", "Tomas Berg", 0.7, 0.87),
            ("Tomas Berg", "located_in", "Umea", 0.6, 1.0),
        ]),
        ("Ada Lund is an engineer who designed the Harbour Bridge.", [
            ("Ada Lund", "is_a", "engineer", 0.6, 1.0),
            ("Harbour Bridge", "owned_by", "Ada Lund", 0.7, 0.87),
        ]),
        # no maker: a thing, not a name, before the verb; a participle with its preposition
        ("The workshop of Tomas Berg designed the Harbour Bridge.", []),
        ("The bridge designed in Umea crosses the river.", []),
    ],
)
def test_an_active_verb_of_making_names_the_maker(text, expected):
    assert candidates(text, relations.pattern_relations) == expected


def test_an_object_pronoun_stands_for_the_topic_not_its_own_subject():
    # "Tomas Berg painted it": "it" is the bridge, so the clause states Berg repaired the bridge
    found = candidates("The Harbour Bridge opened in 1901. Tomas Berg repaired it in 1950.", _stated)
    assert ("Tomas Berg", "stated", "Harbour Bridge", 0.55, 0.909) in found
    assert not [c for c in found if c[0] == c[2]]


def test_a_verb_after_a_focus_adverb_is_a_verb_and_an_event_of_a_thing_is_its_doing():
    found = candidates("The movement of the dunes also causes most floods and landslides.", relations.pattern_relations)
    assert [c[:3] for c in found] == [("dunes", "causes", "floods"), ("dunes", "causes", "landslides")]
    # "causes" is no noun here, and the head of a thing (not an event) stays the subject.
    found = candidates("The shell of the crab also causes cuts.", relations.pattern_relations)
    assert [c[:3] for c in found] == [("shell", "causes", "cuts")]


def test_what_a_publisher_publishes_it_produces():
    found = candidates("The Quill Press publishes several almanacs, including the Tidal Almanac.", relations.pattern_relations)
    assert [c[:3] for c in found if c[1] == "produces"] == [("Quill Press", "produces", "almanacs"), ("Quill Press", "produces", "Tidal Almanac")]


def test_a_modal_before_be_states_no_kind():
    # "will be", "can be": what a thing may, must or will be is no class it belongs to
    for text in (
        "The `TideMiddleware` will usually be a big hindrance to testing view functions.",
        "The tide gauge can be a useful tool for harbour pilots.",
    ):
        assert not [c for c in candidates(text, relations.pattern_relations) if c[1] == "is_a"], text
    # The present tense still does, and so does "to be"
    found = candidates("The tide gauge is a useful tool for harbour pilots.", relations.pattern_relations)
    assert ("tide gauge", "is_a", "tool") in [c[:3] for c in found]


def test_a_kind_in_a_place_is_located_in_the_place():
    found = candidates("Tarnby is a fishing town in eastern Lorvia.", relations.pattern_relations)
    assert ("Tarnby", "located_in", "Lorvia", 0.6, 1.0) in found
    found = candidates("Kestrel Bay, a village on the island of Orsk, has a mill.", relations.pattern_relations)
    assert ("Kestrel Bay", "located_in", "Orsk", 0.6, 1.0) in found
    # A kind of person in a place, or a concept after the preposition, is no location.
    found = candidates("Mara Lind was a weaver in Tarnby. Tarnby is a town in decline.", relations.pattern_relations)
    assert not [c for c in found if c[1] == "located_in"]


def test_what_a_thing_is_taken_for_is_what_it_is():
    found = candidates("The Kestrel Almanac is often described as the first tide table.", relations.pattern_relations)
    assert ("Kestrel Almanac", "is_a", "tide table", 0.6, 0.87) in found
    found = candidates("Tarnby Mill is considered one of the oldest mills.", relations.pattern_relations)
    assert ("Tarnby Mill", "is_a", "mills", 0.6, 0.87) in found
    # "seen in" says where, not what.
    assert not candidates("The Kestrel Almanac is seen in the harbour.", relations.pattern_relations)


def test_a_phrase_saying_where_a_thing_stands_is_located_in():
    found = candidates("The Harbour Bell hangs in the Tarnby Museum.", _stated)
    assert found == [("Harbour Bell", "located_in", "Tarnby Museum", 0.6, 0.769)]
    found = candidates("The Harbour Bell has been in the collection of the Tarnby Museum since 1901.", _stated)
    assert [c[:3] for c in found] == [("Harbour Bell", "located_in", "Tarnby Museum")]
    # Where one was born or worked stays stated.
    found = candidates("Tomas Berg was born in Umea.", _stated)
    assert [c[1] for c in found] == ["stated"]


def test_the_kind_of_place_before_a_name_is_what_the_name_is():
    found = candidates("The island of Orsk lies in the Lorvian Sea, near the town of Tarnby.", relations.pattern_relations)
    assert ("Orsk", "is_a", "island", 0.6, 1.0) in found
    assert ("Tarnby", "is_a", "town", 0.6, 1.0) in found
    # "lies in" is a pattern's now (test_where_a_place_lies_it_is...): no stated edge left to add
    assert [c[:3] for c in candidates("The island of Orsk lies in the Lorvian Sea.", relations.pattern_relations) if c[1] == "located_in"] == [("Orsk", "located_in", "Lorvian Sea")]
    # Not a kind of place ("the court of"), or no "the" before it.
    found = candidates("The court of Queen Mara met in an island of Orsk.", relations.pattern_relations)
    assert not [c for c in found if c[1] == "is_a"]


def test_an_apposition_with_a_superlative_says_what_a_name_is():
    found = candidates("Mount Orsk, the highest mountain of Lorvia, is steep.", relations.pattern_relations)
    assert ("Mount Orsk", "is_a", "mountain", 0.55, 0.87) in found
    # "the" alone opens no apposition: "Tk, the toolkit, and Tcl" may be a list.
    found = candidates("Mount Orsk, the mountain, and Lake Vell are near.", relations.pattern_relations)
    assert not [c for c in found if c[1] == "is_a"]


def test_a_name_that_built_or_operates_a_thing_owns_it():
    found = candidates("The Orsk Canal was built by the Lorvian Canal Company.", relations.pattern_relations)
    assert ("Orsk Canal", "owned_by", "Lorvian Canal Company", 0.7, 0.87) in found
    found = candidates("The Orsk Canal is operated by the Orsk Port Authority.", relations.pattern_relations)
    assert ("Orsk Canal", "owned_by", "Orsk Port Authority", 0.8, 0.87) in found
    # Code that built a file produces it; a common noun is no maker.
    found = candidates("The wall was built by workers.", relations.pattern_relations)
    assert not [c for c in found if c[1] in ("owned_by", "produces")]


def test_a_possessive_and_a_part_of_a_place_are_seen_through():
    found = candidates("The Tarnby Museum is the world's largest museum, located in the centre of Orsk City.", relations.pattern_relations)
    assert ("Tarnby Museum", "is_a", "museum", 0.6, 1.0) in found
    assert ("Tarnby Museum", "located_in", "Orsk City", 0.75, 0.87) in found
    assert not [c for c in found if c[2] in ("world", "centre")]


def test_a_restrictive_relative_clause_is_said_of_what_its_noun_describes():
    found = candidates("Basin is a toolkit that uses Heron.", relations.pattern_relations)
    assert ("Basin", "uses", "Heron", 0.8, 0.87) in found
    found = candidates("The heron is a wading bird that lives in coastal marshes.", relations.pattern_relations)
    assert ("heron", "located_in", "coastal marshes", 0.7, 0.87) in found
    # A bare kind before "that" names no one thing; "that use" is no verb of a singular.
    assert not candidates("Toolkits that use Heron are fast.", relations.pattern_relations)


def test_a_named_work_by_a_name_is_owned_by_it():
    found = candidates("The Harbour Bell by Mara Lind hangs in the Tarnby Museum.", relations.pattern_relations)
    assert ("Harbour Bell", "owned_by", "Mara Lind", 0.6, 1.0) in found
    assert [c[:3] for c in candidates("The Harbour Bell by Mara Lind hangs in the Tarnby Museum.", _stated)] == [
        ("Harbour Bell", "located_in", "Tarnby Museum"),
    ]
    # After a preposition, "by" names who did what the verb says.
    found = candidates("He was beaten at the Tarnby Regatta by Mara Lind.", relations.pattern_relations)
    assert not [c for c in found if c[1] == "owned_by"]


def test_a_date_before_and_is_no_subject():
    found = candidates("Tarnby Mills was founded by Mara Lind in 1904 and is headquartered in Orsk.", relations.pattern_relations)
    assert ("Tarnby Mills", "located_in", "Orsk", 0.75, 0.87) in found
    assert not [c for c in found if c[0] == "1904"]


def test_a_place_comma_place_after_a_preposition_is_located_in():
    found = candidates("The mill stands in Tarnby, Lorvia.", relations.pattern_relations)
    assert ("Tarnby", "located_in", "Lorvia", 0.6, 1.0) in found
    found = candidates("Mara Lind was born in Tarnby, in the Orsk Duchy.", relations.pattern_relations)
    assert ("Tarnby", "located_in", "Orsk Duchy", 0.6, 1.0) in found
    # A list of places, or a name opening its clause, is no place in a place.
    assert not candidates("She sold cloth in Tarnby, Orsk and Vell.", relations.pattern_relations)
    assert not candidates("In Tarnby, Mara Lind met Tomas Berg.", relations.pattern_relations)


def test_a_second_verb_phrase_is_said_of_the_sentences_subject():
    found = candidates("Tomas Berg was born in Umea and later repaired the Harbour Bridge.", _stated)
    assert ("Tomas Berg", "stated", "Harbour Bridge", 0.55, 0.769) in found
    assert not [c for c in found if c[0] == "Umea"]
    # A sentence opening with no name ("In Umea, ...") gives the second phrase no subject.
    assert not [c for c in candidates("In 1900 the river flooded Umea and destroyed the Harbour Bridge.", _stated) if c[2] == "Harbour Bridge"]


def test_a_participle_after_a_comma_skips_a_prepositional_object():
    found = candidates("The Orsk Reef is the largest reef in the world, located in the Lorvian Sea.", relations.pattern_relations)
    assert ("Orsk Reef", "located_in", "Lorvian Sea", 0.75, 0.87) in found
    assert not [c for c in found if c[0] == "world"]


def test_the_capital_and_largest_city_of_a_place_is_part_of_it():
    found = candidates("Tarnby is the capital and largest city of Lorvia.", relations.pattern_relations)
    assert ("Tarnby", "part_of", "Lorvia", 0.6, 1.0) in found


def test_a_passive_subject_is_not_a_prepositional_object_after_a_possessive():
    found = candidates("The Tarnby Museum is old. The glass dome in its main hall was designed by the architect Mara Lind.", relations.pattern_relations)
    assert ("glass dome", "owned_by", "Mara Lind", 0.75, 0.69) in found
    assert not [c for c in found if c[1] == "owned_by" and c[0] != "glass dome"]


def test_what_a_place_is_home_to_is_located_in_it():
    found = candidates("Tarnby is home to the Orsk Museum and the Lind Mill.", relations.pattern_relations)
    assert ("Orsk Museum", "located_in", "Tarnby", 0.75, 0.87) in found
    assert ("Lind Mill", "located_in", "Tarnby", 0.75, 0.87) in found


def test_derived_from_a_common_noun_is_no_subclass():
    found = candidates("Tarnbicin is a drug derived from marsh moulds.", relations.pattern_relations)
    assert not [c for c in found if c[1] == "is_a" and c[2] == "marsh moulds"]


def test_made_of_with_an_adverb_is_part_of():
    found = candidates("Orsk is a gas giant composed mainly of hydrogen and helium.", relations.pattern_relations)
    assert ("hydrogen", "part_of", "Orsk", 0.7, 1.0) in found and ("helium", "part_of", "Orsk", 0.7, 1.0) in found


def test_caused_or_triggered_by_points_from_the_cause_with_or_without_a_copula():
    found = candidates("Floods caused by heavy rain are common. Most floods are triggered by storms.", relations.pattern_relations)
    assert ("rain", "causes", "floods", 0.85, 0.87) in found
    assert ("storms", "causes", "floods", 0.85, 1.0) in found
    assert not [c for c in found if c[0].lower() == "floods"]


def test_a_series_or_group_of_things_is_those_things():
    found = candidates("Tarnbicin is a group of antibiotics. A seiche is a series of standing waves.", relations.pattern_relations)
    assert ("Tarnbicin", "is_a", "antibiotics", 0.85, 1.0) in found
    assert ("seiche", "is_a", "standing waves", 0.85, 1.0) in found


def test_an_apposition_after_a_named_right_side_is_no_second_item():
    found = candidates("The Orsk Guild was founded in 1863 by Mara Lind, a Lorvian weaver.", relations.pattern_relations)
    assert ("Orsk Guild", "owned_by", "Mara Lind", 0.75, 0.87) in found
    assert not [c for c in found if c[1] == "owned_by" and c[2] != "Mara Lind"]


def test_the_largest_city_of_a_place_is_located_in_it():
    found = candidates("Tarnby is the second-largest town of Lorvia.", relations.pattern_relations)
    assert ("Tarnby", "located_in", "Lorvia", 0.6, 1.0) in found
    # "of" after a kind that is no place: no location.
    assert not [c for c in candidates("Mara Lind is the best weaver of Lorvia.", relations.pattern_relations) if c[1] == "located_in"]


def test_a_copula_with_now_or_still_says_what_a_thing_is():
    found = candidates("The Lind House is now a museum, and the Orsk Mill is still a mill.", relations.pattern_relations)
    assert ("Lind House", "is_a", "museum", 0.6, 1.0) in found
    assert ("Orsk Mill", "is_a", "mill", 0.6, 1.0) in found


def test_written_is_a_participle_said_of_what_the_copula_names():
    found = pattern_triples("Tidegen is a small tool written in Rust.")
    assert ("Tidegen", "uses", "Rust") in found and ("small tool", "uses", "Rust") not in found
    found = pattern_triples("Estuary is an opera written by Ada Lovelace.")
    assert ("Estuary", "owned_by", "Ada Lovelace") in found and ("opera", "owned_by", "Ada Lovelace") not in found


def test_a_verb_after_a_comma_enclosed_insertion_is_said_of_the_name_before_it():
    found = pattern_triples("New Delhi, the capital of India, is a large city in the north.")
    assert ("Delhi", "is_a", "city") in found and ("capital", "is_a", "city") not in found
    found = pattern_triples("The Heron Tower, located in Bergen, was designed by Ada Lovelace.")
    assert ("Heron Tower", "owned_by", "Ada Lovelace") in found and ("Bergen", "owned_by", "Ada Lovelace") not in found
    found = pattern_triples("The Basin package, written in Rust, uses the Tide library.")
    assert ("Basin package", "uses", "Tide") in found


def test_what_flows_through_a_named_place_or_takes_place_in_one_is_in_it():
    assert ("Tide River", "located_in", "Bergen") in pattern_triples("The Tide River flows through Bergen and Oslo.")
    assert ("Tide River", "located_in", "Oslo") in pattern_triples("The Tide River flows through Bergen and Oslo.")
    assert ("festival", "located_in", "Bergen") in pattern_triples("The festival took place in Bergen in 1920.")
    # Through no named place: no place.
    assert not pattern_triples("Every request passes through the middleware stack.")


def test_a_name_with_its_kind_noun_cooccurs_as_the_phrase_does():
    found = {(src, dst) for src, _, dst, *_ in candidates("Heron is a Tide library that Basin uses.", relations.cooccurrence_relations)}
    assert ("Heron", "Tide library") in found and ("Heron", "Tide") in found and ("Tide", "Basin") in found


def test_what_a_module_page_documents_with_a_directive_is_part_of_the_module():
    text = ".. class:: Flood(level)\n\n   A rising tide.\n\n.. function:: ebb(level)\n\n   Lower the tide.\n\n.. method:: Flood.rise()\n"
    found = {(src, rel, dst) for src, rel, dst, *_ in candidates(text, relations.structural_relations, title="heron — Tide tools")}
    assert ("Flood", "part_of", "heron") in found and ("ebb", "part_of", "heron") in found
    assert not any(src.startswith("Flood.") and dst == "heron" for src, _, dst in found)  # left to qualified names
    # A page about no module: no part_of.
    found = candidates(text, relations.structural_relations, title="Tide tools")
    assert not [c for c in found if c[1] == "part_of" and c[2] != "Flood"]


def test_things_listed_before_and_other_are_of_its_kind():
    found = pattern_triples("Heron reads Basin, Tide and other formats.")
    assert ("Basin", "is_a", "formats") in found and ("Tide", "is_a", "formats") in found


def test_what_a_setting_entry_says_it_decides_is_configured_via_the_setting():
    text = (
        "### `TIDE_USE_CACHE`\n\nDefault: `False`\n\nWhether to keep the tide table in memory between requests.\n\n"
        "### `TIDE_TIMEOUT`\n\nDefault: `30`\n\nThe timeout of the Basin client, in seconds.\n\n"
        "### `TIDE_NAME`\n\nDefault: `None`\n\nIf set, Heron reads it.\n"
    )
    found = {(src, rel, dst) for src, rel, dst, *_ in candidates(text, relations.structural_relations, title="Settings")}
    assert ("tide table", "configured_via", "TIDE_USE_CACHE") in found
    assert ("Basin client", "configured_via", "TIDE_TIMEOUT") in found
    assert not [t for t in found if t[2] == "TIDE_NAME"]  # no "Whether to" nor "The X of": nothing said


def test_a_bare_kind_noun_is_no_source_of_a_relation():
    assert not [t for t in pattern_triples("A module to generate tide tables using hashes.") if t[0] == "module"]
    assert ("Tide", "uses", "hashes") in pattern_triples("The Tide module uses hashes.")


def test_numbers_in_a_list_of_parts_and_what_a_thing_was_declared():
    found = pattern_triples("The Tide Atlas is composed of over 2,900 individual maps and 900 charts.")
    assert ("individual maps", "part_of", "Tide Atlas") in found and ("charts", "part_of", "Tide Atlas") in found
    assert ("Tide Atlas", "is_a", "World Heritage Site") in pattern_triples("The Tide Atlas was declared a World Heritage Site in 1981.")
    assert ("lake", "is_a", "nature reserve") in pattern_triples("The lake was designated as a nature reserve.")
    assert not pattern_triples("Heron was named after a bird.")
    found = pattern_triples("The Tide River flows eastward across Norway and Sweden.")
    assert ("Tide River", "located_in", "Norway") in found and ("Tide River", "located_in", "Sweden") in found


def test_what_a_thing_comes_with_is_part_of_it_and_your_opens_a_prepositional_object():
    found = pattern_triples("Heron comes with a tide prediction engine and a chart renderer.")
    assert ("tide prediction engine", "part_of", "Heron") in found and ("chart renderer", "part_of", "Heron") in found
    assert pattern_triples("Each map in your atlas should be an instance of the `Chart` class.") == {("map", "is_a", "Chart")}


def test_what_a_thing_is_used_as_it_is_and_an_adverb_before_a_participle():
    found = pattern_triples("Tide is a small store used as a cache and a message broker.")
    assert ("Tide", "is_a", "cache") in found and ("Tide", "is_a", "message broker") in found
    assert not [t for t in found if t[1] == "uses"]
    assert ("Heron", "owned_by", "Tide Group") in pattern_triples("Heron is now maintained by the Tide Group.")


def test_examples_after_such_as_are_of_the_nearest_kind_only():
    found = pattern_triples("Bergen is known for its fish market, and painters such as Ada Lovelace lived there.")
    assert ("Ada Lovelace", "is_a", "painters") in found
    assert ("Ada Lovelace", "is_a", "fish market") not in found


def test_what_code_creates_it_produces_even_after_a_copula():
    found = pattern_triples("Tide tables are created by :func:`heron.read` on demand.")
    assert ("heron.read", "produces", "Tide tables") in found and not [t for t in found if t[1] == "owned_by"]
    assert ("Heron", "owned_by", "Ada Lovelace") in pattern_triples("Heron was created by Ada Lovelace.")


def test_where_a_thing_reads_its_configuration_and_what_an_option_sets_are_configuration():
    found = pattern_triples("The relay reads its configuration from `relay.toml` at startup.")
    assert ("relay", "configured_via", "relay.toml") in found
    found = pattern_triples("The `tide_level` option controls the chart colour; the `log_level` setting sets the verbosity.")
    assert ("chart colour", "configured_via", "tide_level") in found and ("verbosity", "configured_via", "log_level") in found
    assert not pattern_triples("The `tide_level` option is old.")


def test_a_version_after_an_item_goes_with_it_and_the_list_goes_on():
    found = pattern_triples("Heron requires CMake 3.10 or newer and a C99 compiler.")
    assert ("Heron", "depends_on", "CMake") in found and ("Heron", "depends_on", "C99 compiler") in found


def test_the_attribute_or_method_a_thing_has_is_part_of_it():
    found = pattern_triples("Every `Flood` object has a `level` attribute and a `rise()` method.")
    assert ("level", "part_of", "Flood") in found and ("rise", "part_of", "Flood") in found
    assert not pattern_triples("Heron has a `--verbose` flag.")  # a flag is no member of a thing


def test_a_plural_kind_before_a_list_of_its_members_is_what_each_of_them_is():
    found = pattern_triples("The chemist isolated the metals cobalt and nickel.")
    assert ("cobalt", "is_a", "metals") in found and ("nickel", "is_a", "metals") in found
    found = pattern_triples("He studied the three languages Latin, Greek and Hebrew.")
    assert {("Latin", "is_a", "languages"), ("Greek", "is_a", "languages"), ("Hebrew", "is_a", "languages")} <= found
    assert not [t for t in pattern_triples("Its tributaries drain Peru and Brazil.") if t[1] == "is_a"]


def test_the_names_after_among_them_are_of_the_counted_plural_kind_before():
    found = pattern_triples("Several large cities lie on its banks, among them Basel, Cologne and Düsseldorf.")
    assert {("Basel", "is_a", "cities"), ("Cologne", "is_a", "cities"), ("Düsseldorf", "is_a", "cities")} <= found
    assert not [t for t in found if t[1] == "is_a" and t[2] == "banks"]
    found = pattern_triples("The canal links three ports, among them Hull and Goole.")
    assert ("Hull", "is_a", "ports") in found and ("Goole", "is_a", "ports") in found


def test_the_name_after_a_building_kind_and_of_is_one_of_that_kind():
    found = pattern_triples("He stayed at the abbey of Cluny in Burgundy.")
    assert ("Cluny", "is_a", "abbey") in found and ("Cluny", "located_in", "Burgundy") in found
    assert not [t for t in pattern_triples("She wrote to the abbot of Cluny.") if t[1] == "is_a"]


def test_an_apposition_after_a_part_noun_and_of_is_part_of_the_whole():
    assert ("cerebrum", "part_of", "brain") in pattern_triples("The largest part of the brain, the cerebrum, controls movement.")
    assert ("core", "part_of", "Sun") in pattern_triples("The innermost layer of the Sun, the core, is extremely hot.")
    assert not [t for t in pattern_triples("The capital of the region, the city of Leeds, is large.") if t[1] == "part_of"]


def test_a_work_by_a_title_with_a_peoples_adjective_is_owned_by_the_name():
    found = pattern_triples("The opera is a work by the Italian composer Giuseppe Verdi.")
    assert ("opera", "owned_by", "Giuseppe Verdi") in found and ("Giuseppe Verdi", "is_a", "composer") in found


def test_a_superlative_among_a_kind_is_one_of_it():
    assert ("giraffe", "is_a", "land animals") in pattern_triples("The giraffe is the tallest of all land animals.")
    assert ("Honshu", "is_a", "Japanese islands") in pattern_triples("It lies on Honshu, the largest of the Japanese islands.")
    assert not pattern_triples("This method is the fastest of the three.")


def test_a_second_complement_after_and_the_describes_the_subject_too():
    found = pattern_triples("Ben Nevis is a peak in Lochaber and the highest mountain in Scotland.")
    assert ("Ben Nevis", "is_a", "mountain") in found and ("Ben Nevis", "located_in", "Scotland") in found
    found = pattern_triples("Kyoto is a city in Japan and the capital of Kyoto Prefecture.")
    assert ("Kyoto", "is_a", "capital") not in found


def test_where_a_place_lies_it_is_and_a_part_of_a_place_is_in_the_place():
    assert ("Tokyo", "located_in", "Honshu") in pattern_triples("Tokyo lies on the eastern coast of Honshu.")
    assert ("Ambridge", "located_in", "Borsetshire") in pattern_triples("The village of Ambridge lies in Borsetshire.")
    assert not [t for t in pattern_triples("Otters are common along the rivers of Wales.") if t[1] == "is_a"]


def test_a_counted_plural_kind_before_a_comma_and_a_list_of_names():
    found = pattern_triples("The three largest moons of Saturn, Titan, Rhea and Iapetus, were found early.")
    assert {("Titan", "is_a", "moons"), ("Rhea", "is_a", "moons"), ("Iapetus", "is_a", "moons")} <= found
    assert ("Saturn", "is_a", "moons") not in found
    assert not [t for t in pattern_triples("He visited many cities, Rome, Paris and Vienna.") if t[1] == "is_a"]


def test_a_place_between_commas_after_a_name_is_where_it_is_and_no_subject():
    found = pattern_triples("The Old Bridge, in the centre of Mostar, is the best known of its bridges.")
    assert ("Old Bridge", "located_in", "Mostar") in found
    assert not [t for t in found if t[0] in ("centre", "Mostar") and t[1] == "is_a"]


def test_the_capital_and_most_populous_city_and_the_worlds_most_visited():
    assert ("Lagos", "part_of", "Nigeria") in pattern_triples("The port of Lagos is the capital and most populous city of Nigeria.")
    assert ("Prado", "is_a", "art museum") in pattern_triples("The Prado is the world's most visited art museum.")


def test_every_subject_of_a_plural_copula_is_of_the_kind():
    found = pattern_triples("The oboe, the flute and the bassoon are woodwind instruments.")
    assert {("oboe", "is_a", "woodwind instruments"), ("flute", "is_a", "woodwind instruments"), ("bassoon", "is_a", "woodwind instruments")} <= found
    assert ("oboe", "is_a", "woodwind instrument") not in pattern_triples("He plays the oboe, and the flute is a woodwind instrument.")


def test_names_after_a_plural_kind_and_a_copula_are_of_the_kind():
    found = pattern_triples("The main ports are Hull and Goole.")
    assert ("Hull", "is_a", "ports") in found and ("Goole", "is_a", "ports") in found
    assert not [t for t in found if t[0] == "ports"]
    assert ("wolves", "is_a", "canines") in pattern_triples("Wolves are canines.")


def test_the_named_works_of_a_possessor_are_owned_by_it():
    text = "Ada Byron was an English poet. Her best known poems are Tide Song and Harbour Lights."
    found = {c[:3] for c in candidates(text, relations.pattern_relations, title="Ada Byron")}
    assert ("Tide Song", "owned_by", "Ada Byron") in found and ("Harbour Lights", "owned_by", "Ada Byron") in found
    text = "Ada Byron was an English poet. Her cats include Tide and Harbour."
    assert not [c for c in candidates(text, relations.pattern_relations, title="Ada Byron") if c[1] == "owned_by"]


def test_where_a_story_is_set_is_a_named_place_it_is_in():
    assert ("play", "located_in", "Verona") in pattern_triples("The play is set in Verona.")
    assert not [t for t in pattern_triples("The timeout is set in the configuration file.") if t[1] == "located_in"]


def test_a_maker_in_an_opening_participle_clause_made_the_main_clauses_subject():
    found = pattern_triples("Founded in 1826 by Thomas Telford, the canal company prospered.")
    assert ("canal company", "owned_by", "Thomas Telford") in found
    found = pattern_triples("Designed by Ada Byron for the Tide Office, the gauge was cheap.")
    assert not [t for t in found if t[1] == "owned_by" and t[0] == "gauge"]


def test_names_a_plural_kind_includes_are_of_the_kind():
    found = pattern_triples("Its main ports include Hull, Goole and Grimsby.")
    assert {("Hull", "is_a", "ports"), ("Grimsby", "is_a", "ports")} <= found
    assert not [t for t in found if t[1] == "part_of"]
    assert ("Tide Song", "part_of", "collection") in pattern_triples("The collection includes Tide Song.")


def test_a_comma_and_after_a_participle_insertion_ends_it():
    found = pattern_triples("The hall holds the Tide Map, painted by Ada Byron, and the Harbour Clock.")
    assert ("Tide Map", "owned_by", "Ada Byron") in found and not [t for t in found if t[2] == "Harbour Clock" and t[1] == "owned_by"]
    found = pattern_triples("The Rhine, used by barges, boats and ferries, is busy.")
    assert ("ferries", "uses", "Rhine") in found


def test_what_a_described_thing_is_made_of_is_part_of_the_thing():
    found = pattern_triples("Bronze is an alloy made of copper and tin.")
    assert ("copper", "part_of", "Bronze") in found and ("tin", "part_of", "Bronze") in found


def test_a_participle_after_a_comma_skips_a_phrase_above_or_below():
    found = pattern_triples("Ben Nevis is the highest mountain above sea level, located in the Grampians.")
    assert ("Ben Nevis", "located_in", "Grampians") in found and ("sea level", "located_in", "Grampians") not in found


def test_an_apposition_after_a_subject_ends_at_its_closing_comma():
    found = pattern_triples("Keratin, a protein found in hair, is tough.")
    assert ("Keratin", "is_a", "protein") in found
    found = pattern_triples("It lies on Ceres, the largest of the asteroids, which orbits the Sun.")
    assert ("Ceres", "is_a", "asteroids") in found and len([t for t in found if t[1] == "is_a"]) == 1


def test_every_subject_coordinated_before_a_plural_place_verb_is_there():
    found = pattern_triples("Otters, voles and herons live along the Tarn in Lorvia.") | pattern_triples("Lions and leopards are found in Kenya.")
    assert ("lions", "located_in", "Kenya") in found and ("leopards", "located_in", "Kenya") in found
    found = pattern_triples("The cache of Basin and the index are stored in Redis.")
    assert ("index", "located_in", "Redis") in found and ("Basin", "located_in", "Redis") not in found


def test_an_aside_in_parentheses_after_the_subject_is_skipped():
    assert ("Ada Byron", "is_a", "poet") in pattern_triples("Ada Byron (1815–1852) was an English poet.")
    assert ("Ada Byron", "is_a", "poet") in pattern_triples("Ada Byron (born 1950) is a poet.")


def test_a_names_official_form_is_the_same_thing_and_no_subject():
    found = pattern_triples("Lorvia, officially the Republic of Lorvia, is a country.")
    assert ("Lorvia", "same_as", "Republic of Lorvia") in found and ("Lorvia", "is_a", "country") in found
    assert ("Republic of Lorvia", "is_a", "country") not in found


def test_a_list_goes_on_past_a_titles_capitalised_the():
    found = pattern_triples("Ada Byron wrote Tide Songs and The Harbour Clock.")
    assert ("Tide Songs", "owned_by", "Ada Byron") in found and ("Harbour Clock", "owned_by", "Ada Byron") in found


def test_a_name_between_commas_after_a_possessive_and_its_noun():
    text = "Lorvia is a small country. Its capital, Tarnby, lies on the coast."
    found = {c[:3] for c in candidates(text, relations.pattern_relations, title="Lorvia")}
    assert ("Tarnby", "is_a", "capital") in found and ("Tarnby", "part_of", "Lorvia") in found
    text = "Ada Byron was an English poet. Her best known poem, Tide Song, appeared in 1840."
    found = {c[:3] for c in candidates(text, relations.pattern_relations, title="Ada Byron")}
    assert ("Tide Song", "is_a", "poem") in found and ("Tide Song", "owned_by", "Ada Byron") in found


def test_a_part_of_a_place_named_by_a_capitalised_phrase_leads_to_it():
    assert ("Tarnby", "located_in", "Vell river") in pattern_triples("Tarnby is located on the east bank of the Vell river.")


def test_the_work_a_maker_noun_names_is_owned_by_its_maker():
    assert ("Tide Songs", "owned_by", "Ada Byron") in pattern_triples("Ada Byron is the author of Tide Songs.")
    assert ("Tarnby Guild", "owned_by", "Ada Byron") in pattern_triples("Ada Byron, the founder of the Tarnby Guild, was a poet.")
    assert not [t for t in pattern_triples("Ada Byron is the author of many books.") if t[1] == "owned_by"]
