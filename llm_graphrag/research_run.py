"""A research run directory (seed 002): the stages of one ``deep_research`` call on disk.

``write_run`` runs intake, clarify, plan, search, draft, cite, verify and report, logging
each stage to ``logs/pipeline.jsonl`` (started, then completed or failed, with the run
id: the directory's name when the run is written), and writes:

* ``clarify.json``: ``clarified`` when the question names an entity or has two content
  words; otherwise ``failed`` with the questions to ask (the run goes on as asked);
* ``logs/plan.json``: workers (one thread per sub-query), depth (``max_hops`` 2, 3, 4:
  brief, medium, deep), budget (results kept), language, the sub-queries;
* ``drafts/paragraphs.jsonl``: extractive paragraphs (the sentences of each top chunk
  sharing most content words with the question and its sub-queries, copied verbatim;
  one paragraph of the evidence sentences of the relations of the best chain that has
  such sentences for all of them), or
  with a model, paragraphs the model writes from the same sources; each ends with the
  markers of its cite ids (``[C001]``);
* ``evidence/citations.json`` and ``evidence/sources/C###.txt``: each cited chunk's text,
  located by document path and chunk id, with its SHA-256 (``quote_hash``);
* ``evidence/verify.json``: ``verify.verify_directory``'s checks;
* ``report.md``: the question, the paragraphs with numbered citations, the evidence
  chains and the numbered sources.

``verify_run`` runs the verify stage again on an existing directory; ``deep_research`` is the
engine function behind the CLI and the tool, with or without a run directory.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import pathlib
import re

import jinja2

from . import verify as verification
from .research import ResearchError, ResearchOptions, ask, decompose, question_entities, research
from .fulltext import query_words

DEPTHS = {2: "brief", 3: "medium", 4: "deep"}
TEMPLATES = pathlib.Path(__file__).parent / "templates"
SOURCES_DIR = "evidence/sources"
SENTENCES_PER_PARAGRAPH = 2
_SENTENCE_END = re.compile(r"[.!?]$")

DRAFT_PROMPT = """Answer the question below in at most {n} short paragraphs, using only the numbered sources.
End every paragraph with the ids of the sources it relies on in square brackets, like [C001][C003].
Separate paragraphs with a blank line and write nothing else.

Question: {question}

Sources:
{sources}"""


def now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat()


class Pipeline:
    """``logs/pipeline.jsonl``: one line per stage transition."""

    def __init__(self, run_dir):
        self.run_dir = pathlib.Path(run_dir)
        self.path = self.run_dir / "logs" / "pipeline.jsonl"
        self.run_id = self._logged_run_id() or self.run_dir.resolve().name

    def _logged_run_id(self):
        """The run id of an existing log: the directory may have been moved since."""
        try:
            with self.path.open(encoding="utf8") as fp:
                return json.loads(fp.readline()).get("run_id")
        except (OSError, ValueError, AttributeError):
            return None

    def log(self, stage, status, details):
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = {"timestamp": now(), "run_id": self.run_id, "stage": stage, "status": status, "details": details}
        with self.path.open("a", encoding="utf8") as fp:
            fp.write(json.dumps(line, ensure_ascii=False) + "\n")

    @contextlib.contextmanager
    def stage(self, name):
        """Log ``name`` started, then completed, or failed with the error raised.

        The block may set ``outcome["error"]`` for a stage that finished without success.
        """
        self.log(name, "started", {})
        outcome = {}
        try:
            yield outcome
        except Exception as ex:
            self.log(name, "failed", {"success": False, "error": f"{type(ex).__name__}: {ex}"})
            raise
        if outcome.get("error"):
            self.log(name, "failed", {"success": False, "error": outcome["error"]})
        else:
            self.log(name, "completed", {"success": True})


def write_json(path, data):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf8")


def clarification(conn, q):
    """Seed 002's ``clarify.json`` for ``q``: no questions when it is specific enough."""
    words = query_words(q)
    if question_entities(conn, q) or len(words) >= 2:
        return {"status": "clarified", "questions": [], "answers": [], "failure_reason": None}
    topic = " ".join(words) or q
    return {
        "status": "failed",
        "questions": [
            f"Could you provide more context about '{topic}'? What specifically would you like to learn?",
            "Your topic seems vague. Could you be more specific about what you mean?",
        ],
        "answers": [],
        "failure_reason": "No clarification provided",
    }


def plan(conn, sub_queries, options):
    """Seed 002's ``plan.json``."""
    langs = [
        row[0]
        for row in conn.execute(
            "select json_extract(meta, '$.lang') as lang from docs where lang is not null "
            "group by lang order by count(*) desc limit 1"
        )
    ]
    depth = DEPTHS.get(options.max_hops, "deep")
    return {
        "workers": len(sub_queries),
        "depth": depth,
        "budget": options.k,
        "lang": langs[0] if langs else "en",
        "plan": {
            "queries": [sq.text for sq in sub_queries],
            "sources": ["chunks", "relations"],
            "estimated_sources": len(sub_queries) * options.per_query_k,
            "depth": depth,
        },
    }


