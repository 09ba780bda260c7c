"""Configuration: YAML, GRAPHRAG_* environment variables, flags, and the database's settings."""

import json
import pathlib
import re

import pytest
from click.testing import CliRunner

from llm_graphrag.cli import graphrag
from llm_graphrag.config import OPTIONS, ConfigError, apply_to_database, load_config
from llm_graphrag.db import open_database
from llm_graphrag.schema import get_setting

SEED = pathlib.Path("/work/shared/seeds/004_c7454a6a7ee89d6b.txt")
# Seed 004 §13's example, with its regular expression in single quotes: in the seed's double
# quotes, ``\d`` is an escape YAML does not have (see test_seed_yaml_verbatim_is_explained).
SEED_YAML = """\
project: "knowledge-graphrag"
watch:
  dir: "/knowledge"
  debounce_ms: 300
extract:
  ner: "spacy:en_core_web_sm"
  gazetteer:
    mine_topk: 2000
    min_freq: 3
  regex:
    version: 'v?\\d+\\.\\d+(\\.\\d+)?(-[a-z0-9]+)?'
embed:
  model: "embedding-gemma-512"
  dim: 512
  quantize: 8
sqlite:
  path: "/data/graphrag.sqlite"
  wal: true
retrieval:
  k: 40
  hops: 2
  rels: ["defines","depends_on","uses","cites"]
  weights:
    semantic: 0.7
    graph: 0.3
"""


