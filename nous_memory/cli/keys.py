"""``nous-memory keys``: API keys kept in the database (create, list, revoke, rotate).

Run on the database itself (an operator's shell), like ``db`` and ``jobs``: the secret
of a new or rotated key is printed once and never stored.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from ..access import ROLES, ApiKeyInfo
from .output import Output, stamp

if TYPE_CHECKING:
    from ..store import MemoryStore


def add_key_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser],
                     json_flag: argparse.ArgumentParser) -> None:
    keys = commands.add_parser("keys", help="API keys kept in the database")
    actions = keys.add_subparsers(dest="keys_command", required=True, metavar="ACTION")
    create = actions.add_parser("create", parents=[json_flag], help="create a key",
                                description="Create a key; its secret is printed this once.")
    create.add_argument("name", metavar="NAME")
    create.add_argument("--role", required=True, choices=ROLES)
    create.add_argument("--agent", dest="agents", action="append", metavar="AGENT",
                        help="an agent it may act for (repeatable; default: every agent)")
    create.set_defaults(handler=_create)
    listing = actions.add_parser("list", parents=[json_flag], help="list keys")
    listing.add_argument("--all", action="store_true", help="also revoked keys")
    listing.set_defaults(handler=_list)
    for name, handler, text in (("revoke", _revoke, "revoke a key (every replica refuses "
                                 "it within a second)"),
                                ("rotate", _rotate, "a new secret for a key; the old one "
                                 "stops working")):
        action = actions.add_parser(name, parents=[json_flag], help=text)
        action.add_argument("name", metavar="NAME")
        action.set_defaults(handler=handler)


def _json(info: ApiKeyInfo) -> dict[str, Any]:
    return info.model_dump(mode="json")


def key_line(info: ApiKeyInfo) -> str:
    agents = ",".join(info.agents) if info.agents else "every agent"
    revoked = f"  revoked {stamp(info.revoked_at)}" if info.revoked_at else ""
    return f"{info.name:<24} {info.role:<10} {info.prefix}…  {agents}{revoked}"


def _with_secret(info: ApiKeyInfo, secret: str) -> Output:
    return Output({"key": _json(info), "secret": secret},
                  f"{key_line(info)}\nsecret (shown once, store it now): {secret}")


async def _create(store: MemoryStore, args: argparse.Namespace) -> Output:
    info, secret = await store.create_key(args.name, role=args.role, agents=args.agents,
                                          actor="cli")
    return _with_secret(info, secret)


async def _list(store: MemoryStore, args: argparse.Namespace) -> Output:
    keys = await store.list_keys(include_revoked=args.all)
    return Output([_json(k) for k in keys], "\n".join(map(key_line, keys)) or "no keys")


async def _revoke(store: MemoryStore, args: argparse.Namespace) -> Output:
    info = await store.revoke_key(args.name, actor="cli")
    return Output(_json(info), key_line(info))


async def _rotate(store: MemoryStore, args: argparse.Namespace) -> Output:
    info, secret = await store.rotate_key(args.name, actor="cli")
    return _with_secret(info, secret)
