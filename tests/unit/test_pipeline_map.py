"""The pipeline map against the code: who queues each task, and what each handler can
queue, read from the source (so queueing a task the map does not list fails here)."""

from __future__ import annotations

import ast
import inspect
import re
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from nous_memory.pipeline import PIPELINE, describe
from nous_memory.work.tasks import Task

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = [ROOT / "nous_memory", ROOT / "jobs"]


def _queue_queries() -> set[str]:
    """Names of the SQL queries that insert work items."""
    names = set()
    for path in ROOT.joinpath("nous_memory").rglob("queries.sql"):
        for block in re.split(r"^-- name: ", path.read_text(), flags=re.M)[1:]:
            name, _, sql = block.partition("\n")
            if re.search(r"INSERT\s+INTO\s+work_items", sql, re.I):
                names.add(name.strip())
    return names


QUEUE_QUERIES = _queue_queries()


def _queued(node: ast.AST) -> set[Task]:
    """Tasks a piece of code queues itself: a ``Task`` member passed to ``enqueue`` or to
    a call that names a query inserting work items."""
    found: set[Task] = set()
    for call in ast.walk(node):
        if not isinstance(call, ast.Call):
            continue
        args = [*call.args, *(k.value for k in call.keywords)]
        tasks = {Task[a.attr] for a in args if isinstance(a, ast.Attribute)
                 and isinstance(a.value, ast.Name) and a.value.id == "Task"}
        callee = call.func.attr if isinstance(call.func, ast.Attribute) else (
            call.func.id if isinstance(call.func, ast.Name) else "")
        queries = {a.value for a in args if isinstance(a, ast.Constant)}
        if tasks and (callee == "enqueue" or queries & QUEUE_QUERIES):
            found |= tasks
    return found


def _functions(tree: ast.Module) -> Iterator[tuple[str, ast.AST]]:
    """(qualified name, node) of every function and method, innermost owning its code."""
    def visit(node: ast.AST, prefix: str) -> Iterator[tuple[str, ast.AST]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                yield from visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                yield f"{prefix}{child.name}", child
                yield from visit(child, f"{prefix}{child.name}.<locals>.")
            else:
                yield from visit(child, prefix)
    yield from visit(tree, "")


def _own_code(function: ast.AST) -> ast.AST:
    """The function without the bodies of the functions nested in it."""
    copy = ast.parse(ast.unparse(function)).body[0]
    for node in ast.walk(copy):
        body = getattr(node, "body", None)
        if isinstance(body, list):
            node.body = [b for b in body  # type: ignore[attr-defined]
                         if not isinstance(b, ast.FunctionDef | ast.AsyncFunctionDef)]
    return copy


def _producers_in_code() -> dict[str, set[Task]]:
    """Every product function that queues work, by module and qualified name."""
    found: dict[str, set[Task]] = {}
    for root in PRODUCT:
        for path in root.rglob("*.py"):
            module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            module = module.removesuffix(".__init__")
            for name, node in _functions(ast.parse(path.read_text())):
                tasks = _queued(_own_code(node))
                if tasks:
                    found[f"{module}.{_outer(name)}"] = tasks
    return found


def _outer(qualname: str) -> str:
    """A nested function's code counts as its enclosing function's."""
    return qualname.split(".<locals>.")[0]


def _name(function: Callable[..., Any]) -> str:
    return f"{function.__module__}.{function.__qualname__}"


def test_every_function_that_queues_a_task_is_in_the_map() -> None:
    listed: dict[str, set[Task]] = {}
    for task, flow in PIPELINE.items():
        for producer in flow.queued_by:
            listed.setdefault(_name(producer), set()).add(task)
    found = _producers_in_code()
    assert found, "the scan found no enqueue at all: it is broken"
    assert found == listed


# --- what a handler can queue: its code and the code it calls, followed by type ------


def _attribute_types(cls: type) -> dict[str, type]:
    """``self._x`` -> its class, from ``__init__``: an annotated parameter assigned to
    it, or a class constructed into it."""
    init = cls.__dict__.get("__init__")
    if init is None or init.__code__.co_filename == "<string>":
        return {}  # none, or a dataclass's: it assigns its parameters, no services
    module = sys.modules[cls.__module__]
    params = inspect.signature(init).parameters
    types: dict[str, type] = {}
    for node in ast.walk(ast.parse(textwrap.dedent(inspect.getsource(init)))):
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
            continue
        target, value = node.targets[0], node.value
        if not (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
                and target.value.id == "self"):
            continue
        name = None
        if isinstance(value, ast.Name) and value.id in params:
            annotation = params[value.id].annotation
            name = annotation if isinstance(annotation, str) else None
        elif isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
            name = value.func.id
        resolved = getattr(module, name.split(" | ")[0], None) if name else None
        if isinstance(resolved, type):
            types[target.attr] = resolved
    return types


def _callees(function: Callable[..., Any]) -> Iterator[Callable[..., Any]]:
    """The product functions a method or function calls, resolved through ``self``, its
    attributes' classes and its module's names."""
    owner_name = function.__qualname__.split(".")[0]
    module = sys.modules[function.__module__]
    owner = getattr(module, owner_name, None) if "." in function.__qualname__ else None
    attrs = _attribute_types(owner) if isinstance(owner, type) else {}
    tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    for node in ast.walk(tree):
        target: Any = None
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name):
            target = getattr(module, func.id, None)
        elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) \
                and func.value.id == "self" and owner is not None:
            target = getattr(owner, func.attr, None)
        elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Attribute) \
                and isinstance(func.value.value, ast.Name) and func.value.value.id == "self":
            cls = attrs.get(func.value.attr)
            target = getattr(cls, func.attr, None) if cls else None
        if inspect.isfunction(target) and target.__module__.startswith(("nous_memory", "jobs")):
            yield target


