import pathlib

import pytest

from llm_graphrag.chunking import BUDGETS, Chunk, chunk_document, count_tokens, make_prelude
from llm_graphrag.loaders import Block, LoadedDocument, assign_headings, load_document

DATA = pathlib.Path(__file__).parent / "data" / "loaders"
SMALL = {"budgets": {"general": (20, 40)}}


def document(blocks, kind="general", title="Guide"):
    assign_headings(blocks)
    return LoadedDocument(
        path="/srv/docs/guide.md",
        relpath="docs/guide.md",
        format="md",
        title=title,
        kind=kind,
        blocks=blocks,
    )


def sentences(first, last):
    return " ".join(f"Sentence {i} has five words." for i in range(first, last + 1))


@pytest.mark.parametrize(
    "text,expected",
    [
        ("", 0),
        ("Hello, world!", 4),
        ("Sentence 1 has five words.", 6),
        ("`x.y()` returns", 7),
        ("naïve café", 2),
        ("## Heading", 4),
        ("```\ncode\n```", 9),
    ],
)
def test_count_tokens(text, expected):
    assert count_tokens(text) == expected


def test_budgets():
    assert BUDGETS == {"general": (500, 1000), "faq": (150, 400), "procedure": (1000, 2000)}


@pytest.mark.parametrize(
    "headings,title,top,expected",
    [
        ((), "Guide", "", ("docs/guide.md • Guide", "Guide")),
        (("Guide",), "Guide", "", ("docs/guide.md • Guide", "Guide")),
        (("guide",), "Guide", "", ("docs/guide.md • Guide", "Guide")),
        (("Guide", "Install"), "Guide", "", ("docs/guide.md • Install", "Install")),
        (
            ("Guide", "Install", "Linux"),
            "Guide",
            "",
            ("docs/guide.md • Install • Linux", "Install"),
        ),
        (
            ("Guide", "Install", "Linux", "Debian", "Bookworm"),
            "Guide",
            "",
            ("docs/guide.md • Install • Debian • Bookworm", "Install"),
        ),
        (("Setup", "Linux"), "Guide", "", ("docs/guide.md • Setup • Linux", "Setup")),
        # The title came from front matter; the single top-level heading is dropped too.
        (("Deploying", "Steps"), "Deploy guide", "Deploying", ("docs/guide.md • Steps", "Steps")),
    ],
)
def test_make_prelude(headings, title, top, expected):
    assert make_prelude("docs/guide.md", title, headings, top) == expected


def test_short_document_is_one_chunk():
    doc = document(
        [
            Block("heading", "Guide", 1),
            Block("paragraph", "Intro text here."),
            Block("heading", "Install", 2),
            Block("code", "pip install riffle"),
        ]
    )
    assert chunk_document(doc) == [
        Chunk(
            seq=0,
            text="# Guide\n\nIntro text here.\n\n## Install\n\n```\npip install riffle\n```",
            prelude="docs/guide.md • Guide",
            section="Guide",
            headings=("Guide",),
            token_count=22,
        )
    ]
    chunk = chunk_document(doc)[0]
    assert (
        chunk.embed_text
        == "docs/guide.md • Guide\n# Guide\n\nIntro text here.\n\n## Install\n\n```\npip install riffle\n```"
    )


def test_oversized_paragraph_is_split_at_sentences_with_overlap():
    doc = document([Block("heading", "Guide", 1), Block("paragraph", sentences(1, 12))])
    chunks = chunk_document(doc, SMALL)
    assert [(c.text, c.token_count) for c in chunks] == [
        ("# Guide\n\n" + sentences(1, 4), 27),
        # One sentence (6 tokens) is more than 20% of 27 tokens: its last words repeat.
        ("4 has five words. " + sentences(5, 8), 29),
        ("8 has five words. " + sentences(9, 12), 29),
    ]
    assert {(c.prelude, c.section, c.headings) for c in chunks} == {
        ("docs/guide.md • Guide", "Guide", ("Guide",))
    }


def test_overlap_repeats_whole_tail_sentences():
    doc = document([Block("heading", "Guide", 1), Block("paragraph", sentences(1, 40))])
    chunks = chunk_document(doc, {"budgets": {"general": (60, 100)}})
    # The 240-token paragraph is cut into four pieces of ten sentences (60 tokens);
    # each chunk after the first repeats the last two sentences of the one before:
    # 12 of 63 tokens (19%), then 12 of 72 (17%).
    assert [(c.text, c.token_count) for c in chunks] == [
        ("# Guide\n\n" + sentences(1, 10), 63),
        (sentences(9, 20), 72),
        (sentences(19, 30), 72),
        (sentences(29, 40), 72),
    ]


