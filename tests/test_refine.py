"""Corpus-level refinement after extraction (llm_graphrag/refine.py), on real databases."""

import json

import numpy as np
import pytest

from llm_graphrag.db import open_database
from llm_graphrag.embeddings import embedder_for
from llm_graphrag.extract import extract_and_link
from llm_graphrag.refine import COOCCURRENCE_MIN_LLR, log_likelihood_ratio
from llm_graphrag.schema import set_setting


def _db(tmp_path, texts, **settings):
    db = open_database(tmp_path / "graphrag.db")
    set_setting(db, "extract", {"ner": "off", **settings})
    with db.atomic():
        for doc_id, text in enumerate(texts, 1):
            db["docs"].insert({"id": doc_id, "path": f"/docs/{doc_id}.md", "title": None, "hash": f"h{doc_id}"})
            db["chunks"].insert({"doc_id": doc_id, "seq": 0, "content": text})
    return db


def _edges(db, rel="related_to"):
    return db.execute(
        "select s.name, d.name, r.meta from relations r join entities s on s.id = r.src_id "
        "join entities d on d.id = r.dst_id where r.rel = ? order by s.name, d.name",
        [rel],
    ).fetchall()


def test_log_likelihood_ratio():
    # Always together, rare otherwise: far above chance; as often as chance: about 0.
    assert log_likelihood_ratio(10, 10, 10, 1000) == pytest.approx(2 * (10 * np.log(10 / 0.1) + 990 * np.log(990 / 980.1)))
    assert log_likelihood_ratio(1, 10, 100, 1000) == pytest.approx(0.0)
    # Less often than chance: negative, so never significant.
    assert log_likelihood_ratio(1, 100, 100, 200) < 0


# Twelve documents pair `riffle` with `tidepool`; `gauge` is in 25 of the 37 documents, so
# one document shared with anything is what chance gives.
CORPUS = ["`riffle` reads `tidepool` now."] * 12 + [f"`gauge` reads `station{i}` hourly." for i in range(24)] + [
    "`gauge` reads `riffle` too."
]


def test_only_significant_cooccurrence_stays_with_its_score(tmp_path):
    db = _db(tmp_path, CORPUS)
    extract_and_link(db)
    edges = {(a, b): json.loads(meta) for a, b, meta in _edges(db)}
    assert set(edges) == {("riffle", "tidepool")}
    scores = edges[("riffle", "tidepool")]
    assert scores["kind"] == "cooccurrence"
    assert scores["llr"] >= COOCCURRENCE_MIN_LLR
    assert scores["llr"] == pytest.approx(log_likelihood_ratio(12, 13, 12, 37), abs=1e-3)
    assert scores["pmi"] == pytest.approx(np.log2(12 * 37 / (13 * 12)), abs=1e-3)


def test_cooccurrence_can_be_kept_whole_or_switched_off(tmp_path):
    (tmp_path / "all").mkdir()
    (tmp_path / "off").mkdir()
    everything = _db(tmp_path / "all", CORPUS, cooccurrence="all")
    extract_and_link(everything)
    kept = {frozenset((a, b)) for a, b, _ in _edges(everything)}
    assert kept == {frozenset(p) for p in [("riffle", "tidepool"), ("gauge", "riffle")] + [("gauge", f"station{i}") for i in range(24)]}
    # Each kept edge still carries its score, significant or not.
    assert all(json.loads(meta)["llr"] is not None for _, _, meta in _edges(everything))
    off = _db(tmp_path / "off", CORPUS, cooccurrence="off")
    extract_and_link(off)
    assert _edges(off) == []
    assert off.execute("select count(*) from relation_evidence where extractor = 'cooccurrence'").fetchone() == (0,)


def test_generic_words_and_bare_heads_are_not_entities(tmp_path):
    texts = [f"The service writes frame{i} to the archive tape." for i in range(12)] + [
        "Sediment collects behind the computer dam.",
        "A computer reads the gauge.",
    ]
    db = _db(tmp_path, texts)
    extract_and_link(db)
    names = {name for (name,) in db.execute("select name from entities")}
    # "service" is in all twelve of the first documents (over 5% of documents, at least 10):
    # it tells none apart. "computer" is a stop word of the stop-words library. "tape" is
    # only ever the head of "archive tape".
    assert "service" not in names and "computer" not in names and "tape" not in names
    assert {"archive tape", "computer dam", "Sediment", "gauge"} <= names
    # Their mentions went with them; no mention points nowhere.
    assert db.execute("select count(*) from mentions where entity_id is null").fetchone() == (0,)
    assert db.execute("select count(*) from mentions where lower(surface) in ('service', 'computer')").fetchone() == (0,)


