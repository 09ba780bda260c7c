import pathlib

import pytest

from llm_graphrag.dedup import NearDuplicateFilter, similarity
from llm_graphrag.loaders import Block, load_document

DATA = pathlib.Path(__file__).parent / "data" / "loaders"

RETENTION = (
    "Raw readings stay in tidepool for 400 days. After that Estuary exports them to the "
    "archive bucket as Parquet files, one file per station per day, and tidepool drops the "
    "block only once the upload has been verified by checksum. Archived readings are kept "
    "for ten years and can be read with DuckDB or pandas."
)


def shingles(text, size=3):
    words = "".join(c if c.isalnum() else " " for c in text.lower()).split()
    return {tuple(words[i : i + size]) for i in range(len(words) - size + 1)}


def jaccard(a, b):
    return len(shingles(a) & shingles(b)) / len(shingles(a) | shingles(b))


def test_exact_and_near_duplicates():
    near = RETENTION.replace("ten years", "eleven years")
    assert round(jaccard(RETENTION, near), 3) == 0.893
    reworded = RETENTION.replace("Parquet files, one file per station per day", "CSV files")
    assert round(jaccard(RETENTION, reworded), 3) == 0.754
    other = "Heron is the web dashboard where staff and partner councils look at river readings."
    seen = NearDuplicateFilter()
    assert [
        seen.is_duplicate(RETENTION),
        seen.is_duplicate(RETENTION),
        seen.is_duplicate(near),
        seen.is_duplicate(reworded),
        seen.is_duplicate(other),
        # Case, punctuation and markup do not change the words.
        seen.is_duplicate("**" + RETENTION.upper().replace(",", "") + "**"),
    ] == [False, True, True, False, False, True]
    assert seen.duplicates == 3


def test_threshold():
    near = RETENTION.replace("Parquet files, one file per station per day", "CSV files")
    strict, loose = NearDuplicateFilter(threshold=0.95), NearDuplicateFilter(threshold=0.7)
    assert [strict.is_duplicate(RETENTION), strict.is_duplicate(near)] == [False, False]
    assert [loose.is_duplicate(RETENTION), loose.is_duplicate(near)] == [False, True]


def test_short_paragraphs_are_never_duplicates():
    seen = NearDuplicateFilter()
    short = "See the data retention policy for details."  # seven words
    assert [seen.is_duplicate(short) for _ in range(3)] == [False, False, False]
    assert seen.signature(short) is None
    assert seen.duplicates == 0


def test_sketch_similarity_is_the_exact_jaccard_for_paragraphs():
    seen = NearDuplicateFilter()
    texts = [
        RETENTION,
        RETENTION.replace("ten years", "eleven years"),
        RETENTION.replace("DuckDB or pandas", "any Parquet reader such as DuckDB"),
        "Heron is the web dashboard where staff and partner councils look at river readings.",
    ]
    sketches = seen.sketches(texts)
    for a in range(len(texts)):
        for b in range(len(texts)):
            assert similarity(sketches[a], sketches[b]) == jaccard(texts[a], texts[b])


def test_check_many_finds_duplicates_within_one_batch():
    seen = NearDuplicateFilter()
    other = "Basin evaluates alert rules against readings in tidepool every minute or so."
    assert seen.check_many([RETENTION, "Too short.", other, RETENTION, other]) == [
        False,
        False,
        False,
        True,
        True,
    ]
    assert seen.duplicates == 2


def test_filter_blocks_keeps_headings_and_code():
    code = "for station in stations: print(station.code, station.name, station.river)"
    blocks = [
        Block("heading", "Retention", 1),
        Block("paragraph", RETENTION),
        Block("code", code),
        Block("heading", "Retention", 1),
        Block("paragraph", RETENTION.replace("ten years", "eleven years")),
        Block("code", code),
        Block("list", "- " + RETENTION),
    ]
    seen = NearDuplicateFilter()
    kept, skipped = seen.filter_blocks(blocks)
    assert (kept, skipped) == (blocks[:4] + [blocks[5]], 2)


def test_filter_blocks_across_documents():
    seen = NearDuplicateFilter()
    counts = []
    for name in [
        "wiki/ops/deploy.md",
        "wiki/ops/oncall.txt",
        "wiki/reference.rst",
        "wiki/heron.html",
    ]:
        document = load_document(DATA / name, root=DATA)
        kept, skipped = seen.filter_blocks(document.blocks)
        counts.append(skipped)
    assert counts == [0, 0, 0, 0]
    # Loading two of them again repeats every block of eight words or more (paragraphs,
    # lists, tables and quotes; not code): seven in deploy.md, two in heron.html.
    again = [
        seen.filter_blocks(load_document(DATA / name).blocks)[1]
        for name in ["wiki/ops/deploy.md", "wiki/heron.html"]
    ]
    assert again == [7, 2]


