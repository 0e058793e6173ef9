"""Declared validation: a schema names each field of a mapping read from a file (a registry entry, a
spec's section) with its type, choices, bounds and whether it is required, and :func:`check` holds
a mapping against it. The first field that fails is one :class:`UsageError` line naming where (the
file, the entry), the field, what was given and what is expected, so a bad file never gets as far
as a TypeError. Checks that relate several fields, or read the disk, stay with the reader.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from rfbench.errors import UsageError

NUMBER = (int, float)
TEXT = (str,)
_TYPE_NAMES = {dict: "a mapping", list: "a list", str: "text", int: "a whole number", float: "a number",
               bool: "true or false"}
_ITEM_NAMES = {dict: "mappings", list: "lists", str: "names", int: "whole numbers", float: "numbers",
               bool: "true/false values"}


def _type_names(types: tuple[type, ...]) -> str:
    names = [_TYPE_NAMES[t] for t in types]
    if "a number" in names and "a whole number" in names:      # (int, float): any number
        names.remove("a whole number")
    return " or ".join(dict.fromkeys(names))


def _number(bound) -> str:
    """A bound as written in a message: 1000000, not 1e+06."""
    return "" if bound is None else str(int(bound)) if float(bound).is_integer() else f"{bound:g}"


def _is(value, types: tuple[type, ...]) -> bool:
    """``value`` is one of ``types``; YAML's true/false is a bool, never a number."""
    if isinstance(value, bool):
        return bool in types
    return isinstance(value, types)


@dataclass(frozen=True)
class Field:
    """One declared field. A field that is absent or null keeps its reader's default unless ``required``."""
    types: tuple[type, ...] = ()        # () : any type
    required: bool = False
    choices: tuple = ()                 # the only values allowed
    low: float | None = None            # a number (or each number of a list) at least this ...
    high: float | None = None           # ... and at most this
    open_low: bool = False              # ``low`` itself refused (a positive number: low=0, open_low=True)
    items: tuple[type, ...] = ()        # a list: the type of each item
    length: int | None = None           # a list: exactly this many items
    nonempty: bool = False              # a list or mapping: at least one item
    fields: Mapping[str, Field] | None = None   # a mapping: its own schema, checked under this field's name
    closed: bool = True                 # with ``fields``: other keys are refused
    pattern: str | None = None          # text: the whole of it matches this regular expression
    expect: str = ""                    # what to write, where the declaration above does not say it well

    def expected(self) -> str:
        """What the field must be, as the refusal says it."""
        if self.expect:
            return self.expect
        if self.choices:
            return "one of " + ", ".join(map(str, self.choices))
        if self.items:
            nouns = " or ".join(dict.fromkeys(_ITEM_NAMES[t] for t in self.items))
            count = f"{self.length} " if self.length is not None else ""
            return f"a {'non-empty ' if self.nonempty else ''}list of {count}{nouns}" + self._bounds(" each")
        text = _type_names(self.types) if self.types else "given"
        if self.nonempty:
            text = "a non-empty " + text.removeprefix("a ")
        return text + self._bounds("")

    def _bounds(self, each: str) -> str:
        low, high = _number(self.low), _number(self.high)
        if self.low is not None and self.high is not None and not self.open_low:
            return f" from {low} to {high}{each}"
        text = f" {'above' if self.open_low else 'at least'} {low}" if self.low is not None else ""
        text += (" and" if text else "") + f" at most {high}" if self.high is not None else ""
        return text + (each if text else "")

    def _in_bounds(self, number) -> bool:
        if self.low is not None and (number < self.low or (self.open_low and number == self.low)):
            return False
        return self.high is None or number <= self.high

    def accepts(self, value) -> bool:
        """Whether ``value`` (not None) is what the field declares (not its nested ``fields``)."""
        if self.types and not _is(value, self.types):
            return False
        if self.choices and not (isinstance(value, (str, int, float)) and value in self.choices):
            return False
        if self.items or self.length is not None:
            if not isinstance(value, list) or (self.length is not None and len(value) != self.length):
                return False
            if self.items and not all(_is(v, self.items) for v in value):
                return False
            numbers = [v for v in value if _is(v, NUMBER)]
            if not all(self._in_bounds(v) for v in numbers):
                return False
        elif _is(value, NUMBER) and not self._in_bounds(value):
            return False
        if self.nonempty and isinstance(value, (list, dict, str)) and not value:
            return False
        return self.pattern is None or (isinstance(value, str) and re.fullmatch(self.pattern, value) is not None)


def shown(value) -> str:
    """A given value as a refusal quotes it: its repr, cut short."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def refuse(where: str, name: str, expected: Field | str, value) -> UsageError:
    """The one line refusing field ``name`` of ``where``: what it must be and what was given (with its
    type where that is what is wrong)."""
    types = (expected.types or ((list,) if expected.items else ())) if isinstance(expected, Field) else ()
    wrong_type = bool(types) and not _is(value, types)
    given = f"not {type(value).__name__} {shown(value)}" if wrong_type else f"got {shown(value)}"
    return UsageError(f"{where}: field '{name}' must be {expected.expected() if isinstance(expected, Field) else expected}"
                      f", {given}")


def described(schema: Mapping[str, Field]) -> str:
    """A section's fields as a refusal names them: 'a mapping of a, b (and optionally c)'."""
    required = [k for k, f in schema.items() if f.required]
    optional = [k for k, f in schema.items() if not f.required]
    if not required:
        return f"a mapping of {', '.join(optional)}"
    return f"a mapping of {', '.join(required)}" + (f" (and optionally {', '.join(optional)})" if optional else "")


def check(mapping, schema: Mapping[str, Field], where: str, *, prefix: str = "", closed: bool = True) -> dict:
    """``mapping`` held against ``schema``: its fields that are given (not null), as a dict, or a
    UsageError for the first one that is wrong (every missing required field at once). ``where``
    names the file (and entry); ``prefix`` the section (``run.``) the field names are shown under;
    ``closed``: a field the schema does not declare is refused (a misspelt field would otherwise be
    ignored without a word)."""
    if not isinstance(mapping, Mapping):
        if prefix:
            raise UsageError(f"{where}: field '{prefix.rstrip('.')}' must be {described(schema)}, "
                             f"not {type(mapping).__name__} {shown(mapping)}")
        raise UsageError(f"{where}: must be a mapping, not {type(mapping).__name__} {shown(mapping)}")
    if closed:
        unknown = sorted(str(k) for k in mapping if k not in schema)
        if unknown:
            raise UsageError(f"{where}: unknown field(s) {', '.join(prefix + k for k in unknown)}; allowed: "
                             f"{', '.join(schema)}")
    for name, declared in schema.items():
        value = mapping.get(name)
        if value is None:
            continue
        if not declared.accepts(value):
            raise refuse(where, prefix + name, declared, value)
        if declared.fields is not None and isinstance(value, Mapping):
            try:
                check(value, declared.fields, where, prefix=f"{prefix}{name}.", closed=declared.closed)
            except UsageError:
                if not declared.expect:
                    raise
                # a small section that says how it is written ({package, extra}): that one line
                raise refuse(where, prefix + name, declared, value) from None
    missing = [f"'{prefix}{k}' ({f.expected()})" for k, f in schema.items() if f.required and mapping.get(k) is None]
    if missing:
        raise UsageError(f"{where}: missing field{'s' if len(missing) > 1 else ''} {', '.join(missing)}")
    return {k: v for k, v in mapping.items() if v is not None}
