"""Argument values a JSON Schema accepts but the engine cannot use.

JSON Schema counts ``5.0`` as an integer: such whole floats become ints. It sets no bound
on integers: one beyond SQLite's 64 bits (an ``entity_id`` of 10**23) is refused, as is a
string holding a NUL byte (a path the operating system cannot open, text SQLite cuts).
``documented()`` writes these rules into a schema, for documents that describe the tools.
"""

SQLITE_MIN, SQLITE_MAX = -(2**63), 2**63 - 1


def _is_integer_type(spec):
    kind = (spec or {}).get("type")
    kinds = kind if isinstance(kind, list) else [kind]
    return "integer" in kinds and "number" not in kinds


def _checked(value, spec, field):
    """``value`` with whole floats made ints where ``spec`` wants an integer; raises
    ``ValueError((field, message))`` for a value the engine cannot take."""
    if isinstance(value, float) and value.is_integer() and _is_integer_type(spec):
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool):
        if not SQLITE_MIN <= value <= SQLITE_MAX:
            raise ValueError(
                (field, f"{value} is out of range: integers must lie between {SQLITE_MIN} and {SQLITE_MAX}")
            )
    elif isinstance(value, str):
        if "\x00" in value:
            raise ValueError((field, "contains a NUL byte (\\x00): remove it"))
    elif isinstance(value, list):
        items = (spec or {}).get("items") or {}
        value = [_checked(item, items, f"{field}.{i}") for i, item in enumerate(value)]
    elif isinstance(value, dict):
        properties = (spec or {}).get("properties") or {}
        value = {k: _checked(v, properties.get(k), f"{field}.{k}") for k, v in value.items()}
    return value


def check_values(schema, arguments):
    """``arguments`` (valid for ``schema``) made usable; raises ``ValueError((field,
    message))`` naming the first field the engine cannot take."""
    properties = schema.get("properties") or {}
    return {key: _checked(value, properties.get(key), key) for key, value in arguments.items()}


# The rules above as JSON Schema, for documents that describe the tools (OpenAPI): a
# string without a NUL byte, an integer within SQLite's range.
NO_NUL = "^[^\\u0000]*$"


def documented(schema):
    """``schema`` with the rules ``check_values`` enforces written into it: every string
    gets the ``NO_NUL`` pattern and every integer SQLite's bounds (tighter bounds kept)."""
    if not isinstance(schema, dict):
        return schema
    out = {}
    for key, value in schema.items():
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: documented(sub) for name, sub in value.items()}
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            out[key] = [documented(sub) for sub in value]
        elif key in _SCHEMAS:
            out[key] = documented(value)
        else:
            out[key] = value
    kind = schema.get("type")
    kinds = kind if isinstance(kind, list) else [kind]
    if "string" in kinds and not {"enum", "const"} & set(schema):
        if "pattern" in schema:
            out["allOf"] = out.get("allOf", []) + [{"pattern": NO_NUL}]
        else:
            out["pattern"] = NO_NUL
    if _is_integer_type(schema):
        out["minimum"] = max(schema.get("minimum", SQLITE_MIN), SQLITE_MIN)
        out["maximum"] = min(schema.get("maximum", SQLITE_MAX), SQLITE_MAX)
    return out


_SCHEMA_MAPS = ("properties", "patternProperties", "$defs")
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SCHEMAS = ("items", "additionalProperties", "not", "contains")