def _reachable_queues(handler: Callable[..., Any]) -> set[Task]:
    by_name: dict[str, set[Task]] = {}
    for task, flow in PIPELINE.items():
        for p in flow.queued_by:
            by_name.setdefault(_name(p), set()).add(task)
    seen: set[str] = set()
    queued: set[Task] = set()
    todo = [handler]
    while todo:
        function = todo.pop()
        if _name(function) in seen:
            continue
        seen.add(_name(function))
        queued |= by_name.get(_name(function), set())
        todo.extend(_callees(function))
    return queued


@pytest.mark.parametrize("handler", sorted({f.handler for f in PIPELINE.values()},
                                           key=_name), ids=_name)
def test_each_handler_queues_what_the_map_says_its_tasks_queue(
        handler: Callable[..., Any]) -> None:
    said = {t for flow in PIPELINE.values() if flow.handler is handler
            for t in flow.queues_next}
    assert _reachable_queues(handler) == said


def test_the_call_walk_reaches_a_queue_through_an_attribute() -> None:
    """The walk itself: the close handler reaches ``EpisodeCloser.write`` through
    ``self._closer`` (a broken walk would find nothing and pass the test above for
    handlers that queue nothing)."""
    close = PIPELINE[Task.EPISODE_CLOSE].handler
    assert {_name(f) for f in _callees(close)} >= {
        "nous_memory.episodes.close.EpisodeCloser.write",
        "nous_memory.episodes.close.EpisodeCloser.prepare"}


def test_the_map_is_complete_and_acyclic_per_task() -> None:
    assert set(PIPELINE) == set(Task)
    for task, flow in PIPELINE.items():
        assert flow.does and flow.queued_by, task
        assert task not in flow.queues_next


def test_the_architecture_page_quotes_the_map() -> None:
    """The docs show ``pipeline.describe()`` as it is (wherever the page lives)."""
    pages = [p for p in (ROOT / "docs").rglob("*.md") if describe() in p.read_text()]
    assert pages, "no page under docs/ quotes pipeline.describe(); paste its output"
