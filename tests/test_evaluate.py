"""The evaluation harness on a tiny two-hop file, through the real ingest pipeline."""

import json

import pytest
import sqlite_utils

from llm_graphrag.evaluate import (
    EvalFileError,
    format_table,
    load_eval_file,
    recall_at,
    run_eval,
)
from llm_graphrag.retrieval import RetrievalOptions

TINY = {
    "corpus": [
        "Damming a river can cause a lake to form.",
        "Other lakes formed throughout the region caused by stream blockages.",
        "Earthquakes cause the ground to shake.",
        "Many buildings in the city were damaged in the earthquake.",
        "Plants use sunlight to make food by photosynthesis.",
        "Leaves are the main sites of photosynthesis.",
        "Copper is a good conductor of electricity.",
        "Electric wires are often made of copper.",
    ],
    "queries": [
        {"question": "What can damming a river cause?", "gold": [0, 1]},
        {"question": "How do earthquakes damage buildings?", "gold": [2, 3]},
        {"question": "Where does photosynthesis happen in plants?", "gold": [4, 5]},
        {"question": "What are electric wires made of?", "gold": [7]},
    ],
}
EXPECTED_RECALL = {
    "bm25": {"1": {"any": 1.0, "both": 0.25}, "2": {"any": 1.0, "both": 0.75}},
    "vector": {"1": {"any": 1.0, "both": 0.25}, "2": {"any": 1.0, "both": 1.0}},
    "hybrid": {"1": {"any": 1.0, "both": 0.25}, "2": {"any": 1.0, "both": 1.0}},
    "graph": {"1": {"any": 1.0, "both": 0.25}, "2": {"any": 1.0, "both": 1.0}},
}


@pytest.fixture(scope="module")
def tiny_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("eval") / "tiny.json"
    path.write_text(json.dumps(TINY))
    return path


@pytest.fixture(scope="module")
def stored(tiny_file, tmp_path_factory):
    store = tmp_path_factory.mktemp("runs") / "runs.db"
    seen = []
    report = run_eval(
        tiny_file, ks=(2, 1), store_db=str(store), progress=lambda *args: seen.append(args)
    )
    return report, sqlite_utils.Database(store), seen


def test_report(stored, tiny_file):
    report, _, _ = stored
    assert {mode: result["recall"] for mode, result in report["modes"].items()} == EXPECTED_RECALL
    assert list(report["modes"]) == ["bm25", "vector", "hybrid", "graph"]
    for result in report["modes"].values():
        latency = result["latency_ms"]
        assert 0 < latency["p50"] <= latency["p95"]
    assert (report["file"], report["corpus"], report["queries"], report["ks"]) == (
        str(tiny_file),
        8,
        4,
        [1, 2],
    )
    assert report["counts"]["docs"] == report["counts"]["chunks"] == 8
    assert report["options"]["rrf_k"] == RetrievalOptions().rrf_k
    assert report["run_id"] == 1


def test_progress(stored):
    _, _, seen = stored
    assert seen[:8] == [("ingest", i, 8) for i in range(1, 9)]
    assert seen[8:] == [(mode, i, 4) for mode in ("bm25", "vector", "hybrid", "graph") for i in range(1, 5)]


def test_stored_tables(stored):
    report, db, _ = stored
    run = db["eval_runs"].get(1)
    assert {key: run[key] for key in ("file", "corpus", "queries")} == {
        "file": report["file"],
        "corpus": 8,
        "queries": 4,
    }
    assert json.loads(run["options"]) == report["options"]
    rows = [
        (r["run_id"], r["mode"], r["k"], r["recall_any"], r["recall_both"])
        for r in db["eval_results"].rows_where(order_by="rowid")
    ]
    assert rows == [
        (1, mode, int(k), values["any"], values["both"])
        for mode, recall in EXPECTED_RECALL.items()
        for k, values in recall.items()
    ]
    assert db["eval_results"].pks == ["run_id", "mode", "k"]
    assert db["eval_queries"].count == 16
    first = db["eval_queries"].get((1, "bm25", 0))
    assert (first["question"], json.loads(first["gold"]), json.loads(first["gold_ranks"])) == (
        "What can damming a river cause?",
        [0, 1],
        [1, None],  # the second fact is not in the top max(ks) = 2
    )
    assert json.loads(first["ranked"]) == [0, 2]


def test_format_table(stored):
    report, _, _ = stored
    lines = format_table(report).splitlines()
    assert lines[0] == f"4 questions over 8 texts (ingest {report['ingest_seconds']:.1f}s)"
    assert lines[1].split() == [
        "mode", "R@1", "any", "R@1", "both", "R@2", "any", "R@2", "both", "p50", "ms", "p95", "ms"
    ]
    assert [line.split()[:5] for line in lines[2:]] == [
        ["bm25", "1.000", "0.250", "1.000", "0.750"],
        ["vector", "1.000", "0.250", "1.000", "1.000"],
        ["hybrid", "1.000", "0.250", "1.000", "1.000"],
        ["graph", "1.000", "0.250", "1.000", "1.000"],
    ]


def test_reuses_a_kept_database(tiny_file, tmp_path):
    database = tmp_path / "kept.db"
    first = run_eval(tiny_file, modes=["bm25"], ks=(2,), database=database)
    assert (tmp_path / "kept.db.corpus" / "00007.txt").read_text() == (
        "Electric wires are often made of copper.\n"
    )
    second = run_eval(tiny_file, modes=["bm25"], ks=(2,), database=database)
    assert first["modes"]["bm25"]["recall"] == second["modes"]["bm25"]["recall"] == {
        "2": {"any": 1.0, "both": 0.75}
    }
    assert second["counts"] == first["counts"]


def test_recall_at():
    assert recall_at([5, 3, 9], [3, 9], 2) == (True, False)
    assert recall_at([5, 3, 9], [3, 9], 3) == (True, True)
    assert recall_at([5, 3, 9], [1], 3) == (False, False)


@pytest.mark.parametrize(
    "content,message",
    [
        ("[]", "expected an object with 'corpus' and 'queries' lists"),
        ('{"corpus": ["a"], "queries": [{"question": "q"}]}', "query 0 needs a 'question' and a 'gold' list"),
        ('{"corpus": ["a"], "queries": [{"question": "q", "gold": [1]}]}', "query 0 has a gold index outside the corpus"),
    ],
)
def test_bad_files(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(EvalFileError) as ex:
        load_eval_file(path)
    assert str(ex.value) == f"{path}: {message}"


def test_unknown_mode(tiny_file):
    with pytest.raises(ValueError) as ex:
        run_eval(tiny_file, modes=["bm25", "psychic"])
    assert str(ex.value) == "Unknown mode 'psychic': choose from bm25, vector, hybrid, graph"
