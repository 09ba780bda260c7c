import numpy as np
import pytest

from llm_graphrag.extraction import Mention, normalize
from llm_graphrag.linking import (
    Entity,
    Linker,
    compatible,
    edit_distance_at_most_one,
    entity_text,
    key_text,
    one_thing,
    string_similarity,
    type_order,
)


class FakeEmbedder:
    """Unit vectors chosen per text, so scores are exact and known."""

    def __init__(self, vectors):
        self.vectors = vectors

    def encode(self, texts):
        return np.array([self.vectors.get(t, self.vectors["*"]) for t in texts], dtype=np.float32)


def mention(surface, type="name", **kwargs):
    return Mention(surface, type, 0, len(surface), **kwargs)


def test_compatible_types():
    assert compatible("concept", "code")
    assert compatible("code", "name")
    assert compatible("PERSON", "PERSON")
    assert not compatible("PERSON", "GPE")
    assert not compatible("code", "version")


@pytest.mark.parametrize(
    "a,b,expected",
    [("basin", "basin", True), ("basin", "basins", True), ("basin", "bason", True), ("basin", "bsn", False), ("uuid1", "uuid4", True)],
)
def test_edit_distance_at_most_one(a, b, expected):
    assert edit_distance_at_most_one(a, b) is expected


def test_string_similarity():
    assert string_similarity("Heron API", "heron api") == 1.0
    assert string_similarity("Python Package Index", "Package Index") == pytest.approx(2 / 3)
    assert string_similarity("tidepool", "tidepoul") == pytest.approx(1 - 1 / 8)
    assert string_similarity("tidepool", "tidepools") == 1.0  # same lemma


def test_exact_norm_of_the_same_type_links():
    linker = Linker([Entity(1, "name", "Basin", "basin", ["Basin"], popularity=3)])
    entity, score, created = linker.link(mention("BASIN"))
    assert (entity.id, score, created) == (1, 1.0, False)


def test_new_entity_gets_the_surface_as_alias():
    linker = Linker([], next_id=10)
    entity, score, created = linker.link(mention("Kenji Morita"))
    assert (entity.id, entity.type, entity.name, entity.norm, entity.aliases, score, created) == (
        10, "name", "Kenji Morita", "kenjimorita", ["Kenji Morita"], 1.0, True,
    )
    assert linker.link(mention("Kenji Morita"))[0] is entity


def test_generic_mention_links_to_specific_entity_and_refines_generic_type():
    linker = Linker([Entity(1, "code", "json", "json"), Entity(2, "name", "Heron", "heron")])
    assert linker.link(mention("JSON", "name"))[:2] == (linker.entities[1], 1.0)
    entity, score, _ = linker.link(mention("heron", "code"))
    assert (entity.id, entity.type, entity.changed, score) == (2, "code", True, 1.0)


def test_entities_of_different_types_never_merge():
    linker = Linker([Entity(1, "PERSON", "Paris", "paris")], next_id=2)
    city, score, created = linker.link(mention("Paris", "GPE"))
    assert (city.id, city.type, created) == (2, "GPE", True)
    assert linker.link(mention("Paris", "PERSON"))[0].id == 1
    assert linker.link(mention("Paris", "GPE"))[0].id == 2


def test_ambiguous_generic_mention_links_by_type_order_whatever_came_first():
    """A generic mention of a name several specific entities share goes to the one first
    in type order (priority, then type), not to one that earlier links made look likelier:
    which entity it joins depends on the entities of that name only."""
    assert sorted(["PERSON", "code", "GPE", "standard", "concept"], key=type_order) == [
        "standard", "code", "GPE", "PERSON", "concept",
    ]
    for order in ((1, 2), (2, 1)):
        entities = {
            1: Entity(1, "PERSON", "Paris", "paris", ["Paris"], "Paris Hilton is a person.", 50),
            2: Entity(2, "GPE", "Paris", "paris", ["Paris"], "Paris is the capital of France.", 1),
        }
        linker = Linker([entities[i] for i in order])
        entity, score, created = linker.link(mention("Paris", snippet="the hotel heiress"))
        assert (entity.id, score, created) == (2, 1.0, False)
        # specific mentions keep to their own type
        assert linker.link(mention("Paris", "PERSON"))[0].id == 1


def test_specific_mention_new_to_a_name_gets_its_own_entity_and_a_generic_one_takes_its_type():
    linker = Linker([Entity(1, "code", "json", "json"), Entity(2, "concept", "heron", "heron")], next_id=3)
    entity, score, created = linker.link(mention("JSON", "standard"))
    assert (entity.id, entity.type, score, created) == (3, "standard", 1.0, True)
    assert linker.link(mention("json", "concept"))[0].id == 3  # standard comes before code
    entity, score, created = linker.link(mention("Heron", "ORG"))
    assert (entity.id, entity.type, score, created) == (2, "ORG", 1.0, False)


