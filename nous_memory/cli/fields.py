"""Command-line options for memory fields, generated from the pydantic detail models.

Every field of ``kinds.DETAIL_MODELS[kind]`` and ``kinds.CommonFields`` becomes an option
named after it (``core_patterns`` -> ``--core-patterns``).  List fields are repeatable and,
where the singular is not itself a field name, also get a singular alias (``--tag x
--tag y``).  Values are handed to the store as given (numbers converted), so validation
and its "field: reason" messages stay in one place: ``kinds``.
"""

from __future__ import annotations

import argparse
import json
import types
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from typing import Annotated, Any, Union, get_args, get_origin
from uuid import UUID

from pydantic.fields import FieldInfo

from ..errors import FieldProblem, InvalidInputError
from ..memories.kinds import DETAIL_MODELS, CommonFields, Kind

FIELDS_JSON_HELP = (
    "a JSON object of fields, for anything the options cannot say (null to clear an "
    "optional field, [] to empty a list); options given as well win over it"
)
ALL_KINDS = "all kinds"


@dataclass(frozen=True)
class FieldOption:
    """One model field as a command-line option."""

    name: str
    metavar: str
    convert: Callable[[str], Any]
    is_list: bool
    help: str

    @property
    def dest(self) -> str:
        return f"field__{self.name}"

    def flags(self, taken: frozenset[str]) -> list[str]:
        flags = [f"--{self.name.replace('_', '-')}"]
        singular = self.name[:-1]
        if self.is_list and self.name.endswith("s") and singular not in taken:
            flags.insert(0, f"--{singular.replace('_', '-')}")
        return flags


def _unwrap(annotation: Any) -> tuple[Any, list[Any]]:
    """Strip Optional and Annotated layers; return the bare type and all constraints seen."""
    constraints: list[Any] = []
    while True:
        origin = get_origin(annotation)
        if origin is Annotated:
            annotation, *meta = get_args(annotation)
            for item in meta:
                constraints.extend(item.metadata if isinstance(item, FieldInfo) else [item])
        elif origin in (Union, types.UnionType):
            args = [a for a in get_args(annotation) if a is not type(None)]
            if len(args) != 1:
                return annotation, constraints
            annotation = args[0]
        else:
            return annotation, constraints


def _bound(constraints: Iterable[Any], attr: str) -> Any:
    for item in constraints:
        value = getattr(item, attr, None)
        if value is not None:
            return value
    return None


def _describe(base: Any, constraints: list[Any]) -> tuple[str, Callable[[str], Any], str]:
    """Metavar, converter and a short description for a scalar type."""
    if isinstance(base, type) and issubclass(base, Enum):
        values = [str(member.value) for member in base]
        return "{" + ",".join(values) + "}", str, "one of " + ", ".join(values)
    low, high = _bound(constraints, "ge"), _bound(constraints, "le")
    if base is float:
        range_text = f" from {low:g} to {high:g}" if low is not None and high is not None else ""
        return "NUMBER", float, f"number{range_text}"
    if base is int:
        return "N", int, "whole number >= 0" if low == 0 else "whole number"
    if base is datetime:
        return "TIME", str, "ISO 8601 time, e.g. 2024-05-01T12:00:00Z (UTC if no offset)"
    if base is UUID:
        return "UUID", str, "memory id"
    longest = _bound(constraints, "max_length")
    return "TEXT", str, f"text, up to {longest:,} characters" if longest else "text"


def field_option(name: str, info: FieldInfo, kinds: str, *, creating: bool = True) -> FieldOption:
    """The option for one field; ``creating`` adds whether it is required, or its default."""
    base, constraints = _unwrap(info.annotation)
    is_list = get_origin(base) is list
    if is_list:
        items = _bound(info.metadata, "max_length")
        base, item_constraints = _unwrap(get_args(base)[0])
        metavar, convert, text = _describe(base, item_constraints)
        text = f"{text}; repeat for several (at most {items})"
    else:
        metavar, convert, text = _describe(base, [*constraints, *info.metadata])
    if creating and info.is_required():
        text = f"required; {text}"
    elif creating and info.default not in (None, []):
        default = info.default.value if isinstance(info.default, Enum) else info.default
        text = f"{text} (default {default})"
    if kinds != ALL_KINDS:
        text = f"[{kinds}] {text}"
    return FieldOption(name, metavar, convert, is_list, text)


