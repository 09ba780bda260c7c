"""Configuration for ``serve``, ``mcp`` and ``watch`` (seed 004 §13).

A YAML file, ``GRAPHRAG_*`` environment variables over it and command-line flags over
both. ``load_config`` records where each value came from (``llm graphrag config``).

Two kinds of option. Process options (``watch``, ``sqlite``, ``retrieval.k``/``hops``/
``rels``/``mode``, ``project``) only affect the process that reads them. Database options
(``extract.*``, ``retrieval.weights.*``) change what is stored or how it is scored, so
every process writing or reading one file must agree: they live in the database's
``graphrag_settings`` (``llm graphrag settings``). A configuration that sets one writes
it there when ``serve``, ``mcp`` or ``watch`` starts (``apply_to_database``); one that
does not shows the database's value, with ``database`` as its source.
"""

import os
from dataclasses import dataclass

import yaml

ENV_PREFIX = "GRAPHRAG_"
CONFIG_ENV = "GRAPHRAG_CONFIG"  # the config file, when --config is not given


class ConfigError(ValueError):
    """A configuration value that cannot be used; says which, where, and what to do."""


@dataclass(frozen=True)
class Option:
    key: str  # dotted path in the YAML file
    default: object
    type: type
    help: str
    setting: tuple = None  # database options: the graphrag_settings key and path inside it

    @property
    def env(self):
        return ENV_PREFIX + self.key.replace(".", "_").upper()


OPTIONS = {
    option.key: option
    for option in (
        Option("project", "graphrag", str, "name the MCP server gives itself"),
        Option("watch.dirs", [], list, "folders to watch (seed 004's watch.dir is one of them)"),
        Option("watch.debounce_ms", 300, int, "quiet time per path before it is indexed (ms)"),
        Option("sqlite.path", "graphrag.db", str, "the graphrag database file"),
        Option("sqlite.wal", True, bool, "WAL journal (always on: readers never wait for the writer)"),
        Option("embed.model", None, str, "embedding model of a new database (fixed once created)"),
        Option("embed.dim", None, int, "checked against the embedding model's dimensions"),
        Option("embed.quantize", None, int, "seed 004's 8-bit vectors: accepted, vectors stay float32"),
        Option("extract.ner", None, str, "auto (spaCy when installed), off, or spacy:<model>", ("extract", "ner")),
        Option("extract.gazetteer.mine_topk", None, int, "gazetteer terms kept", ("extract", "gazetteer_topk")),
        Option("extract.gazetteer.min_freq", None, int, "documents a gazetteer term needs", ("extract", "gazetteer_min_freq")),
        Option("extract.regex.version", None, str, "seed 004's version pattern: accepted, the built-in one is used"),
        Option("extract.link_threshold", None, float, "linking score a mention needs", ("extract", "link_threshold")),
        Option("extract.llm_model", None, str, "llm model that also extracts (none by default)", ("extract", "llm_model")),
        Option("limits.max_file_bytes", None, int, "larger files are errors, not read (default 4000000)", ("limits", "max_file_bytes")),
        Option("limits.max_chunks", None, int, "files with more chunks are errors (default 1000)", ("limits", "max_chunks")),
        Option("limits.max_html_depth", None, int, "HTML nested deeper is an error (default 512)", ("limits", "max_html_depth")),
        Option("retrieval.k", 10, int, "hybrid_query's default k over MCP"),
        Option("retrieval.hops", 2, int, "hybrid_query's default hops over MCP"),
        Option("retrieval.rels", None, list, "hybrid_query's default relation types (all when null)"),
        Option("retrieval.mode", "graph", str, "hybrid_query's default mode over MCP"),
        Option("retrieval.weights.semantic", None, float, "weight of semantic relevance", ("retrieval", "weights", "semantic")),
        Option("retrieval.weights.graph", None, float, "weight of graph bridges", ("retrieval", "weights", "graph")),
    )
}
ALIASES = {"watch.dir": "watch.dirs"}  # seed 004 §13 watches one folder
TYPE_NAMES = {str: "a string", int: "an integer", float: "a number", bool: "true or false", list: "a list"}


@dataclass
class Config:
    values: dict  # dotted key -> value
    sources: dict  # dotted key -> "default", "file <path>", "env GRAPHRAG_...", "flag --...", "database"
    file: str = None

    def __getitem__(self, key):
        return self.values[key]

    def database_settings(self):
        """``{setting: {...}}`` for the database options this configuration sets."""
        settings = {}
        for key, option in OPTIONS.items():
            if option.setting and self.sources[key] not in ("default", "database"):
                _put(settings, option.setting, self.values[key])
        return settings

    def explain(self):
        """One row per option: key, value, source, environment variable, where it applies."""
        return [
            {
                "key": key,
                "value": self.values[key],
                "source": self.sources[key],
                "env": option.env,
                "scope": "database" if option.setting else "process",
            }
            for key, option in OPTIONS.items()
        ]

    def to_dict(self):
        nested = {}
        for key, value in self.values.items():
            _put(nested, key.split("."), value)
        return nested