def test_an_entity_is_named_by_its_most_frequent_surface(tmp_path):
    texts = ["Frogs lay eggs in ponds.", "Many frogs eat flies.", "Tree frogs climb.", "Some frogs sing; `croak` uses frogs."]
    db = _db(tmp_path, texts)
    extract_and_link(db)
    name, aliases = db.execute("select name, aliases from entities where norm = 'frog'").fetchone()
    assert name == "frogs"
    assert "Frogs" in json.loads(aliases)
    # Every entity name is a surface seen, as written, in a chunk that mentions it.
    for entity_id, entity_name in db.execute("select id, name from entities"):
        assert db.execute(
            "select count(*) from mentions m join chunks c on c.id = m.chunk_id "
            "where m.entity_id = ? and instr(c.content, ?)",
            [entity_id, entity_name],
        ).fetchone()[0] > 0, entity_name
    # A fact quoting a renamed entity is rewritten, and its vector is the new fact's.
    fact_id, fact = db.execute(
        "select r.id, r.fact from relations r join entities e on e.id = r.src_id where r.rel = 'uses'"
    ).fetchone()
    assert fact == "croak uses frogs"
    stored = db.execute(
        "select embedding from embeddings where collection_id = (select id from collections where name = 'facts') "
        "and id = ?", [str(fact_id)],
    ).fetchone()[0]
    expected = embedder_for(db).encode([fact])[0]
    assert np.allclose(np.frombuffer(stored, dtype="<f4"), expected, atol=1e-6)


def test_weak_cooccurrence_is_held_and_comes_back_with_more_evidence(tmp_path):
    """Documents extracted a few at a time give the edges, weights and evidence of one
    run over all: an edge too weak after the first documents keeps its evidence aside
    (``held_evidence``), and later documents' evidence for the pair brings it back."""
    for name in ("whole", "steps"):
        (tmp_path / name).mkdir()
    whole, steps = _db(tmp_path / "whole", CORPUS), _db(tmp_path / "steps", CORPUS)
    extract_and_link(whole)
    order = [1, *range(13, 38), *range(2, 13)]  # one riffle-tidepool document, then the rest
    extract_and_link(steps, doc_ids=order[:26])
    held = "select s.name, d.name from held_evidence h join entities s on s.id = h.src_id join entities d on d.id = h.dst_id"
    assert _edges(steps) == []  # each pair in one sentence so far: all held
    assert ("riffle", "tidepool") in steps.execute(held).fetchall()
    assert len(steps.execute(held).fetchall()) == 26
    for doc_id in order[26:]:
        extract_and_link(steps, doc_ids=[doc_id])
    assert ("riffle", "tidepool") not in steps.execute(held).fetchall()
    assert sorted(steps.execute(held).fetchall()) == sorted(whole.execute(held).fetchall())
    rows = (
        "select s.name, d.name, r.rel, r.weight, r.confidence, r.evidence_count, r.meta, "
        "(select count(*) from relation_evidence e where e.relation_id = r.id) "
        "from relations r join entities s on s.id = r.src_id join entities d on d.id = r.dst_id order by 1, 2, 3"
    )
    assert steps.execute(rows).fetchall() == whole.execute(rows).fetchall()
    assert [r[:6] for r in whole.execute(rows).fetchall() if r[2] == "related_to"] == [
        ("riffle", "tidepool", "related_to", 5.454, 0.4545, 12),  # 12 × 0.4545, summed exactly
    ]