class Citations:
    """Cited chunks, numbered ``C001``... in the order they are first cited."""

    def __init__(self):
        self.items = {}  # chunk id -> citation dict with "text"

    def cite(self, chunk):
        """The cite id of ``chunk`` (``{"chunk_id", "path", "title", "content"}``)."""
        if chunk["chunk_id"] not in self.items:
            cid = f"C{len(self.items) + 1:03d}"
            path = str(chunk["path"])
            url = pathlib.Path(path).as_uri() if pathlib.Path(path).is_absolute() else path
            self.items[chunk["chunk_id"]] = {
                "cid": cid,
                "url": url,
                "title": chunk.get("title") or pathlib.Path(path).name,
                "locator": f"{path}#chunk={chunk['chunk_id']}",
                "fetched_at": now(),
                "quote_hash": verification.quote_hash(chunk["content"]),
                "local_path": f"{SOURCES_DIR}/{cid}.txt",
                "text": chunk["content"],
            }
        return self.items[chunk["chunk_id"]]["cid"]

    def write(self, run_dir):
        for item in self.items.values():
            path = run_dir / item["local_path"]
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(item["text"], encoding="utf8")
        write_json(
            run_dir / verification.CITATIONS,
            [{k: v for k, v in item.items() if k != "text"} for item in self.items.values()],
        )


def _readable(sentence):
    """A whole prose sentence: ends like one, has a few words, is mostly letters."""
    letters = sum(c.isalpha() or c.isspace() for c in sentence)
    return (
        _SENTENCE_END.search(sentence) is not None
        and 4 <= len(sentence.split()) <= 60
        and letters >= 0.8 * len(sentence)
    )


def extractive_paragraphs(found, sub_queries, chain_evidence, citations, limit):
    """Paragraphs copied from the top chunks, and one from the best chain's evidence."""
    wanted = set()
    for sq in sub_queries:
        wanted |= verification.content_words(sq.text)
    paragraphs, used = [], set()
    for entry in found:
        if len(paragraphs) >= limit:
            break
        ranked = []
        for position, sentence in enumerate(verification.sentences(entry["content"])):
            overlap = len(verification.content_words(sentence) & wanted)
            if overlap and sentence not in used and _readable(sentence):
                ranked.append((-overlap, position, sentence))
        chosen = sorted(sorted(ranked)[:SENTENCES_PER_PARAGRAPH], key=lambda item: item[1])
        if not chosen:
            continue
        used.update(sentence for _, _, sentence in chosen)
        cid = citations.cite(entry)
        text = " ".join(sentence for _, _, sentence in chosen)
        paragraphs.append({"text": f"{text} [{cid}]", "cite_ids": [cid]})
    if chain_evidence:
        sentences = [s for s, _ in chain_evidence if s not in used]
        if sentences:
            cids = list(dict.fromkeys(citations.cite(chunk) for _, chunk in chain_evidence))
            markers = "".join(f"[{cid}]" for cid in cids)
            paragraphs.append({"text": f"{' '.join(dict.fromkeys(sentences))} {markers}", "cite_ids": cids})
    return paragraphs


def chain_evidence(conn, chain):
    """``[(sentence, chunk)]``: the best evidence sentence of each relation of ``chain``,
    copied from its chunk; none unless each is a whole prose sentence found there."""
    evidence = []
    for relation_id, _, _ in chain.relations:
        row = conn.execute(
            "select e.sentence, c.id, c.content, d.path, d.title from relation_evidence e "
            "join chunks c on c.id = e.chunk_id join docs d on d.id = c.doc_id "
            "where e.relation_id = ? and e.sentence is not null "
            "order by e.confidence desc, e.id limit 1",
            [relation_id],
        ).fetchone()
        if row is None:
            return []
        sentence = " ".join(row[0].split())
        if sentence not in " ".join(row[2].split()) or not _readable(sentence):
            return []
        evidence.append(
            (sentence, {"chunk_id": row[1], "content": row[2], "path": row[3], "title": row[4]})
        )
    return evidence


def generated_paragraphs(model_id, question, found, citations, limit):
    """Paragraphs the llm model ``model_id`` writes from the top chunks."""
    sources = []
    for entry in found:
        cid = citations.cite(entry)
        sources.append(f"[{cid}] {entry['title'] or entry['path']}\n{entry['content'].strip()}")
    prompt = DRAFT_PROMPT.format(n=limit, question=question, sources="\n\n".join(sources))
    text = ask(model_id, prompt, "draft the paragraphs")
    paragraphs = []
    for block in re.split(r"\n\s*\n", text.strip()):
        block = " ".join(block.split())
        if block:
            cite_ids = list(dict.fromkeys(verification.MARKER.findall(block)))
            paragraphs.append({"text": block, "cite_ids": cite_ids})
    return paragraphs[:limit]