def test_fuzzy_candidate_links_above_the_threshold_and_adds_an_alias():
    embedder = FakeEmbedder({"*": [1.0, 0.0]})
    entity = Entity(1, "name", "Python Package Index", "pythonpackageindex", ["Python Package Index"], popularity=100)
    linker = Linker([entity], embedder=embedder)
    linked, score, created = linker.link(mention("Package Index"))
    assert (linked.id, created, entity.aliases) == (1, False, ["Python Package Index", "Package Index"])
    # cosine 1, string 2/3 (token Jaccard), same type; context and popularity count 0
    assert score == round(0.45 + 0.25 * 2 / 3 + 0.15, 4)


def test_fuzzy_links_go_one_way_whichever_name_came_first():
    """"Package Index" links to "Python Package Index" (first in fuzzy_order, the fuller
    name) whether or not it has an entity of its own; never the reverse."""
    embedder = FakeEmbedder({"*": [1.0, 0.0]})
    linker = Linker([Entity(1, "name", "Package Index", "packageindex", ["Package Index"])], embedder=embedder, next_id=2)
    fuller, score, created = linker.link(mention("Python Package Index"))
    assert (fuller.id, score, created) == (2, 1.0, True)
    assert linker.absorbed_by(fuller) == [linker.entities[1]]
    assert linker.link(mention("Package Index")) == (fuller, round(0.45 + 0.25 * 2 / 3 + 0.15, 4), False)
    assert linker.absorbed_by(linker.entities[1]) == []


@pytest.mark.parametrize(
    "fuller,name,links",
    [
        ("Raymond D. Hettinger", "Raymond Hettinger", True),  # an initial
        ("Python Package Index", "Package Index", True),  # a name
        ("The Python Package Index", "Python Package Index", True),  # an article
        ("Python Packaging User's Guide", "Python Packaging User Guide", True),
        ("asynchronous generator expression", "asynchronous generator", False),  # another head
        ("string formatting", "formatted string", False),  # the same words, another head
        ("Task B", "Tasks", False),  # one edit apart, another head
        ("standard format specifier", "format specifier", False),  # a narrower kind
        ("new C APIs", "C API", False),
    ],
)
def test_a_fuller_name_takes_only_a_name_of_the_same_thing(fuller, name, links):
    """Near-identical names (edit distance 1 or most words shared) link only when they may
    name one thing (``one_thing``): the same head word, with nouns, letters or function
    words added, not adjectives; every score here would pass the threshold."""
    embedder = FakeEmbedder({"*": [1.0, 0.0]})
    linker = Linker([Entity(1, "term", fuller, normalize(fuller), [fuller])], embedder=embedder, next_id=2)
    entity, _, created = linker.link(mention(name, type="term"))
    assert (entity.id == 1, created) == (links, not links)
    assert one_thing(key_text(fuller).split(), key_text(name).split()) is links


def test_a_common_noun_phrase_is_not_taken_by_a_fuller_name():
    """A name written in lower case is a common noun phrase: a fuller name adding words to
    it names a narrower kind ("Python environment variables" of "environment variable"),
    where a fuller name of a name is the same thing ("Package Index")."""
    embedder = FakeEmbedder({"*": [1.0, 0.0]})
    fuller = Entity(1, "name", "Python environment variables", "pythonenvironmentvariable", ["Python environment variables"])
    linker = Linker([fuller], embedder=embedder, next_id=2)
    entity, _, created = linker.link(mention("environment variable", type="term"))
    assert (entity.id, created) == (2, True)
    assert linker.absorbed_by(fuller) == []
    assert linker.link(mention("Environment Variable"))[0] is fuller


@pytest.mark.parametrize(
    "name,other,links",
    [
        ("FTP_TLS.prot_c", "FTP_TLS.prot_p", False),  # code
        ("EAFNOSUPPORT", "EPFNOSUPPORT", False),  # an acronym
        ("EBCDIC-CP-BE", "EBCDIC-CP-HE", False),
        ("HTTPS URLs", "HTTP URLs", False),
        ("Python Package Index", "Pythn Package Index", True),  # a misspelling
        ("C APIs", "C API", True),  # a plural
        ("T_OBJECT_EX PyObject", "T_OBJECT PyObject", False),  # most words shared, another identifier
        ("HTTP Basic Authentication", "Basic Authentication", True),  # a fuller name
        ("Apple Silicon Macs", "Apple Silicon Mac", True),
    ],
)
def test_identifiers_one_character_apart_are_other_things(name, other, links):
    """Names one edit apart link when the word they differ in is prose (a misspelling), not
    when it is an identifier or an acronym, which one character makes another; names
    sharing most words, unless another identifier is what tells them apart."""
    embedder = FakeEmbedder({"*": [1.0, 0.0]})
    linker = Linker([Entity(1, "name", name, normalize(name), [name])], embedder=embedder, next_id=2)
    entity, _, created = linker.link(mention(other))
    assert (entity.id == 1, created) == (links, not links)


