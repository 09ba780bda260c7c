import json

import llm
import pytest

from llm_graphrag.db import open_database
from llm_graphrag.extract import extract_and_link
from llm_graphrag.llm_extractor import SCHEMA, LLMExtractionError
from llm_graphrag.schema import set_setting


class FakeExtractor(llm.Model):
    """Answers every prompt with the next canned reply; remembers what it was asked."""

    model_id = "fake-extractor"
    supports_schema = True

    def __init__(self):
        self.replies = []
        self.prompts = []

    def execute(self, prompt, stream, response, conversation):
        self.prompts.append((prompt.prompt, prompt.schema))
        yield self.replies.pop(0)


class FakePlugin:
    __name__ = "FakePlugin"

    def __init__(self, model):
        self.model = model

    @llm.hookimpl
    def register_models(self, register):
        register(self.model)


@pytest.fixture
def fake_model(user_path):
    model = FakeExtractor()
    llm.plugins.pm.register(FakePlugin(model), name="fake-extractor-plugin")
    try:
        yield model
    finally:
        llm.plugins.pm.unregister(name="fake-extractor-plugin")


def _db(tmp_path, text):
    db = open_database(tmp_path / "graphrag.db")
    with db.atomic():
        db["docs"].insert({"id": 1, "path": "/docs/1.md", "title": None, "hash": "h1"})
        db["chunks"].insert({"doc_id": 1, "seq": 0, "content": text})
    return db


TEXT = "Mercury orbits closest to the Sun."


def test_off_by_default(tmp_path, fake_model):
    db = _db(tmp_path, TEXT)
    extract_and_link(db)
    assert fake_model.prompts == []
    assert db.execute("select count(*) from mentions where meta like '%\"llm\"%'").fetchone() == (0,)


def test_llm_entities_and_relations_with_structured_output(tmp_path, fake_model):
    fake_model.replies.append(
        json.dumps(
            {
                "entities": [
                    {"name": "Mercury", "type": "name"},
                    {"name": "Sun", "type": "name"},
                    {"name": "Pluto", "type": "name"},  # not in the text: ignored
                ],
                "relations": [
                    {"source": "Mercury", "relation": "located_in", "target": "Sun"},
                    {"source": "Mercury", "relation": "orbits", "target": "Sun"},  # not in the vocabulary
                ],
            }
        )
    )
    db = _db(tmp_path, TEXT)
    set_setting(db, "extract", {"llm_model": "fake-extractor", "ner": "off"})
    extract_and_link(db)
    assert len(fake_model.prompts) == 1
    prompt, schema = fake_model.prompts[0]
    assert schema == SCHEMA
    assert prompt.endswith("Text:\n" + TEXT)
    assert db.execute(
        "select surface, type, span_start, span_end, features from mentions where features like '%llm%' order by id"
    ).fetchall() == [
        # the same spans found by the concept and the name extractors ("orbits" is the
        # sentence's verb, so "Mercury" is a phrase of its own): merged, features kept from both
        ("Mercury", "name", 0, 7, '{"llm": "fake-extractor", "np": 1}'),
        ("Sun", "name", 30, 33, '{"capitalized": true, "llm": "fake-extractor"}'),
    ]
    assert db.execute(
        "select s.name, r.rel, d.name, r.fact, e.extractor from relations r "
        "join relation_evidence e on e.relation_id = r.id "
        "join entities s on s.id = r.src_id join entities d on d.id = r.dst_id where e.extractor = 'llm'"
    ).fetchall() == [("Mercury", "located_in", "Sun", "Mercury is located in Sun", "llm")]


def test_reply_that_is_not_json_is_an_error(tmp_path, fake_model):
    fake_model.replies.append("Sure! Here are the entities: Mercury, Sun")
    db = _db(tmp_path, TEXT)
    set_setting(db, "extract", {"llm_model": "fake-extractor", "ner": "off"})
    with pytest.raises(LLMExtractionError) as error:
        extract_and_link(db)
    assert str(error.value) == (
        "Model fake-extractor returned text that is not JSON: 'Sure! Here are the entities: Mercury, Sun'"
    )
    assert db.execute("select count(*) from mentions").fetchone() == (0,)