def render_report(question, run_id, paragraphs, chains, citations):
    """``report.md``: paragraphs with citations numbered ``[1]``... in order of use."""
    numbers = {}
    for paragraph in paragraphs:
        for cid in paragraph["cite_ids"]:
            numbers.setdefault(cid, len(numbers) + 1)
    by_cid = {item["cid"]: item for item in citations.items.values()}
    findings = [
        verification.MARKER.sub(lambda m: f"[{numbers.get(m.group(1), m.group(1))}]", p["text"])
        for p in paragraphs
    ]
    sources = [dict(by_cid[cid], number=n) for cid, n in numbers.items() if cid in by_cid]
    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES), keep_trailing_newline=True, trim_blocks=True
    )
    return environment.get_template("report.md.j2").render(
        question=question, run_id=run_id, findings=findings, chains=chains, sources=sources
    )


def deep_research(db, q, options=None, model=None, run_dir=None):
    """Seed 000's deep-research JSON for ``q``; with ``run_dir``, the run directory too.

    ``model`` names an llm model that decomposes the question (and, in a run directory,
    drafts the paragraphs); without one both are done by rule.
    """
    options = options or ResearchOptions()
    if run_dir is not None:
        return write_run(db, q, run_dir, options, model)
    return research(db, q, options, model).to_dict(options.with_bodies)


def write_run(db, q, run_dir, options, model=None):
    """Research ``q`` into ``run_dir`` (seed 002); returns seed 000's JSON."""
    conn = getattr(db, "conn", db)
    run_dir = pathlib.Path(run_dir)
    if (run_dir / "logs" / "pipeline.jsonl").exists():
        raise ResearchError(f"{run_dir} already holds a research run: choose a new directory")
    if run_dir.exists() and not run_dir.is_dir():
        raise ResearchError(f"{run_dir} is a file: choose a directory for the run")
    run_dir.mkdir(parents=True, exist_ok=True)
    pipeline = Pipeline(run_dir)
    with pipeline.stage("intake"):
        q = (q or "").strip()
        if not q:
            raise ResearchError("The question is empty: ask something, e.g. 'What does tidepool depend on?'")
    with pipeline.stage("clarify") as outcome:
        clarify = clarification(conn, q)
        write_json(run_dir / "clarify.json", clarify)
        if clarify["status"] == "failed":
            outcome["error"] = f"{clarify['failure_reason']}: researching the question as asked"
    with pipeline.stage("plan"):
        sub_queries = decompose(conn, q, options.max_sub_queries, model)
        write_json(run_dir / "logs" / "plan.json", plan(conn, sub_queries, options))
    with pipeline.stage("search"):
        found = research(conn, q, options, sub_queries=sub_queries)
    citations = Citations()
    with pipeline.stage("draft"):
        if model:
            paragraphs = generated_paragraphs(model, q, found.results[: options.paragraphs], citations, options.paragraphs)
        else:
            # the best chain whose every relation has a sentence to copy
            evidence = next(filter(None, (chain_evidence(conn, c) for c in found.chains)), [])
            paragraphs = extractive_paragraphs(
                found.results, sub_queries, evidence, citations, options.paragraphs
            )
        path = run_dir / verification.PARAGRAPHS
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            "".join(json.dumps(p, ensure_ascii=False) + "\n" for p in paragraphs), encoding="utf8"
        )
    with pipeline.stage("cite"):
        citations.write(run_dir)
    check_and_write(run_dir, pipeline)
    with pipeline.stage("report"):
        report = render_report(q, pipeline.run_id, paragraphs, [c.to_dict() for c in found.chains], citations)
        (run_dir / "report.md").write_text(report, encoding="utf8")
    return found.to_dict(options.with_bodies)


def check_and_write(run_dir, pipeline):
    """The verify stage: check the drafts, write ``evidence/verify.json``."""
    with pipeline.stage("verify") as outcome:
        report = verification.verify_directory(run_dir)
        write_json(pathlib.Path(run_dir) / verification.VERIFY, report.summary)
        if not report.summary["passed"]:
            failing = [p["index"] for p in report.paragraphs if not p["passed"]]
            outcome["error"] = (
                f"verification failed: paragraphs {failing} (lines of {verification.PARAGRAPHS}) "
                "do not pass"
                if failing
                else "verification failed: see evidence/verify.json"
            )
    return report


def verify_run(run_dir):
    """Run the verify stage again on ``run_dir`` (drafts edited since): a ``VerifyReport``."""
    run_dir = pathlib.Path(run_dir)
    if not run_dir.is_dir():
        raise verification.RunDirectoryError(f"{run_dir} is not a directory: give a research run directory")
    verification.read_paragraphs(run_dir)  # a clear error before anything is logged
    return check_and_write(run_dir, Pipeline(run_dir))