def test_signatures_seed_a_later_run():
    first = NearDuplicateFilter()
    signature = first.signature(RETENTION)
    assert len(signature) % 8 == 0 and 0 < len(signature) <= 64 * 8
    assert NearDuplicateFilter().signature(RETENTION) == signature  # deterministic
    later = NearDuplicateFilter(signatures=[signature])
    assert later.duplicates == 0
    assert later.is_duplicate(RETENTION.replace("ten years", "eleven years")) is True
    assert later.duplicates == 1


def test_long_paragraphs_compare_exactly_in_a_run_and_by_estimate_from_signatures():
    words = [f"word{i}" for i in range(400)]
    text = " ".join(words)
    changed = " ".join(words[:368] + [f"other{i}" for i in range(32)])
    # 366 of 398 shingles are shared: Jaccard 366 / 430 = 0.851, just above 0.85.
    assert jaccard(text, changed) == 366 / 430
    seen = NearDuplicateFilter()
    a, b = seen.sketches([text, changed])
    assert (len(a), len(b)) == (398, 398)
    assert [seen.is_duplicate(text), seen.is_duplicate(changed)] == [False, True]
    # A stored signature keeps the 64 smallest hashes: the bottom-k estimate is close.
    signature = seen.signature(text)
    assert len(signature) == 64 * 8
    assert abs(similarity(a[:64].tolist(), b[:64].tolist()) - 0.851) < 0.1
    estimated = similarity(a[:64].tolist(), b[:64].tolist()) >= 0.85
    assert NearDuplicateFilter(signatures=[signature]).is_duplicate(changed) is estimated


def test_bad_settings():
    with pytest.raises(ValueError):
        NearDuplicateFilter(shingle=9)


def test_is_duplicate_and_check_many_count_words_alike():
    # Eight words once punctuation splits them, though only five between spaces.
    text = "alpha-beta gamma delta/epsilon zeta eta-theta"
    one, many = NearDuplicateFilter(), NearDuplicateFilter()
    assert [one.is_duplicate(text), one.is_duplicate(text)] == [False, True]
    assert many.check_many([text, text]) == [False, True]
    seven = "alpha-beta gamma delta/epsilon zeta eta"
    assert [one.is_duplicate(seven), one.is_duplicate(seven)] == [False, False]
    assert many.check_many([seven, seven]) == [False, False]


def test_one_paragraph_path_matches_the_batch_path():
    texts = [
        RETENTION,
        "Ünïcode wörds — and “quotes” — are words too, as are numbers like 400 and v4.1.0.",
        " ".join(f"word{i}" for i in range(300)),
        "alpha-beta gamma delta/epsilon zeta eta-theta",
        "go go go go go go go go go",  # one distinct shingle
    ]
    seen = NearDuplicateFilter()
    sketches, keys = seen._batch(texts)
    for text, sketch, key in zip(texts, sketches, keys):
        one_sketch, one_keys = seen._sketch_one(text)
        assert one_sketch.tolist() == sketch.tolist()
        assert one_keys == key


def test_a_dropped_paragraph_is_remembered_too():
    """Decisions do not chain: a paragraph repeating only a dropped one is dropped too, as
    it is whether or not the one before it was (``dedup_store.py``)."""
    words = [f"word{i}" for i in range(100)]
    first = " ".join(words)
    second = " ".join(words[:94] + [f"new{i}" for i in range(6)])
    third = " ".join([f"other{i}" for i in range(6)] + words[6:94] + [f"new{i}" for i in range(6)])
    assert [round(jaccard(first, second), 3), round(jaccard(second, third), 3), round(jaccard(first, third), 3)] == [
        0.885, 0.885, 0.782,
    ]
    assert NearDuplicateFilter().check_many([first, second, third]) == [False, True, True]


def test_paragraphs_are_checked_against_stored_sketches_too():
    """``stored(keys)`` gives complete sketches from elsewhere (the stored documents before
    this one): a paragraph near one of them is dropped, and each checked paragraph comes
    back with its place, sketch and keys."""
    seen = NearDuplicateFilter()
    near = RETENTION.replace("ten years", "eleven years")
    (sketch,), (keys,) = seen._batch([RETENTION])
    asked = []

    def stored(wanted):
        asked.append(wanted)
        return {key: [(7, sketch)] for key in wanted if key in keys}

    other = "Heron is the web dashboard where staff and partner councils look at river readings."
    paragraphs = seen.paragraphs([near, "Too short.", other], stored)
    assert [(p.seq, p.dropped) for p in paragraphs if p] == [(0, True), (1, False)] and paragraphs[1] is None
    assert paragraphs[0].keys == seen.keys_of(paragraphs[0].sketch)
    assert asked == [sorted(set(paragraphs[0].keys) | set(paragraphs[2].keys))]
    assert seen.near(paragraphs[0].sketch, sketch) and not seen.near(paragraphs[2].sketch, sketch)