def _kind_fields(kind: Kind) -> dict[str, FieldInfo]:
    return {n: f for n, f in DETAIL_MODELS[kind].model_fields.items() if n != "kind"}


def _common_fields(kind: Kind | None) -> dict[str, FieldInfo]:
    fields = dict(CommonFields.model_fields)
    if kind is not None and kind is not Kind.EPISODE:
        del fields["summary"]  # computed from the other fields for every other kind
    return fields


def options_for_kind(kind: Kind) -> list[FieldOption]:
    """The options of ``remember KIND``: its detail fields, then the common ones."""
    detail = [field_option(n, f, ALL_KINDS) for n, f in _kind_fields(kind).items()]
    common = [field_option(n, f, ALL_KINDS) for n, f in _common_fields(kind).items()]
    return detail + common


def options_for_update() -> list[FieldOption]:
    """Every field of every kind (the kind is only known once the memory is read).

    A name shared by several kinds becomes one option; its help says which kinds take it
    and, where they differ, what each expects.
    """
    by_name: dict[str, list[tuple[Kind, FieldInfo]]] = {}
    for kind in Kind:
        for name, info in _kind_fields(kind).items():
            by_name.setdefault(name, []).append((kind, info))
    options: list[FieldOption] = []
    for name, uses in by_name.items():
        variants = [field_option(name, info, kind.value, creating=False) for kind, info in uses]
        first = variants[0]
        if all(v.metavar == first.metavar for v in variants):
            kinds = ", ".join(kind.value for kind, _ in uses)
            options.append(field_option(name, uses[0][1], kinds, creating=False))
        else:  # e.g. outcome: a choice for decisions, free text for episodes
            options.append(FieldOption(name, "VALUE", str, first.is_list,
                                       "; ".join(v.help for v in variants)))
    common = _common_fields(None)
    options += [field_option(n, f, Kind.EPISODE.value if n == "summary" else ALL_KINDS,
                             creating=False) for n, f in common.items()]
    return options


def _all_field_names() -> frozenset[str]:
    names = set(CommonFields.model_fields)
    for kind in Kind:
        names.update(_kind_fields(kind))
    return frozenset(names)


def add_field_options(parser: argparse.ArgumentParser, options: list[FieldOption]) -> None:
    group = parser.add_argument_group("fields")
    taken = _all_field_names()
    for option in options:
        group.add_argument(*option.flags(taken), dest=option.dest, metavar=option.metavar,
                           type=option.convert, action="append" if option.is_list else "store",
                           help=option.help)
    group.add_argument("--fields-json", metavar="JSON", help=FIELDS_JSON_HELP)


def collect_fields(args: argparse.Namespace, options: list[FieldOption],
                   reserved: Iterable[str] = ()) -> dict[str, Any]:
    """The fields given on the command line: ``--fields-json`` overlaid with the options.

    ``reserved`` names the store method's own parameters: as a JSON key one of them would
    clash with the keyword argument of the same name, so it is rejected here.
    """
    fields = parse_fields_json(args.fields_json) if args.fields_json is not None else {}
    clashes = sorted(set(reserved) & set(fields))
    if clashes:
        raise InvalidInputError([FieldProblem(name, "not a field here; use the command's argument")
                                 for name in clashes])
    for option in options:
        value = getattr(args, option.dest, None)
        if value is not None:
            fields[option.name] = value
    return fields


def parse_fields_json(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInputError.single("fields_json", f"not valid JSON: {exc}") from None
    if not isinstance(value, Mapping):
        raise InvalidInputError.single("fields_json", "must be a JSON object")
    return dict(value)