def test_headings_that_do_not_fit_are_left_to_the_prelude():
    paragraph = sentences(1, 6) + " Extra words here."  # 40 tokens
    doc = document(
        [
            Block("heading", "Guide", 1),
            Block("heading", "Install", 2),
            Block("paragraph", paragraph),
        ]
    )
    assert chunk_document(doc, SMALL) == [
        Chunk(0, paragraph, "docs/guide.md • Install", "Install", ("Guide", "Install"), 40)
    ]


def test_blocks_are_packed_whole_and_break_at_headings():
    doc = document(
        [
            Block("heading", "Guide", 1),
            Block("paragraph", "Intro text here."),
            Block("heading", "Install", 2),
            Block("paragraph", "One two three four five six seven eight nine ten."),
            Block("code", "\n".join(f"run step {i}" for i in range(1, 8))),
            Block("heading", "Use", 2),
            Block("list", "1. Open it.\n2. Read it.\n3. Close it."),
            Block("paragraph", "Done now."),
        ]
    )
    chunks = chunk_document(doc, SMALL)
    code = "```\n" + "\n".join(f"run step {i}" for i in range(1, 8)) + "\n```"
    assert chunks == [
        Chunk(
            0,
            "# Guide\n\nIntro text here.\n\n## Install\n\nOne two three four five six seven eight nine ten.",
            "docs/guide.md • Guide",
            "Guide",
            ("Guide",),
            22,
        ),
        # The code block does not fit after the paragraph, so it moves whole to the
        # next chunk, which repeats the paragraph's last words.
        Chunk(
            1,
            "eight nine ten.\n\n" + code,
            "docs/guide.md • Install",
            "Install",
            ("Guide", "Install"),
            33,
        ),
        # A heading starts a fresh chunk: no repeated tail, and the list stays whole.
        Chunk(
            2,
            "## Use\n\n1. Open it.\n2. Read it.\n3. Close it.\n\nDone now.",
            "docs/guide.md • Use",
            "Use",
            ("Guide", "Use"),
            22,
        ),
    ]


def test_small_sections_are_packed_together():
    blocks = [Block("heading", "Guide", 1)]
    for name in ["Alpha", "Beta", "Gamma", "Delta", "Epsilon"]:
        blocks += [Block("heading", name, 2), Block("paragraph", f"{name} is short.")]
    chunks = chunk_document(document(blocks), SMALL)
    assert [(c.text, c.prelude, c.token_count) for c in chunks] == [
        (
            "# Guide\n\n## Alpha\n\nAlpha is short.\n\n## Beta\n\nBeta is short.\n\n"
            "## Gamma\n\nGamma is short.",
            "docs/guide.md • Guide",
            27,
        ),
        (
            "## Delta\n\nDelta is short.\n\n## Epsilon\n\nEpsilon is short.",
            "docs/guide.md • Delta",
            16,
        ),
    ]


def test_oversized_code_and_lists_split_at_lines():
    code = "\n".join(f"echo line {i}" for i in range(1, 21))  # 60 tokens
    steps = "\n".join(f"{i}. Do the thing number {i}." for i in range(1, 11))  # 80 tokens
    doc = document([Block("heading", "Guide", 1), Block("code", code), Block("list", steps)])
    chunks = chunk_document(doc, {"budgets": {"general": (20, 40)}, "overlap": 0})

    def lines(first, last):
        return "```\n" + "\n".join(f"echo line {i}" for i in range(first, last + 1)) + "\n```"

    def items(first, last):
        return "\n".join(f"{i}. Do the thing number {i}." for i in range(first, last + 1))

    # Pieces hold at most 24 tokens (40 less a fifth, less the fences), balanced: the
    # code splits 7 + 7 + 6 lines, each piece fenced; the list 3 + 3 + 3 + 1 items,
    # and the short last piece joins the one before it.
    assert [(c.text, c.token_count) for c in chunks] == [
        ("# Guide\n\n" + lines(1, 7), 32),
        (lines(8, 14), 29),
        (lines(15, 20), 26),
        (items(1, 3), 24),
        (items(4, 6), 24),
        (items(7, 10), 32),
    ]


def test_list_and_code_are_not_split_when_they_fit():
    steps = "\n".join(f"{i}. Do the thing number {i}." for i in range(1, 5))  # 32 tokens
    doc = document(
        [Block("heading", "Guide", 1), Block("paragraph", sentences(1, 3)), Block("list", steps)]
    )
    chunks = chunk_document(doc, SMALL)
    # The list moves whole to the next chunk. The overlap target is 3 of 21 tokens and
    # at most 4: less than one sentence, so the last words of the sentence repeat.
    assert [(c.text, c.token_count) for c in chunks] == [
        ("# Guide\n\n" + sentences(1, 3), 21),
        ("has five words.\n\n" + steps, 36),
    ]