def load_config(path=None, *, env=None, flags=None, db=None):
    """The effective configuration: defaults < ``db``'s settings < file < environment < flags.

    ``path`` is a YAML file (default: ``$GRAPHRAG_CONFIG`` when set); ``flags`` maps dotted
    keys to values given on the command line (``None`` means not given). Relative paths in
    the file are relative to the file's folder. Raises ``ConfigError``.
    """
    env = os.environ if env is None else env
    values = {key: option.default for key, option in OPTIONS.items()}
    sources = dict.fromkeys(OPTIONS, "default")
    if db is not None:
        from .schema import get_setting

        for key, option in OPTIONS.items():
            if option.setting:
                found = _get(get_setting(db, option.setting[0]) or {}, option.setting[1:])
                if found is not None:
                    values[key], sources[key] = found, "database"
    path = path or env.get(CONFIG_ENV) or None
    if path:
        for key, value in _read_file(path).items():
            values[key], sources[key] = value, f"file {path}"
    for key, option in OPTIONS.items():
        raw = env.get(option.env)
        if raw is not None and raw != "":
            values[key] = _from_env(option, raw)
            sources[key] = f"env {option.env}"
    for key, value in (flags or {}).items():
        if value is None or value == () or value == []:
            continue
        option = OPTIONS[key]
        values[key] = _check(option, list(value) if isinstance(value, tuple) else value, "on the command line")
        sources[key] = "flag"
    for key in ("sqlite.path",):
        values[key] = str(values[key])
    values["watch.dirs"] = [str(d) for d in values["watch.dirs"]]
    if values["sqlite.wal"] is not True:
        raise ConfigError(
            f"sqlite.wal is false ({sources['sqlite.wal']}): graphrag always uses WAL so that "
            "readers never wait for the writer; remove the setting"
        )
    return Config(values, sources, str(path) if path else None)


def apply_to_database(config, db):
    """Write the database options ``config`` sets into ``db``'s settings; check the
    embedding model and dimensions. Returns the settings written."""
    from .schema import get_setting, set_setting

    model = get_setting(db, "embedding_model")
    if config.sources["embed.model"] != "default" and model not in (None, config["embed.model"]):
        raise ConfigError(
            f"embed.model is {config['embed.model']!r} ({config.sources['embed.model']}) but "
            f"{config['sqlite.path']} uses {model!r}: an existing database keeps its model; "
            "use a new sqlite.path or remove embed.model"
        )
    dimensions = get_setting(db, "dimensions")
    if config["embed.dim"] is not None and dimensions not in (None, config["embed.dim"]):
        raise ConfigError(
            f"embed.dim is {config['embed.dim']} ({config.sources['embed.dim']}) but the database's "
            f"model gives {dimensions} dimensions; remove embed.dim or set it to {dimensions}"
        )
    written = config.database_settings()
    if written:
        with db.atomic():
            for key, values in written.items():
                stored = dict(get_setting(db, key) or {})
                _merge(stored, values)
                set_setting(db, key, stored)
    return written


def _read_file(path):
    """A YAML file's options as ``{dotted key: value}``, checked."""
    try:
        with open(path) as fp:
            data = yaml.safe_load(fp)
    except FileNotFoundError:
        raise ConfigError(f"Config file {path} does not exist: check the path given to --config") from None
    except yaml.YAMLError as ex:
        mark = getattr(ex, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(ex, "problem", None) or str(ex)
        hint = (
            "; in double quotes a backslash starts an escape, so put regular expressions in single quotes"
            if "escape" in problem
            else ""
        )
        raise ConfigError(f"Config file {path} is not valid YAML{where}: {problem}{hint}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"Config file {path} must hold a mapping of sections (watch:, sqlite:, ...), not {type(data).__name__}")
    found = {}
    _flatten(data, "", found, path)
    folder = os.path.dirname(os.path.abspath(path))
    if "sqlite.path" in found:
        found["sqlite.path"] = os.path.join(folder, os.path.expanduser(found["sqlite.path"]))
    if "watch.dirs" in found:
        found["watch.dirs"] = [os.path.join(folder, os.path.expanduser(d)) for d in found["watch.dirs"]]
    return found


def _flatten(data, prefix, found, path):
    for name, value in data.items():
        key = ALIASES.get(prefix + str(name), prefix + str(name))
        if key in OPTIONS:
            option = OPTIONS[key]
            if key == "watch.dirs" and isinstance(value, str):
                value = [value]
            found[key] = _check(option, value, f"in {path}")
        elif isinstance(value, dict) and any(k.startswith(key + ".") for k in OPTIONS):
            _flatten(value, key + ".", found, path)
        else:
            siblings = sorted(
                {k[len(prefix):].split(".")[0] for k in list(OPTIONS) + list(ALIASES) if k.startswith(prefix)}
            )
            raise ConfigError(
                f"Unknown key {key!r} in {path}: the keys {'under ' + prefix.rstrip('.') if prefix else 'at the top'} "
                f"are {', '.join(siblings)}"
            )


def _check(option, value, where):
    if value is None:
        return None
    wanted = option.type
    ok = isinstance(value, wanted) and not (wanted is int and isinstance(value, bool))
    if wanted is float and isinstance(value, int) and not isinstance(value, bool):
        value, ok = float(value), True
    if wanted is list and ok:
        ok = all(isinstance(v, str) for v in value)
    if not ok:
        raise ConfigError(
            f"{option.key} {where} must be {TYPE_NAMES[wanted]}"
            + (" of strings" if wanted is list else "")
            + f", not {value!r}"
        )
    return value


def _from_env(option, raw):
    if option.type is str:
        value = raw
    elif option.type is list:
        value = [part.strip() for part in raw.split(os.pathsep if option.key == "watch.dirs" else ",") if part.strip()]
    else:
        try:
            value = yaml.safe_load(raw)
        except yaml.YAMLError:
            value = raw
    if value is None and raw.lower() in ("null", "none", "~"):
        return None
    return _check(option, value, f"in ${option.env}")


def _put(nested, keys, value):
    for key in keys[:-1]:
        nested = nested.setdefault(key, {})
    nested[keys[-1]] = value


def _get(nested, keys):
    for key in keys:
        if not isinstance(nested, dict) or key not in nested:
            return None
        nested = nested[key]
    return nested


def _merge(target, values):
    for key, value in values.items():
        if isinstance(value, dict) and isinstance(target.get(key), dict):
            _merge(target[key], value)
        else:
            target[key] = value