def test_a_word_generic_for_a_stop_word_form_stays_generic(tmp_path):
    """"Notwithstanding" is a stop word and its norm "notwithstand" is not: the norm, all that the
    generic words keep, says it is generic whatever the corpus, so an update does not take
    it out (and extract its documents again) only for refinement to put it back."""
    from llm_graphrag.refine import GENERIC_SETTING, no_longer_generic
    from llm_graphrag.schema import get_setting

    texts = ["Notwithstanding the gauge, the survey fills the archive tape."] + [
        f"The station{i} survey reaches the gauge." for i in range(6)
    ]
    db = _db(tmp_path, texts)
    extract_and_link(db)
    words = get_setting(db, GENERIC_SETTING)
    assert "notwithstand" in words
    with db.atomic():
        assert no_longer_generic(db) == []
    assert get_setting(db, GENERIC_SETTING) == words
    # One more document, extracted on its own: nothing is extracted again.
    from llm_graphrag import extract

    rounds = []
    real_run = extract._run
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(extract, "_run", lambda db, pending, *a, **k: rounds.append(len(pending)) or real_run(db, pending, *a, **k))
        with db.atomic():
            db["docs"].insert({"id": 99, "path": "/docs/99.md", "title": None, "hash": "h99"})
            db["chunks"].insert({"doc_id": 99, "seq": 0, "content": "Notwithstanding that, the archive tape holds it."})
        extract_and_link(db)
    assert rounds == [1]
    assert get_setting(db, GENERIC_SETTING) == words


def test_a_short_capitalised_name_is_no_stop_word(tmp_path):
    """The stop-word list holds letters and country codes ("c", "tk", "uk"): written with a
    capital they name a language, a toolkit, a country, and stay; "Us" is a function word."""
    texts = [
        "Kestrel is written in **C** and draws its windows with Tk.",
        "Heron ships builds for the UK. Most of Us agree.",
    ]
    db = _db(tmp_path, texts)
    extract_and_link(db)
    names = {name for (name,) in db.execute("select name from entities")}
    assert {"C", "Tk", "UK"} <= names
    assert "Us" not in names and "us" not in names


def _extracted(folder, rows):
    """A database in ``folder`` of one-chunk documents ``(path, title, text)``, extracted."""
    db = open_database(folder / "graphrag.db")
    set_setting(db, "extract", {"ner": "off"})
    with db.atomic():
        for doc_id, (path, title, text) in enumerate(rows, 1):
            db["docs"].insert({"id": doc_id, "path": path, "title": title, "hash": f"h{doc_id}"})
            db["chunks"].insert({"doc_id": doc_id, "seq": 0, "content": text})
    extract_and_link(db)
    return db


def test_description_is_the_best_candidate_whatever_the_order(tmp_path):
    """An entity's description is its best candidate over all documents: a sentence from
    its home (a title naming it) over one that defines it, over any other; the first in
    path order among equals, whichever document was extracted first."""
    docs = [
        ("/docs/b.md", None, "`tidepool` is a time-series store kept by the lab."),
        ("/docs/a.md", None, "`tidepool` is a queue of water samples."),
        ("/docs/d.md", None, "Readings go to `tidepool` hourly."),
    ]
    home = ("/docs/c.md", "tidepool", "Readings stay in `tidepool` for a year.")

    def described(folder, rows):
        (tmp_path / folder).mkdir()
        db = _extracted(tmp_path / folder, rows)
        return db.execute("select description, meta from entities where norm = 'tidepool'").fetchall()

    defined = [("`tidepool` is a queue of water samples.", '{"defined": true, "home": false}')]
    assert described("defined", docs) == defined
    assert described("defined-reversed", docs[::-1]) == defined
    at_home = [("Readings stay in `tidepool` for a year.", '{"defined": false, "home": true}')]
    assert described("home", docs + [home]) == at_home
    assert described("home-first", [home] + docs[::-1]) == at_home


def _descriptions(tmp_path, rows, norms):
    db = _extracted(tmp_path, rows)
    marks = ",".join("?" * len(norms))
    return dict(db.execute(f"select norm, description from entities where norm in ({marks})", norms))


def test_a_glossary_entry_describes_its_term(tmp_path):
    """A definition list's or glossary's entry ("term: definition", as normalized HTML
    writes one) is its term's home and defines it: it describes the term over a sentence
    that defines it in a page earlier in path order."""
    rows = [
        ("/docs/a-cellars.md", "Cellars", "A tidepool mould is a fungus of damp cellars."),
        ("/docs/g-glossary.md", "Glossary", "rind: The hard outer layer of a cheese.\n\ntidepool mould: A grey mould that grows on damp rinds."),
    ]
    assert _descriptions(tmp_path, rows, ["tidepoolmould"]) == {
        "tidepoolmould": "tidepool mould: A grey mould that grows on damp rinds."
    }