def test_budget_depends_on_kind():
    def blocks():
        out = [Block("heading", "Guide", 1)]
        for n in range(1, 9):
            out += [Block("heading", f"Question {n}?", 2), Block("paragraph", sentences(1, 12))]
        return out

    # 3 + 8 x (6 + 72) = 627 tokens: one general chunk, four FAQ chunks of two answers.
    general = chunk_document(document(blocks()))
    assert [(c.token_count, c.section) for c in general] == [(627, "Guide")]
    faq = chunk_document(document(blocks(), kind="faq"))
    assert [(c.token_count, c.section) for c in faq] == [
        (159, "Guide"),
        (156, "Question 3?"),
        (156, "Question 5?"),
        (156, "Question 7?"),
    ]
    assert faq[1].text.startswith("## Question 3?\n\n" + sentences(1, 12) + "\n\n## Question 4?")


def test_overlap_setting():
    doc = document([Block("heading", "Guide", 1), Block("paragraph", sentences(1, 12))])
    chunks = chunk_document(doc, {"budgets": {"general": (20, 40)}, "overlap": 0})
    assert [c.text for c in chunks] == [
        "# Guide\n\n" + sentences(1, 4),
        sentences(5, 8),
        sentences(9, 12),
    ]
    with pytest.raises(ValueError):
        chunk_document(doc, {"overlap": 0.5})


def test_path_setting_and_relpath():
    doc = document([Block("paragraph", "Just one line.")], title="Notes")
    assert chunk_document(doc, {"path": "notes.md"})[0].prelude == "notes.md • Notes"
    doc.relpath = ""
    assert chunk_document(doc)[0].prelude == "/srv/docs/guide.md • Notes"


@pytest.mark.parametrize(
    "name", ["wiki/ops/deploy.md", "wiki/ops/oncall.txt", "wiki/reference.rst", "wiki/heron.html"]
)
def test_fixture_chunks(name):
    doc = load_document(DATA / name, root=DATA)
    for settings in (None, {"budgets": {"general": (30, 60)}}):
        chunks = chunk_document(doc, settings)
        high = (settings or {"budgets": BUDGETS})["budgets"]["general"][1]
        for chunk in chunks:
            assert chunk.token_count == count_tokens(chunk.text)
            assert chunk.token_count <= high
            assert chunk.prelude not in chunk.text
            assert chunk.prelude.startswith(name + " • ")
        assert [c.seq for c in chunks] == list(range(len(chunks)))


def test_fixture_preludes():
    doc = load_document(DATA / "wiki" / "ops" / "deploy.md", root=DATA)
    chunks = chunk_document(doc, {"budgets": {"general": (30, 60)}})
    assert [(c.prelude, c.section, c.headings, c.token_count) for c in chunks] == [
        # The h1 differs from the front-matter title; as the single top-level heading it
        # still counts as the document title.
        (
            "wiki/ops/deploy.md • Deploying the gateway",
            "Deploying the gateway",
            ("Deploying ingest-gateway",),
            42,
        ),
        (
            "wiki/ops/deploy.md • Before you start",
            "Before you start",
            ("Deploying ingest-gateway", "Before you start"),
            55,
        ),
        ("wiki/ops/deploy.md • Steps", "Steps", ("Deploying ingest-gateway", "Steps"), 44),
        ("wiki/ops/deploy.md • Steps", "Steps", ("Deploying ingest-gateway", "Steps"), 54),
        ("wiki/ops/deploy.md • Steps", "Steps", ("Deploying ingest-gateway", "Steps"), 45),
        (
            "wiki/ops/deploy.md • Steps • After the deploy",
            "Steps",
            ("Deploying ingest-gateway", "Steps", "After the deploy"),
            31,
        ),
    ]
    # The chunk after the table repeats the last list item (a break inside "Steps").
    assert chunks[3].text.startswith("3. Check the spool.\n\nhost | role | spool limit\n")


def test_sentence_boundaries_keep_closing_quotes():
    said = 'The operator said "Drain the host first." Then the spool fell (slowly.)'
    paragraph = " ".join([said] * 4)
    doc = document([Block("paragraph", paragraph)], title="Notes")
    chunks = chunk_document(doc, {"budgets": {"general": (20, 40)}, "overlap": 0})
    assert [c.text for c in chunks] == [said + " " + said] * 2
    assert [c.token_count for c in chunks] == [36, 36]
