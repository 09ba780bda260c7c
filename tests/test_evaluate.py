"""The evaluation harness on a tiny two-hop file and a tiny folder, through the real ingest pipeline."""

import json
import pathlib

import pytest
import sqlite_utils
from click.testing import CliRunner
from llm.cli import cli

from llm_graphrag.evaluate import (
    EvalFileError,
    cache_path,
    format_table,
    in_split,
    load_eval_file,
    load_folder_file,
    ranking_scores,
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
        [1, 3],  # questions are asked for max(ks + (10,)) results, for MRR@10
    )
    assert json.loads(first["ranked"])[:2] == [0, 2]


def test_format_table(stored):
    report, _, _ = stored
    lines = format_table(report).splitlines()
    assert lines[0] == f"4 questions over 8 texts (ingest {report['ingest_seconds']:.1f}s)"
    assert lines[1].split() == [
        "mode", "hit@1", "MRR@10", "P@5",
        "R@1", "any", "R@1", "both", "R@2", "any", "R@2", "both", "p50", "ms", "p95", "ms",
    ]
    assert [line.split()[:8] for line in lines[2:]] == [
        [mode, f"{r['hit@1']:.3f}", f"{r['mrr@10']:.3f}", f"{r['p@5']:.3f}"] + recall
        for (mode, r), recall in zip(
            ((m, report["modes"][m]["ranking"]) for m in report["modes"]),
            (
                ["1.000", "0.250", "1.000", "0.750"],
                ["1.000", "0.250", "1.000", "1.000"],
                ["1.000", "0.250", "1.000", "1.000"],
                ["1.000", "0.250", "1.000", "1.000"],
            ),
        )
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


# A folder of Markdown pages with questions naming their gold pages.
PAGES = {
    "kitchen/pasta.md": "# Cooking pasta\n\nBoil salted water, add the spaghetti and cook it for ten minutes "
    "until al dente. Drain the pasta in a colander.\n",
    "kitchen/bread.md": "# Baking bread\n\nKnead the dough of flour, water, yeast and salt, let it rise "
    "for two hours, then bake the loaf in a hot oven.\n",
    "garden/tomatoes.md": "# Growing tomatoes\n\nPlant tomato seedlings in full sun, water them deeply "
    "and tie the stems to stakes as the fruit ripens.\n",
    "garden/roses.md": "# Pruning roses\n\nCut rose bushes back in late winter, just above an outward "
    "facing bud, and remove dead canes.\n",
    "garage/brakes.md": "# Replacing brake pads\n\nJack up the car, remove the wheel and the caliper, "
    "then slide the worn brake pads out and fit new ones.\n",
    "garage/tyres.md": "# Checking tyre pressure\n\nUse a pressure gauge on each tyre valve when the "
    "tyres are cold and inflate them to the pressure printed in the door frame.\n",
    "drafts/pasta-old.md": "# Cooking pasta (old)\n\nBoil water and cook spaghetti.\n",
    "notes.txt": "Shopping list: flour, yeast, tomato seedlings, brake pads.\n",
}
FOLDER_QUERIES = [
    {"question": "How long should spaghetti boil?", "gold_paths": ["kitchen/pasta.md"], "split": "dev"},
    {"question": "When do I prune rose bushes?", "gold_paths": ["garden/roses.md"], "split": "dev"},
    {
        "question": "What needs salt: pasta water or bread dough?",
        "gold_paths": ["kitchen/pasta.md", "kitchen/bread.md"],
    },
    {"question": "How do I fit new brake pads?", "gold_paths": ["garage/brakes.md"], "split": "heldout"},
]


@pytest.fixture(scope="module")
def folder_file(tmp_path_factory):
    root = tmp_path_factory.mktemp("pages")
    for name, text in PAGES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    path = root / "questions.json"
    path.write_text(
        json.dumps(
            {
                "folder": str(root),
                "include": ["**/*.md"],
                "exclude": ["drafts/*"],
                "queries": FOLDER_QUERIES,
            }
        )
    )
    return path


@pytest.fixture(scope="module")
def folder_run(folder_file, tmp_path_factory):
    base = tmp_path_factory.mktemp("folder-run")
    return run_eval(folder_file, ks=(1, 5), database=base / "pages.db", store_db=str(base / "runs.db")), base


def test_ranking_scores_by_hand():
    ranked = ["a", "b", "c", "d", "e", "f", "g"]
    # first gold at rank 3; 1 of the first 5 documents is gold
    assert ranking_scores(ranked, ["c", "x"]) == (0.0, 1 / 3, 1 / 5)
    # gold first and fourth: hit, reciprocal rank 1, 2 of 5
    assert ranking_scores(ranked, ["d", "a"]) == (1.0, 1.0, 2 / 5)
    # fewer than 5 documents: precision over the 3 there are
    assert ranking_scores(["b", "a", "c"], ["a", "c"]) == (0.0, 0.5, 2 / 3)
    # gold only at rank 11: outside MRR@10 and P@5
    assert ranking_scores([str(i) for i in range(12)], ["10"]) == (0.0, 0.0, 0.0)
    assert ranking_scores([], ["a"]) == (0.0, 0.0, 0.0)
    # P@5 over results: two of the first five chunks come from gold page "a"
    assert ranking_scores(["a", "b"], ["a"], ["a", "b", "a", "b", "b", "a"]) == (1.0, 1.0, 2 / 5)


def test_load_folder_file(folder_file):
    folder, files, queries = load_folder_file(folder_file)
    assert folder == folder_file.parent
    assert files == [
        "garage/brakes.md",
        "garage/tyres.md",
        "garden/roses.md",
        "garden/tomatoes.md",
        "kitchen/bread.md",
        "kitchen/pasta.md",
    ]
    assert queries == FOLDER_QUERIES


def test_folder_report(folder_run, folder_file):
    report, _ = folder_run
    assert (report["corpus"], report["queries"], report["split"], report["ks"]) == (6, 4, "all", [1, 5])
    assert report["folder"] == str(folder_file.parent)
    assert report["counts"]["docs"] == 6
    assert list(report["modes"]) == ["bm25", "vector", "hybrid", "graph"]
    # The salt question has two gold pages, so R@1 both misses it.
    for mode, result in report["modes"].items():
        assert result["recall"] == {
            "1": {"any": 1.0, "both": 0.75},
            "5": {"any": 1.0, "both": 1.0},
        }, mode
    # Every mode ranks a gold page first. bm25 returns only pages sharing a word with the
    # question: P@5 = (1 + 1 + 2/3 + 1) / 4; the others return all six pages, so P@5 =
    # (1/5 + 1/5 + 2/5 + 1/5) / 4.
    assert {mode: result["ranking"] for mode, result in report["modes"].items()} == {
        "bm25": {"hit@1": 1.0, "mrr@10": 1.0, "p@5": round((3 + 2 / 3) / 4, 4)},
        "vector": {"hit@1": 1.0, "mrr@10": 1.0, "p@5": 0.25},
        "hybrid": {"hit@1": 1.0, "mrr@10": 1.0, "p@5": 0.25},
        "graph": {"hit@1": 1.0, "mrr@10": 1.0, "p@5": 0.25},
    }


def test_folder_metrics_match_the_rankings(folder_run):
    """hit@1, MRR@10 and P@5 are the means of ranking_scores over the stored rankings."""
    report, base = folder_run
    db = sqlite_utils.Database(base / "runs.db")
    for mode, result in report["modes"].items():
        rows = list(db["eval_queries"].rows_where("mode = ?", [mode], order_by="query"))
        assert [json.loads(r["gold"]) for r in rows] == [q["gold_paths"] for q in FOLDER_QUERIES]
        scores = [
            ranking_scores(json.loads(r["ranked"]), json.loads(r["gold"]), json.loads(r["results"]))
            for r in rows
        ]
        for ranked in (json.loads(r["ranked"]) for r in rows):
            assert len(ranked) == len(set(ranked)) and set(ranked) <= {
                "garage/brakes.md", "garage/tyres.md", "garden/roses.md",
                "garden/tomatoes.md", "kitchen/bread.md", "kitchen/pasta.md",
            }
        expected = [round(sum(s[i] for s in scores) / 4, 4) for i in range(3)]
        assert [result["ranking"][n] for n in ("hit@1", "mrr@10", "p@5")] == expected
        stored = db["eval_rankings"].get((1, mode))
        assert [stored["hit_at_1"], stored["mrr_at_10"], stored["p_at_5"]] == expected
    assert db["eval_runs"].get(1)["split"] == "all"


def test_split_and_cache(folder_file, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    folder, files, _ = load_folder_file(folder_file)
    cached = cache_path(folder, files)
    assert cached.parent == tmp_path / "cache" / "graphrag-eval"
    assert cached.name.startswith(f"{folder.parent.name}-{folder.name}-")
    dev = run_eval(folder_file, modes=["bm25"], ks=(1,), split="dev")
    assert cached.exists() and dev["database"] == str(cached)
    assert dev["queries"] == 3  # the question without a split counts as dev
    held = run_eval(folder_file, modes=["bm25"], ks=(1,), split="heldout")
    assert held["queries"] == 1 and held["split"] == "heldout"
    assert held["modes"]["bm25"]["ranking"] == {"hit@1": 1.0, "mrr@10": 1.0, "p@5": 1.0}
    assert held["counts"] == dev["counts"]
    # the dev questions split in two halves by position: 0 and 2 (no split: dev), then 1
    halves = {
        split: [n for n, q in enumerate(FOLDER_QUERIES) if in_split(n, q, split)]
        for split in ("dev-even", "dev-odd", "dev", "heldout", "all")
    }
    assert halves == {
        "dev-even": [0, 2], "dev-odd": [1], "dev": [0, 1, 2], "heldout": [3], "all": [0, 1, 2, 3]
    }
    odd = run_eval(folder_file, modes=["bm25"], ks=(1,), split="dev-odd")
    assert (odd["queries"], odd["split"]) == (1, "dev-odd")
    assert run_eval(folder_file, modes=["bm25"], ks=(1,), split="dev-even")["queries"] == 2
    # another file list is another database
    assert cache_path(folder, files[:-1]) != cached


@pytest.mark.parametrize(
    "change,message",
    [
        ({"folder": 3}, "expected an object with a 'folder' path and a 'queries' list"),
        ({"include": "*.md"}, "'include' must be a list of glob patterns relative to the folder"),
        ({"include": ["*.pdf"]}, "no supported files in {folder} match 'include'"),
        (
            {"queries": [{"question": "q", "gold_paths": ["drafts/pasta-old.md"]}]},
            "query 0 has gold path 'drafts/pasta-old.md', which is not among the files "
            "picked from {folder}: fix the path or the 'include' globs",
        ),
        ({"queries": [{"question": "q", "gold": [0]}]}, "query 0 needs a 'question' and a 'gold_paths' list"),
        (
            {"queries": [{"question": "q", "gold_paths": ["kitchen/pasta.md"], "split": "test"}]},
            "query 0 has split 'test': use 'dev' or 'heldout'",
        ),
    ],
)
def test_bad_folder_files(folder_file, tmp_path, change, message):
    data = dict(json.loads(folder_file.read_text()), **change)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(EvalFileError) as ex:
        load_folder_file(path)
    assert str(ex.value) == f"{path}: " + message.format(folder=folder_file.parent)


def test_missing_folder(tmp_path):
    path = tmp_path / "q.json"
    path.write_text(json.dumps({"folder": str(tmp_path / "nowhere"), "queries": []}))
    with pytest.raises(EvalFileError) as ex:
        load_folder_file(path)
    assert str(ex.value) == (
        f"{path}: folder {tmp_path / 'nowhere'} does not exist: install what ships it "
        "(for the files in eval/: apt-get install python3.11-doc, or python-django-doc)"
    )


def test_cli_folder_file(folder_file, folder_run):
    _, base = folder_run
    database = str(base / "pages.db")
    runner = CliRunner()
    args = ["graphrag", "eval", str(folder_file), "-d", database]
    result = runner.invoke(cli, args + ["--mode", "bm25", "-k", "1", "--split", "heldout", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert (report["database"], report["queries"], report["split"], list(report["modes"])) == (
        database, 1, "heldout", ["bm25"]
    )
    assert report["modes"]["bm25"]["ranking"] == {"hit@1": 1.0, "mrr@10": 1.0, "p@5": 1.0}
    result = runner.invoke(cli, args + ["--mode", "vector", "-k", "5"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith(f"4 questions over 6 documents of {folder_file.parent} (ingest ")
    assert lines[1].split()[:4] == ["mode", "hit@1", "MRR@10", "P@5"]
    assert lines[2].split()[:3] == ["vector", "1.000", "1.000"]
    result = runner.invoke(cli, args + ["--split", "nope"])
    assert result.exit_code == 2
    assert "Invalid value for '--split': 'nope' is not one of 'dev', 'heldout', 'all', 'dev-even', 'dev-odd'." in result.output


def test_empty_split(tiny_file):
    with pytest.raises(EvalFileError) as ex:
        run_eval(tiny_file, split="heldout")
    assert str(ex.value) == f"{tiny_file}: no questions in split 'heldout': use --split all"


def test_evaluate_retrieval_first_questions_of_a_folder_file(folder_file, folder_run):
    from llm_graphrag import evaluate_retrieval

    _, base = folder_run
    report = evaluate_retrieval(
        folder_file, modes=["bm25"], ks=(1,), questions=3, database=base / "pages.db"
    )
    assert (report["file"], report["queries"], report["corpus"]) == (str(folder_file), 3, 6)
    # bm25 names 1, 1 and 3 pages for the first three questions, 2 gold among the 3 last
    assert report["modes"]["bm25"]["ranking"] == {
        "hit@1": 1.0, "mrr@10": 1.0, "p@5": round((2 + 2 / 3) / 3, 4)
    }


@pytest.mark.parametrize(
    "name, count, heldout",
    [
        ("python-docs-qa.json", 80, 20),
        ("django-docs-qa.json", 60, 20),
        ("flask-docs-qa.json", 60, 20),
    ],
)
def test_documentation_question_files_point_at_real_pages(name, count, heldout):
    """Each documentation question file of the repository loads: its gold pages are among
    the files its globs pick from the Debian package's folder."""
    path = pathlib.Path(__file__).parent.parent / "eval" / name
    folder = json.loads(path.read_text())["folder"]
    if not pathlib.Path(folder).is_dir():
        pytest.skip(f"{folder} is not installed")
    _, files, queries = load_folder_file(path)
    assert len(queries) == count
    assert len({q["question"] for q in queries}) == count
    assert sum(q["split"] == "heldout" for q in queries) == heldout
    assert not any(f.startswith(("genindex", "search.html")) for f in files)
