"""The default mention and relation extractors, registered like any third-party plugin."""

from .. import extraction, relations
from ..hookspecs import hookimpl


@hookimpl
def register_mention_extractors(register):
    register("markup", extraction.markup_mentions)
    register("patterns", extraction.pattern_mentions)
    register("identifiers", extraction.identifier_mentions)
    register("names", extraction.name_mentions)
    register("concepts", extraction.concept_mentions)
    register("steps", extraction.step_mentions)
    register("gazetteer", extraction.gazetteer_mentions)
    register("spacy", extraction.spacy_mentions)
    from .. import llm_extractor

    register("llm", llm_extractor.llm_mentions)


@hookimpl
def register_relation_extractors(register):
    register("patterns", relations.pattern_relations)
    register("structure", relations.structural_relations)
    register("cooccurrence", relations.cooccurrence_relations)
    register("stated", relations.stated_relations)
    from .. import llm_extractor

    register("llm", llm_extractor.llm_relations)
