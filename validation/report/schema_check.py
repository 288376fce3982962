"""A compiled yes/no check of a JSON document against a JSON Schema, for the keywords the node
results schema uses (validation/report/node_schema.json), at a small fraction of jsonschema's cost.

jsonschema walks the schema for every value it checks (about 5 ms per node document of 130
measurements: 50 s for 10,000 nodes). This module walks the schema once and builds plain Python
predicates; checking a document then costs about as much as reading its values once. It answers
only "valid or not": reading code asks jsonschema for the message when the answer is no, so every
error still names the field exactly as before, and jsonschema stays the reference.

It understands these keywords with the meaning of JSON Schema draft 2020-12 as jsonschema 4
implements it (types as Python decodes JSON: "number" is int or float but not bool, "integer" is
an int or a float with no fractional part, "array" is a list, "object" a dict; const and enum
compare as jsonschema's `equal` does, so 1 equals 1.0 and True does not equal 1):

    type, const, enum, required, properties, items (one schema for every item), minLength,
    $ref (to "#/$defs/NAME" of the same schema)

and ignores the annotations $schema, $id, $comment, $defs, title, description. Any other keyword
is refused when the check is built (UnsupportedSchemaError), so a schema that grows a keyword this
module does not know fails loudly in every test that loads a document, instead of being checked
less strictly than jsonschema would.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Mapping
from itertools import repeat
from typing import Any

from validation.errors import RocmFleetError

Check = Callable[[Any], bool]

ANNOTATIONS = frozenset({"$schema", "$id", "$comment", "$defs", "title", "description"})
_PYTHON_TYPES: dict[str, tuple[type, ...]] = {
    "null": (type(None),), "boolean": (bool,), "object": (dict,), "array": (list,), "string": (str,),
    "number": (int, float), "integer": (int,),
}


class UnsupportedSchemaError(RocmFleetError):
    """The schema uses a keyword that the compiled check does not implement."""


def compile_schema(schema: Mapping[str, Any]) -> Check:
    """A predicate: document -> True when `schema` accepts it (see the module docstring)."""
    return _Compiler(schema).compile(schema, "#")


class _Compiler:
    def __init__(self, root: Mapping[str, Any]) -> None:
        self.root = root
        self.refs: dict[str, Check] = {}

    def compile(self, schema: Any, where: str) -> Check:
        return _as_check(self.parts(schema, where))

    def parts(self, schema: Any, where: str) -> _Parts:
        """A schema as (admitted classes or None, minLength, the rest as one check or None)."""
        if schema is True or schema == {}:
            return None, 0, None
        if not isinstance(schema, Mapping):
            raise UnsupportedSchemaError(f"{where}: a schema here is {schema!r}; the compiled check needs an object")
        unknown = set(schema) - ANNOTATIONS - _KEYWORDS
        if unknown:
            raise UnsupportedSchemaError(
                f"{where}: keyword(s) {', '.join(sorted(unknown))} are not implemented by "
                "validation/report/schema_check.py; implement them there (with a test against jsonschema) "
                "before the schema uses them")
        classes: Any = None
        rest: list[Callable[[Any], bool]] = []
        if "type" in schema:
            classes, whole_float = _classes(schema["type"])
            if whole_float:                 # "integer" without "number": a float only when it is whole
                classes = classes | {float}
                rest.append(_whole_if_float)
        if "$ref" in schema:
            rest.append(self._ref(schema["$ref"], where))
        if "const" in schema:
            rest.append(_equal_to((_scalar(schema["const"], where),)))
        if "enum" in schema:
            rest.append(_equal_to(tuple(_scalar(v, where) for v in schema["enum"])))
        if "items" in schema:
            rest.append(self._items(schema["items"], f"{where}/items"))
        if "required" in schema or "properties" in schema:
            properties = {key: self.parts(sub, f"{where}/properties/{key}")
                          for key, sub in (schema.get("properties") or {}).items()}
            only_objects = classes == frozenset({dict})
            rest.append(_object(tuple(schema.get("required") or ()), properties, only_objects=only_objects))
            if only_objects:        # the object check refuses anything else itself: one call less per value
                classes = None
        return classes, int(schema.get("minLength", 0)), _all(rest)

    def _items(self, schema: Any, where: str) -> Check:
        """Every item of an array. An array of objects (a results document's measurements: most of
        its values) is checked column by column, key by key over all items at once."""
        target = self._resolve(schema)
        if (isinstance(target, Mapping) and set(target) - ANNOTATIONS <= {"type", "required", "properties"}
                and target.get("type") == "object"):
            properties = {key: self.parts(sub, f"{where}/properties/{key}")
                          for key, sub in (target.get("properties") or {}).items()}
            return _objects(tuple(target.get("required") or ()), properties)
        item = self.compile(schema, where)
        return lambda value: value.__class__ is not list or all(map(item, value))

    def _resolve(self, schema: Any) -> Any:
        if isinstance(schema, Mapping) and set(schema) - ANNOTATIONS == {"$ref"}:
            ref = schema["$ref"]
            prefix = "#/$defs/"
            if ref.startswith(prefix):
                return (self.root.get("$defs") or {}).get(ref[len(prefix):], schema)
        return schema

    def _ref(self, ref: str, where: str) -> Check:
        prefix = "#/$defs/"
        if not ref.startswith(prefix) or ref[len(prefix):] not in (self.root.get("$defs") or {}):
            raise UnsupportedSchemaError(f"{where}: $ref {ref!r} is not one of this schema's own $defs")
        if ref not in self.refs:
            self.refs[ref] = _always      # a placeholder while the definition compiles (no recursion here)
            self.refs[ref] = self.compile(self.root["$defs"][ref[len(prefix):]], ref)
        return self.refs[ref]


_KEYWORDS = frozenset({"$ref", "type", "const", "enum", "minLength", "items", "required", "properties"})
_Parts = tuple[frozenset[type] | None, int, Callable[[Any], bool] | None]


def _always(_: Any) -> bool:
    return True


def _all(checks: list[Check]) -> Check | None:
    if not checks:
        return None
    if len(checks) == 1:
        return checks[0]
    return lambda value: all(c(value) for c in checks)


def _as_check(parts: _Parts) -> Check:
    classes, least, rest = parts
    if classes is None and not least:
        return rest or _always

    def check(value: Any) -> bool:
        return ((classes is None or value.__class__ in classes)
                and (not least or value.__class__ is not str or len(value) >= least)
                and (rest is None or rest(value)))
    return check


def _classes(names: Any) -> tuple[frozenset[type], bool]:
    """The Python classes a JSON type (or list of types) admits, and whether a whole float counts as integer."""
    names = [names] if isinstance(names, str) else list(names)
    unknown = [n for n in names if n not in _PYTHON_TYPES]
    if unknown:
        raise UnsupportedSchemaError(f"unknown JSON type(s) {unknown}")
    classes = frozenset(c for n in names for c in _PYTHON_TYPES[n])
    return classes, "integer" in names and float not in classes


def _whole_if_float(value: Any) -> bool:
    return value.__class__ is not float or value.is_integer()


def _scalar(value: Any, where: str) -> Any:
    if isinstance(value, (list, dict)):
        raise UnsupportedSchemaError(f"{where}: const/enum of an array or object is not implemented")
    return value


def _equal_to(allowed: tuple[Any, ...]) -> Check:
    """jsonschema's `equal` for scalars: strings by ==, booleans only to booleans, numbers by value."""
    def check(value: Any) -> bool:
        if value.__class__ in (list, dict):
            return False
        for want in allowed:
            if value is want:
                return True
            if isinstance(value, str) or isinstance(want, str) or value.__class__ is bool or want.__class__ is bool:
                continue            # equal strings are caught below; a boolean equals only itself (above)
            if value == want:
                return True
        return any(isinstance(value, str) and value == want for want in allowed)
    return check


