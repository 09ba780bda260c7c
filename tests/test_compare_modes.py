"""bench/compare_modes.py: the per-question comparison gives ``llm graphrag eval``'s figures."""

import json
import pathlib
import sys

import pytest

from llm_graphrag.evaluate import run_eval
from llm_graphrag.retrieval import RetrievalOptions

sys.path.insert(0, str(pathlib.Path(__file__).parent.parent / "bench"))

import compare_modes  # noqa: E402
from test_evaluate import TINY  # noqa: E402  (the same four questions run_eval's tests ask)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    folder = tmp_path_factory.mktemp("compare")
    path = folder / "tiny.json"
    path.write_text(json.dumps(TINY))
    database = folder / "tiny.db"
    report = run_eval(path, ks=(2, 5, 10), database=str(database))
    return path, database, report


def test_figures_match_the_eval_command(built):
    path, database, report = built
    results = compare_modes.run(path, database, "all", RetrievalOptions())
    assert list(results) == ["bm25", "vector", "hybrid", "graph"]
    for mode, rows in results.items():
        assert [row["number"] for row in rows] == [0, 1, 2, 3]
        figures = compare_modes.figures(rows)
        expected = report["modes"][mode]
        for k in (2, 5, 10):
            for kind in ("any", "both"):
                wanted = expected["recall"][str(k)][kind]
                assert figures[f"R@{k} {kind}"] == pytest.approx(wanted, abs=1e-4)
        for name, key in (("hit@1", "hit@1"), ("MRR@10", "mrr@10"), ("P@5", "p@5")):
            assert figures[name] == pytest.approx(expected["ranking"][key], abs=1e-4)


def test_each_questions_searches_run_once(built):
    path, database, _ = built
    searches = compare_modes.Searches()
    compare_modes.run(path, database, "all", RetrievalOptions(), searches=searches)
    assert sorted(searches.cache) == sorted(q["question"] for q in TINY["queries"])


def test_deficits_name_the_single_mode_ahead():
    def row(rank):  # one question whose gold document is at ``rank``
        return {
            "recall": {k: (rank <= k, False) for k in (2, 5, 10)},
            "ranking": (1.0 if rank == 1 else 0.0, 1 / rank, 0.0),
        }

    results = {"bm25": [row(1)], "vector": [row(3)], "hybrid": [row(1)], "graph": [row(2)]}
    _, lost = compare_modes.deficits(results)
    assert ("hit@1", 0.0, "bm25", 1.0) in lost
    assert ("MRR@10", 0.5, "hybrid", 1.0) in lost
    assert all(mode != "vector" for _, _, mode, _ in lost)
    assert compare_modes.churn(results["graph"], results["bm25"], "hit@1") == (1, 0, 0.5)
    assert compare_modes.churn(results["graph"], results["vector"], "MRR@10")[:2] == (0, 1)


def test_main_prints_the_table_and_the_deficits(built, capsys):
    path, database, _ = built
    compare_modes.main([str(path), "-d", str(database), "--split", "all", "--set", "keep_top=3"])
    out = capsys.readouterr().out
    assert "| graph |" in out and "| bm25 |" in out
    assert "4 questions" in out
