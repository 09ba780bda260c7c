"""Third-party extension through the graphrag hooks, as an installed package would do it."""

import pytest

from llm_graphrag import hookimpl, plugins
from llm_graphrag.db import open_database
from llm_graphrag.extraction import Mention
from llm_graphrag.ingest import ingest_docs


class ShipNames:
    """Finds ship names written as 'the <Name>' in its own way."""

    __name__ = "ship-names"

    @hookimpl
    def register_mention_extractors(self, register):
        def ships(chunk, context):
            start = chunk.text.find("the Kestrel")
            if start >= 0:
                yield Mention("Kestrel", "vessel", start + 4, start + 11, 0.99, {"plugin": True}, extractor="ships")

        register("ships", ships)


@pytest.fixture
def ship_plugin():
    plugin = ShipNames()
    plugins.pm.register(plugin, name="ship-names")
    yield plugin
    plugins.pm.unregister(name="ship-names")


def test_defaults_are_registered_through_the_hooks():
    assert {"markup", "patterns", "concepts", "gazetteer"} <= set(plugins.get_mention_extractors())
    assert {"patterns", "structure", "cooccurrence"} <= set(plugins.get_relation_extractors())
    assert {".md", ".txt", ".rst", ".html"} <= set(plugins.get_loaders())
    assert "default" in plugins.get_chunkers()


def test_a_plugin_mention_extractor_feeds_the_graph(tmp_path, ship_plugin):
    (tmp_path / "log.md").write_text("# Log\n\nWe sailed on the Kestrel to the harbour.\n")
    db = open_database(tmp_path / "g.db")
    ingest_docs(db, [str(tmp_path / "log.md")])
    rows = db.execute(
        "select m.surface, m.type, m.span_start, m.span_end, e.name, e.type from mentions m "
        "join entities e on e.id = m.entity_id where m.type = 'vessel'"
    ).fetchall()
    assert rows == [("Kestrel", "vessel", 24, 31, "Kestrel", "vessel")]