def test_fuzzy_scores_read_names_not_what_an_entity_gathered():
    """The score compares the mention's name with the entity's own name (``own_name``):
    not its description, popularity, vector or an alias of another norm."""
    embedder = FakeEmbedder({"*": [1.0, 0.0], "python package index": [0.6, 0.8]})
    bare = Entity(1, "name", "Python Package Index", "pythonpackageindex", ["Python Package Index"])
    rich = Entity(
        1, "name", "PyPI", "pythonpackageindex", ["PyPI", "python package index", "Package Index"],
        description="The Python Package Index is a repository of software.", popularity=90,
    )
    scores = [Linker([e], embedder=embedder).fuzzy_score(mention("Package Index"), e) for e in (bare, rich)]
    assert scores[0] == scores[1] == pytest.approx(0.45 * 0.6 + 0.25 * 2 / 3 + 0.15)


def test_fuzzy_candidate_below_the_threshold_makes_a_new_entity():
    embedder = FakeEmbedder({"*": [1.0, 0.0], "Tidepools tidepools": [0.0, 1.0]})
    linker = Linker([Entity(1, "name", "Tidepool", "tidepool", ["Tidepool"])], embedder=embedder, next_id=2)
    entity, score, created = linker.link(mention("Tidepools", snippet="tidepools"))
    assert (entity.id, score, created) == (2, 1.0, True)


def test_identifiers_differing_in_digits_are_never_fuzzy_candidates():
    linker = Linker([Entity(1, "name", "Station12", "station12")])
    assert linker.fuzzy_candidates(mention("Station13")) == []
    assert [e.id for e in linker.fuzzy_candidates(mention("Statio12"))] == [1]


def test_code_and_concepts_have_no_fuzzy_candidates():
    linker = Linker([Entity(1, "code", "uuid1", "uuid1"), Entity(2, "concept", "lake", "lake")])
    assert linker.fuzzy_candidates(mention("uuid4", "code")) == []
    assert linker.fuzzy_candidates(mention("lace", "concept")) == []


def test_coreference_takes_the_antecedent_entity():
    linker = Linker([Entity(1, "code", "sqlite3", "sqlite3")])
    antecedent = mention("sqlite3", "code")
    antecedent.entity, antecedent.link_score = linker.link(antecedent)[:2]
    pronoun = mention("It", "code", name="sqlite3", antecedent=antecedent)
    assert linker.link(pronoun) == (linker.entities[1], 0.8, False)


def test_remove_forgets_an_entity():
    entity = Entity(1, "name", "Heron Bridge", "heronbridge")
    linker = Linker([entity], next_id=2)
    linker.remove(entity)
    assert linker.link(mention("Heron Bridge"))[0].id == 2
    assert linker.fuzzy_candidates(mention("Heron Bridg")) == [linker.entities[2]]


def test_same_as_candidates_for_a_new_entity():
    embedder = FakeEmbedder({"*": [1.0, 0.0]})
    old = Entity(1, "name", "Python Package Index", "pythonpackageindex", popularity=100)
    linker = Linker([old], embedder=embedder, next_id=2)
    new = linker.create(mention("The Python Package Index"))
    # string similarity: edit distance 3 over 21 characters beats token Jaccard 3/4
    assert linker.same_as_candidates(new) == [(old, round(0.45 + 0.25 * (1 - 3 / 21) + 0.15, 4))]


def test_entity_text():
    assert entity_text(Entity(1, "name", "Basin", "basin", description="Basin is the alerting service.")) == (
        "Basin: Basin is the alerting service."
    )
    assert entity_text(Entity(1, "name", "Basin", "basin")) == "Basin"


def test_from_db_loads_the_active_entities(tmp_path):
    from llm_graphrag.db import open_database

    db = open_database(tmp_path / "graphrag.db")
    with db.atomic():
        db["entities"].insert_all(
            [
                {"id": 4, "type": "name", "name": "Basin", "norm": "basin", "aliases": '["Basin"]', "popularity": 2, "meta": '{"defined": true}', "status": "active"},
                {"id": 9, "type": "code", "name": "riffle", "norm": "riffle", "aliases": "[]", "popularity": 0, "meta": None, "status": "merged"},
            ]
        )
    linker = Linker.from_db(db)
    assert [(e.id, e.name, e.aliases, e.popularity, e.defined) for e in linker.entities.values()] == [
        (4, "Basin", ["Basin"], 2, True)
    ]
    assert linker.next_id == 10