def test_a_heading_is_home_to_the_words_it_holds_whole(tmp_path):
    """A section is the home of what its heading names in whole words: "Rindless cheeses"
    is no home of ``rind`` (its sentence loses to one that defines a rind), "Rinds" is."""
    from llm_graphrag.extraction import heading_names

    assert "rind" not in heading_names("Rindless cheeses")
    assert {"rind", "rinds"} <= heading_names("Rinds")
    assert "decorator" in heading_names("Context managers and decorators")
    assert "decorator" not in heading_names("ContextDecorator")
    defined = ("/docs/b.md", "Ripening", "A rind is the outer layer that forms on a cheese as it ripens.")
    rindless = ("/docs/a.md", "Fresh cheese", "# Rindless cheeses\n\nFresh cheeses ripen without a rind at all.")
    assert _descriptions(tmp_path, [rindless, defined], ["rind"]) == {"rind": defined[2]}
    home = ("/docs/c.md", "Fresh cheese", "# Rinds\n\nWash the rind of a soft cheese with brine.")
    (tmp_path / "home").mkdir()
    assert _descriptions(tmp_path / "home", [rindless, defined, home], ["rind"]) == {
        "rind": "Wash the rind of a soft cheese with brine."
    }



def test_a_section_lead_describes_what_its_heading_names(tmp_path):
    """What a heading names at home is described by its section's first sentence of prose,
    not by the heading: short lines before it are passed over, and the next section's lead
    is never taken (a heading of code only is no sentence). A section that opens with a
    list has no lead of its own: its heading stays."""
    text = (
        "# Brine baths\n\nSource: cellar notes\n\n"
        "A tank of salted water firms a young cheese in a single day.\n\n"
        "#### `curdle_fast`\n\nFor example:\n\n"
        "#### `curdle_slow`\n\nTurns the milk over a whole night at a low warmth.\n\n"
        "# Cellar rules\n\n- Keep the door shut.\n- Turn each wheel weekly.\n"
    )
    rows = [("/docs/a.md", "Cheesemaking", text)]
    assert _descriptions(tmp_path, rows, ["brinebath", "curdlefast", "curdleslow", "cellarrule"]) == {
        "brinebath": "A tank of salted water firms a young cheese in a single day.",
        "curdlefast": "#### `curdle_fast`",
        "curdleslow": "Turns the milk over a whole night at a low warmth.",
        "cellarrule": "# Cellar rules",
    }


STATED = [
    "Tomas Berg repaired the Harbour Bridge.",
    "Tomas Berg photographed the Harbour Bridge.",
    "Tomas Berg photographed the Harbour Bridge in the spring.",
    "The harbour and the town at night.",
]


def test_a_fact_stated_once_is_a_stated_edge_with_its_phrase(tmp_path):
    """A clause's relation phrase joins its two ends even said once (no co-occurrence test
    holds it back); the edge is ``stated``, its phrase the one its sentences use most,
    whatever order the documents came in; ``stated: false`` switches it off."""
    rows = {}
    for name, texts, settings in [
        ("forward", STATED, {}),
        ("reversed", STATED[::-1], {}),
        ("once", STATED[:1], {}),
        ("no cooccurrence", STATED[:1], {"cooccurrence": "off"}),
        ("off", STATED, {"stated": False}),
    ]:
        (tmp_path / name).mkdir()
        db = _db(tmp_path / name, texts, **settings)
        extract_and_link(db)
        rows[name] = db.execute(
            "select s.name, d.name, r.meta, r.fact, r.evidence_count from relations r join entities s on s.id = r.src_id "
            "join entities d on d.id = r.dst_id where r.rel = 'stated'"
        ).fetchall()
    assert rows["forward"] == [
        ("Tomas Berg", "Harbour Bridge", '{"kind": "stated", "phrase": "photographed"}', "Tomas Berg photographed Harbour Bridge", 3)
    ]
    assert rows["reversed"] == rows["forward"]
    once = [("Tomas Berg", "Harbour Bridge", '{"kind": "stated", "phrase": "repaired"}', "Tomas Berg repaired Harbour Bridge", 1)]
    assert rows["once"] == once
    assert rows["no cooccurrence"] == once
    assert rows["off"] == []