@pytest.fixture
def seed_config(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text(SEED_YAML)
    return path


def test_seed_example_loads_with_every_value_from_the_file(seed_config):
    config = load_config(seed_config, env={})
    source = f"file {seed_config}"
    assert config.to_dict() == {
        "project": "knowledge-graphrag",
        "watch": {"dirs": ["/knowledge"], "debounce_ms": 300},
        "sqlite": {"path": "/data/graphrag.sqlite", "wal": True},
        "embed": {"model": "embedding-gemma-512", "dim": 512, "quantize": 8},
        "extract": {
            "ner": "spacy:en_core_web_sm",
            "gazetteer": {"mine_topk": 2000, "min_freq": 3},
            "regex": {"version": r"v?\d+\.\d+(\.\d+)?(-[a-z0-9]+)?"},
            "link_threshold": None,
            "llm_model": None,
        },
        "limits": {"max_file_bytes": None, "max_chunks": None, "max_html_depth": None},
        "retrieval": {
            "k": 40, "hops": 2, "rels": ["defines", "depends_on", "uses", "cites"], "mode": "graph",
            "weights": {"semantic": 0.7, "graph": 0.3},
        },
    }
    defaults = {"extract.link_threshold", "extract.llm_model", "retrieval.mode"} | {
        key for key in OPTIONS if key.startswith("limits.")
    }
    assert config.sources == {key: "default" if key in defaults else source for key in OPTIONS}
    assert config.database_settings() == {
        "extract": {"ner": "spacy:en_core_web_sm", "gazetteer_topk": 2000, "gazetteer_min_freq": 3},
        "retrieval": {"weights": {"semantic": 0.7, "graph": 0.3}},
    }


def test_seed_yaml_verbatim_is_explained(tmp_path):
    text = SEED.read_text()
    block = re.search(r"## 13\) Configuration \(YAML\)\n\n```yaml\n(.*?)```", text, re.S).group(1)
    path = tmp_path / "seed.yaml"
    path.write_text(block)
    with pytest.raises(ConfigError) as error:
        load_config(path, env={})
    assert str(error.value) == (
        f"Config file {path} is not valid YAML at line 11, column 18: found unknown escape "
        "character 'd'; in double quotes a backslash starts an escape, so put regular "
        "expressions in single quotes"
    )


def test_environment_overrides_file_and_flags_override_both(seed_config, tmp_path):
    env = {
        "GRAPHRAG_WATCH_DEBOUNCE_MS": "450",
        "GRAPHRAG_SQLITE_PATH": "/env/graphrag.db",
        "GRAPHRAG_RETRIEVAL_RELS": "uses, depends_on",
        "GRAPHRAG_RETRIEVAL_WEIGHTS_GRAPH": "0.5",
        "GRAPHRAG_WATCH_DIRS": "/a:/b",
        "GRAPHRAG_EXTRACT_LINK_THRESHOLD": "",  # empty: not set
    }
    config = load_config(seed_config, env=env, flags={"sqlite.path": "flag.db", "watch.dirs": (), "watch.debounce_ms": None})
    rows = {row["key"]: row for row in config.explain()}
    assert rows["watch.debounce_ms"] == {
        "key": "watch.debounce_ms", "value": 450, "source": "env GRAPHRAG_WATCH_DEBOUNCE_MS",
        "env": "GRAPHRAG_WATCH_DEBOUNCE_MS", "scope": "process",
    }
    assert rows["sqlite.path"] == {
        "key": "sqlite.path", "value": "flag.db", "source": "flag", "env": "GRAPHRAG_SQLITE_PATH", "scope": "process",
    }
    assert rows["retrieval.rels"]["value"] == ["uses", "depends_on"]
    assert rows["watch.dirs"]["value"] == ["/a", "/b"]
    assert rows["retrieval.weights.graph"] == {
        "key": "retrieval.weights.graph", "value": 0.5, "source": "env GRAPHRAG_RETRIEVAL_WEIGHTS_GRAPH",
        "env": "GRAPHRAG_RETRIEVAL_WEIGHTS_GRAPH", "scope": "database",
    }
    assert rows["extract.link_threshold"]["source"] == "default"
    assert rows["project"]["source"] == f"file {seed_config}"


def test_config_file_from_environment_and_relative_paths(tmp_path):
    folder = tmp_path / "conf"
    folder.mkdir()
    (folder / "c.yaml").write_text("sqlite:\n  path: data/g.db\nwatch:\n  dir: docs\n")
    config = load_config(env={"GRAPHRAG_CONFIG": str(folder / "c.yaml")})
    assert config.file == str(folder / "c.yaml")
    assert config["sqlite.path"] == str(folder / "data" / "g.db")
    assert config["watch.dirs"] == [str(folder / "docs")]


@pytest.mark.parametrize(
    "text,message",
    [
        ("watch:\n  debounce: 300\n", "Unknown key 'watch.debounce' in {path}: the keys under watch are debounce_ms, dir, dirs"),
        ("wacth:\n  dir: x\n", "Unknown key 'wacth' in {path}: the keys at the top are embed, extract, limits, project, retrieval, sqlite, watch"),
        ("watch:\n  debounce_ms: fast\n", "watch.debounce_ms in {path} must be an integer, not 'fast'"),
        ("retrieval:\n  rels: uses\n", "retrieval.rels in {path} must be a list of strings, not 'uses'"),
        ("- a\n- b\n", "Config file {path} must hold a mapping of sections (watch:, sqlite:, ...), not list"),
        ("sqlite:\n  wal: false\n", "sqlite.wal is false (file {path}): graphrag always uses WAL so that readers never wait for the writer; remove the setting"),
        ("retrieval: [\n", "Config file {path} is not valid YAML at line 2, column 1: expected the node content, but found '<stream end>'"),
    ],
)
def test_bad_configuration_names_the_problem(tmp_path, text, message):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as error:
        load_config(path, env={})
    assert str(error.value) == message.format(path=path)


def test_missing_file_and_bad_environment_value(tmp_path):
    with pytest.raises(ConfigError) as error:
        load_config(tmp_path / "nope.yaml", env={})
    assert str(error.value) == f"Config file {tmp_path / 'nope.yaml'} does not exist: check the path given to --config"
    with pytest.raises(ConfigError) as error:
        load_config(env={"GRAPHRAG_RETRIEVAL_WEIGHTS_SEMANTIC": "high"})
    assert str(error.value) == "retrieval.weights.semantic in $GRAPHRAG_RETRIEVAL_WEIGHTS_SEMANTIC must be a number, not 'high'"


def test_database_options_are_written_to_the_database_settings(tmp_path):
    db = open_database(tmp_path / "g.db")
    with db.atomic():
        from llm_graphrag.schema import set_setting

        set_setting(db, "extract", {"ner": "off", "cooccurrence_window": 2})
    path = tmp_path / "c.yaml"
    path.write_text("extract:\n  link_threshold: 0.8\nretrieval:\n  weights:\n    graph: 0.25\n")
    # Before: the database's own value shows with "database" as its source.
    config = load_config(path, env={}, db=db)
    rows = {row["key"]: row for row in config.explain()}
    assert (rows["extract.ner"]["value"], rows["extract.ner"]["source"]) == ("off", "database")
    assert (rows["extract.link_threshold"]["value"], rows["extract.link_threshold"]["source"]) == (0.8, f"file {path}")
    assert apply_to_database(config, db) == {"extract": {"link_threshold": 0.8}, "retrieval": {"weights": {"graph": 0.25}}}
    assert get_setting(db, "extract") == {"ner": "off", "cooccurrence_window": 2, "link_threshold": 0.8}
    assert get_setting(db, "retrieval") == {"weights": {"graph": 0.25}}
    # What `llm graphrag settings` shows is what the configuration wrote.
    result = CliRunner().invoke(graphrag, ["settings", "extract", "-d", str(tmp_path / "g.db")])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == {"ner": "off", "cooccurrence_window": 2, "link_threshold": 0.8}


def test_existing_database_keeps_its_model(tmp_path):
    db = open_database(tmp_path / "g.db")
    config = load_config(env={"GRAPHRAG_EMBED_MODEL": "other-model", "GRAPHRAG_SQLITE_PATH": str(tmp_path / "g.db")})
    with pytest.raises(ConfigError) as error:
        apply_to_database(config, db)
    assert str(error.value) == (
        f"embed.model is 'other-model' (env GRAPHRAG_EMBED_MODEL) but {tmp_path / 'g.db'} uses 'graphrag': "
        "an existing database keeps its model; use a new sqlite.path or remove embed.model"
    )
    config = load_config(env={"GRAPHRAG_EMBED_DIM": "512"})
    with pytest.raises(ConfigError) as error:
        apply_to_database(config, db)
    assert str(error.value) == (
        "embed.dim is 512 (env GRAPHRAG_EMBED_DIM) but the database's model gives 256 dimensions; "
        "remove embed.dim or set it to 256"
    )


def test_config_command(seed_config, tmp_path):
    runner = CliRunner()
    result = runner.invoke(
        graphrag, ["config", "--config", str(seed_config), "--json"], env={"GRAPHRAG_RETRIEVAL_K": "7"}
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["file"] == str(seed_config)
    assert data["config"]["retrieval"]["k"] == 7
    assert data["options"][0] == {
        "key": "project", "value": "knowledge-graphrag", "source": f"file {seed_config}",
        "env": "GRAPHRAG_PROJECT", "scope": "process",
    }
    assert [row["key"] for row in data["options"]] == list(OPTIONS)
    result = runner.invoke(graphrag, ["config"], env={"GRAPHRAG_WATCH_DEBOUNCE_MS": "500"})
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert len(lines) == len(OPTIONS)
    assert lines[2].split() == ["watch.debounce_ms", "500", "env", "GRAPHRAG_WATCH_DEBOUNCE_MS"]
    assert lines[0].split() == ["project", '"graphrag"', "default"]
    result = runner.invoke(graphrag, ["config", "--config", str(tmp_path / "missing.yaml")])
    assert result.exit_code == 1
    assert result.output == f"Error: Config file {tmp_path / 'missing.yaml'} does not exist: check the path given to --config\n"


def test_config_command_shows_database_settings(tmp_path):
    database = str(tmp_path / "g.db")
    runner = CliRunner()
    assert runner.invoke(graphrag, ["settings", "extract", '{"link_threshold": 0.9}', "-d", database]).exit_code == 1
    open_database(database)
    result = runner.invoke(graphrag, ["settings", "extract", '{"link_threshold": 0.9}', "-d", database])
    assert result.exit_code == 0, result.output
    result = runner.invoke(graphrag, ["config", "-d", database, "--json"], env={"GRAPHRAG_CONFIG": None})
    rows = {row["key"]: row for row in json.loads(result.output)["options"]}
    assert rows["extract.link_threshold"] == {
        "key": "extract.link_threshold", "value": 0.9, "source": "database",
        "env": "GRAPHRAG_EXTRACT_LINK_THRESHOLD", "scope": "database",
    }
    assert rows["sqlite.path"]["source"] == "flag"
