"""Rule-based summaries of tool results, by kind: file read, shell command,
search/grep, file write/edit, and a default.

The kind comes from the tool's name (the result's ``name``, else the call's function
name) and, failing that, from the call's arguments (``command`` -> shell, ``pattern``
-> search, ``path`` with ``content`` -> write, ``path`` alone -> read).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any

from .pairs import ConvMessage, ToolCall

LINE_CHARS = 160
_WORDS = re.compile(r"[a-z]+")
_KINDS = (  # checked in this order: "str_replace_editor" is an edit, not a read
    ("search", {"grep", "search", "find", "rg", "ripgrep", "glob", "lookup", "query"}),
    ("write", {"write", "edit", "create", "patch", "replace", "apply", "save", "insert",
               "update", "append", "delete", "remove", "mv", "rename"}),
    ("read", {"read", "cat", "view", "open", "load", "show", "head", "tail", "file"}),
    ("shell", {"bash", "shell", "exec", "execute", "run", "terminal", "command", "sh",
               "cmd", "python", "subprocess"}),
)
_PATH_KEYS = ("path", "file_path", "filepath", "filename", "file", "target_file")
_EXPORTS = re.compile(
    r"^\s*(?:export\s+(?:default\s+)?(?:async\s+)?(?:function|class|const|let|var|interface|"
    r"type)\s+|(?:async\s+)?def\s+|class\s+|(?:pub\s+)?fn\s+|func\s+|interface\s+)"
    r"([A-Za-z_][A-Za-z0-9_]*)", re.M)
_ERROR = re.compile(r"error|exception|traceback|failed|fatal|denied|not found|panic", re.I)
# "0 errors, 0 warnings" reports success: a count of zero is not an error line
_NO_ERROR = re.compile(r"\b(?:0|no) (?:errors?|failures?|failed)\b", re.I)
_EXIT = re.compile(r"\b(?:exit(?:ed)?(?: with)?(?: code| status)?|return code|rc)\s*[:=]?\s*"
                   r"(-?\d+)", re.I)
_MATCH = re.compile(r"^([^\s:][^:\n]*?):(\d+)[:-]", re.M)
_PATHLIKE = re.compile(r"(?:[\w.-]+/)*[\w.-]+\.[A-Za-z0-9]{1,8}\b")


def _short(text: str, limit: int = LINE_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


def tool_kind(name: str, arguments: Mapping[str, Any]) -> str:
    words = set(_WORDS.findall(re.sub(r"([a-z])([A-Z])", r"\1 \2", name).lower()))
    for kind, names in _KINDS:
        if words & names:
            return kind
    if "command" in arguments or "cmd" in arguments:
        return "shell"
    if "pattern" in arguments or "query" in arguments:
        return "search"
    if any(k in arguments for k in _PATH_KEYS):
        return "write" if ("content" in arguments or "new_str" in arguments) else "read"
    return "default"


def _path(arguments: Mapping[str, Any], output: str) -> str:
    for key in _PATH_KEYS:
        if isinstance(arguments.get(key), str) and arguments[key]:
            return str(arguments[key])
    found = _PATHLIKE.search(output[:500])
    return found.group(0) if found else "(unknown path)"


def summarize_tool(message: ConvMessage, call: ToolCall | None) -> tuple[str, str]:
    """(kind, one-line summary) of a tool result."""
    name = message.name or (call.name if call else "") or "tool"
    arguments = call.arguments if call else {}
    output = message.content
    kind = tool_kind(name, arguments)
    lines = [line for line in output.splitlines() if line.strip()]
    if kind == "read":
        path = _path(arguments, output)
        suffix = PurePosixPath(path).suffix.lstrip(".") or "text"
        names = list(dict.fromkeys(_EXPORTS.findall(output)))
        text = f"read {path}: {len(output.splitlines())} lines, {suffix}"
        if names:
            text += f"; defines {', '.join(names[:8])}" + (" ..." if len(names) > 8 else "")
    elif kind == "shell":
        command = arguments.get("command") or arguments.get("cmd") or name
        code = message.metadata.get("exit_code")
        if code is None:
            found = _EXIT.search(output)
            code = found.group(1) if found else "?"
        text = f"ran `{_short(str(command), 80)}`: exit {code}, {len(lines)} output lines"
        error = next((line for line in lines
                      if _ERROR.search(_NO_ERROR.sub("", line))), None)
        if error:
            text += f"; first error: {_short(error, 120)}"
    elif kind == "search":
        pattern = arguments.get("pattern") or arguments.get("query") or "?"
        hits = Counter(m.group(1) for m in _MATCH.finditer(output))
        matches = sum(hits.values()) or len(lines)
        files = len(hits) or len({line.split(":", 1)[0] for line in lines if ":" in line})
        text = f"searched {_short(str(pattern), 60)!r}: {matches} matches in {files} files"
        if hits:
            text += "; top: " + ", ".join(f"{f} ({n})" for f, n in hits.most_common(3))
    elif kind == "write":
        path = _path(arguments, output)
        added = sum(1 for line in output.splitlines()
                    if line.startswith("+") and not line.startswith("+++"))
        removed = sum(1 for line in output.splitlines()
                      if line.startswith("-") and not line.startswith("---"))
        if added or removed:
            what = f"+{added}/-{removed} lines"
        elif isinstance(arguments.get("content"), str):
            what = f"wrote {len(str(arguments['content']).splitlines())} lines"
        elif isinstance(arguments.get("new_str"), str):
            what = f"replaced text with {_short(str(arguments['new_str']), 60)!r}"
        else:
            what = _short(lines[0], 80) if lines else "no output"
        text = f"changed {path}: {what}"
    else:
        first = _short(lines[0], 120) if lines else "(no output)"
        text = f"{name}: {first} ({len(lines)} lines, {len(output)} chars)"
    return kind, _short(f"[tool {name}] {text}", 2 * LINE_CHARS)
