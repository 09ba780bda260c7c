"""Optional extraction with any model configured in ``llm``, using structured output.

Off by default. Set the ``llm_model`` key of the ``extract`` setting (``llm graphrag
extract --llm-model MODEL``) and each chunk is sent once to that model with a JSON schema;
the entities it names become mentions and the relations it states become relations.
"""

from __future__ import annotations

import json

from .extraction import Mention
from .relations import REL_PHRASES, RelationCandidate

ENTITY_TYPES = ["concept", "term", "code", "name", "PERSON", "ORG", "GPE", "PRODUCT", "DATE", "standard", "version"]

SCHEMA = {
    "type": "object",
    "properties": {
        "entities": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "exactly as written in the text"},
                    "type": {"type": "string", "enum": ENTITY_TYPES},
                },
                "required": ["name", "type"],
            },
        },
        "relations": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "source": {"type": "string"},
                    "relation": {"type": "string", "enum": sorted(REL_PHRASES)},
                    "target": {"type": "string"},
                },
                "required": ["source", "relation", "target"],
            },
        },
    },
    "required": ["entities", "relations"],
}

PROMPT = (
    "Extract the entities and the relations between them that this text states. "
    "Name each entity exactly as it is written in the text. Use only these relations: {rels}."
    "\n\nText:\n{text}"
)


class LLMExtractionError(Exception):
    """The configured model did not return JSON matching the extraction schema."""


def _response(chunk, context):
    model_id = context.settings.llm_model
    if not model_id:
        return None
    cache = context.cache.setdefault("llm", {})
    if chunk.id not in cache:
        import llm

        model = llm.get_model(model_id)
        prompt = PROMPT.format(rels=", ".join(sorted(REL_PHRASES)), text=chunk.text)
        text = model.prompt(prompt, schema=SCHEMA).text()
        try:
            data = json.loads(text)
        except ValueError as ex:
            raise LLMExtractionError(f"Model {model_id} returned text that is not JSON: {text[:200]!r}") from ex
        if not isinstance(data, dict):
            raise LLMExtractionError(f"Model {model_id} returned {type(data).__name__}, not an object")
        cache.clear()
        cache[chunk.id] = data
    return cache[chunk.id]


def llm_mentions(chunk, context):
    """Mentions for the entities the model names, at their first place in the chunk."""
    data = _response(chunk, context)
    if not data:
        return []
    mentions = []
    for item in data.get("entities") or ():
        name = str(item.get("name") or "").strip()
        typ = item.get("type") if item.get("type") in ENTITY_TYPES else "term"
        start = chunk.text.find(name) if name else -1
        if start < 0:
            continue
        mentions.append(Mention(name, typ, start, start + len(name), 0.9, {"llm": context.settings.llm_model}, extractor="llm"))
    return mentions


def llm_relations(chunk, mentions, context):
    """Relations the model states between entities found in the chunk."""
    data = _response(chunk, context)
    if not data:
        return []
    by_name = {}
    for m in mentions:
        by_name.setdefault(m.name.lower(), m)
        by_name.setdefault(m.surface.lower(), m)
    found = []
    for item in data.get("relations") or ():
        src = by_name.get(str(item.get("source") or "").strip().lower())
        dst = by_name.get(str(item.get("target") or "").strip().lower())
        rel = item.get("relation")
        if src is None or dst is None or src is dst or rel not in REL_PHRASES:
            continue
        found.append(RelationCandidate(src, dst, rel, 0.9, 1.0, src.snippet, "llm"))
    return found