def _object(required: tuple[str, ...], properties: dict[str, _Parts], *, only_objects: bool) -> Check:
    """required and properties of an object; any other value passes (its type is checked apart)
    unless `only_objects`. The properties' classes and minLength are checked inline, without a
    call per value."""
    parts = {key: p for key, p in properties.items() if p != (None, 0, None)}

    def check(value: Any) -> bool:
        if value.__class__ is not dict:
            return not only_objects
        for key in required:
            if key not in value:
                return False
        for key, item in value.items():
            part = parts.get(key)
            if part is None:
                continue
            classes, least, rest = part
            if ((classes is not None and item.__class__ not in classes)
                    or (least and item.__class__ is str and len(item) < least)
                    or (rest is not None and not rest(item))):
                return False
        return True
    return check


class _Missing:
    """Stands for a key an object does not have, when a key is read from every object at once."""


_MISSING = _Missing()


def _objects(required: tuple[str, ...], properties: dict[str, _Parts]) -> Check:
    """`items` of an array whose items must be objects with `required` and `properties`, checked a
    key at a time over every item (map over the list, no Python-level loop per item and key)."""
    parts = {key: p for key, p in properties.items() if p != (None, 0, None)}

    def check(value: Any) -> bool:
        if value.__class__ is not list or not value:
            return True
        if set(map(type, value)) != {dict}:
            return False
        for key in required:
            if not all(map(operator.contains, value, repeat(key))):
                return False
        for key in set().union(*value).intersection(parts):
            classes, least, rest = parts[key]
            column: Iterable[Any]
            if key in required:
                column = list(map(operator.getitem, value, repeat(key)))
            else:
                column = map(dict.get, value, repeat(key), repeat(_MISSING))
                if least or rest is not None:
                    column = [x for x in column if x is not _MISSING]
            found = set(map(type, column))
            found.discard(_Missing)
            if classes is not None and not found <= classes:
                return False
            if least and str in found and min(map(len, column) if found == {str} else
                                               (len(x) for x in column if x.__class__ is str)) < least:
                return False
            if rest is not None and not all(map(rest, column)):
                return False
        return True
    return check
