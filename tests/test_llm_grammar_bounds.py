"""The embedded model's grammar enforces small integer ranges (llama.cpp ignores min/max).

The judge's variable counts are integers 0-20; llama-cpp-python's JSON-schema grammar drops
`minimum`/`maximum`, so a constrained answer could say 100 and fail validation, each time
costing a repair request. `grammar_schema` spells such a range out as an enum.
"""

from __future__ import annotations

import json

from llama_cpp.llama_grammar import json_schema_to_gbnf
from pydantic import BaseModel, Field

from colabkit.llm.local import grammar_schema, llama_response_format
from colabkit.llm.schema import shared_bounded_schema


class Counts(BaseModel):
    note: str = Field(max_length=30)
    size: int = Field(ge=0, le=20)
    total: int = Field(ge=0)  # unbounded above: left to the generic integer rule


def test_a_bounded_integer_range_becomes_an_enum_in_the_grammar():
    schema = shared_bounded_schema(Counts)
    mapped = llama_response_format({"type": "json_schema", "json_schema": {"name": "Counts", "schema": schema}})
    assert mapped is not None
    size = mapped["schema"]["properties"]["size"]
    assert size["enum"] == list(range(21)) and "minimum" not in size
    assert mapped["schema"]["properties"]["total"] == schema["properties"]["total"]
    assert schema["properties"]["size"]["maximum"] == 20  # the shared schema is not changed
    grammar = json_schema_to_gbnf(json.dumps(mapped["schema"]))
    size_rule = next(line for line in grammar.splitlines() if line.startswith("size ::="))
    assert '"20"' in size_rule and '"21"' not in size_rule
    assert grammar_schema({"type": "integer", "minimum": 0, "maximum": 10_000}) == \
        {"type": "integer", "minimum": 0, "maximum": 10_000}  # too wide to spell out
