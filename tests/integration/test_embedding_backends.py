"""The two local backends agree, the ONNX export is verified before use, commands that
do not embed never import a model runtime, and repeated queries skip the model."""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from nous_memory import (
    ConfigurationError,
    Embedder,
    MemoryStore,
    OnnxEmbedder,
    SentenceTransformerEmbedder,
)
from nous_memory.embeddings.model_files import ModelFiles
from nous_memory.embeddings.onnx_export import GRAPH, MANIFEST, ensure_export, export_dir

WORDS = ("meeting budget Lisbon sister Ana vegetarian deadline March Tuesday invoice "
         "migration Postgres pgvector coffee marathon doctor appointment 3pm flight TP1234 "
         "refund €120 allergy peanuts birthday grandmother recipe lasagna kubernetes pod "
         "crashloop timeout retry gym Wednesday promotion manager salary 10% raise").split()


def varied_texts(n: int, seed: int = 7) -> list[str]:
    """Short queries, sentences, long paragraphs past the 256-token window, numbers,
    punctuation, accents, CJK, emoji, code and whitespace runs."""
    rng = random.Random(seed)
    extras = ["naïve café façade", "東京で会議", "🙂🚀 done!", "def f(x): return x**2",
              "  spaced\tout\n\nlines  ", "ALL CAPS SHOUTING", "e-mail: a.b@example.org",
              "2024-05-01T12:00:00Z", "x", "?"]
    texts = []
    for i in range(n):
        shape = i % 10 if i % 10 < 5 else (0, 1, 3, 4, 1)[i % 5]  # one text in ten is long
        if shape == 0:
            texts.append(" ".join(rng.choices(WORDS, k=rng.randint(1, 6))) + "?")
        elif shape == 1:
            texts.append(" ".join(rng.choices(WORDS, k=rng.randint(8, 30))) + ".")
        elif shape == 2:
            texts.append(" ".join(rng.choices(WORDS, k=rng.randint(200, 400))))
        elif shape == 3:
            texts.append(f"{rng.choice(extras)} {rng.randint(0, 10**6)} "
                         f"{' '.join(rng.choices(WORDS, k=5))}")
        else:
            texts.append(rng.choice(extras))
    return texts


async def test_onnx_agrees_with_torch_on_1000_varied_texts(embedder: Embedder) -> None:
    """The default backend gives the stored (torch-made) vectors, so an existing
    database needs no re-embedding; both record the same model name."""
    texts = varied_texts(1000)
    torch_model = SentenceTransformerEmbedder()
    onnx_vectors = np.asarray(await embedder.embed(texts))
    torch_vectors = np.asarray(await torch_model.embed(texts))
    cosines = (onnx_vectors * torch_vectors).sum(axis=1)
    assert cosines.min() >= 0.999, (cosines.min(), texts[int(cosines.argmin())][:80])
    assert isinstance(embedder, OnnxEmbedder)
    assert embedder.model_name == torch_model.model_name
    assert embedder.dimension == torch_model.dimension == 384


def test_a_damaged_or_half_written_export_is_never_used(tmp_path: Path) -> None:
    files = ModelFiles.resolve(None)
    graph = ensure_export(files, tmp_path)
    folder = export_dir(files, tmp_path)
    assert graph == folder / GRAPH
    manifest = json.loads((folder / MANIFEST).read_text())
    assert manifest["model"] == files.name and len(manifest["graph_sha256"]) == 64

    with graph.open("r+b") as handle:  # one flipped byte in the middle of the weights
        handle.seek(graph.stat().st_size // 2)
        byte = handle.read(1)
        handle.seek(-1, 1)
        handle.write(bytes([byte[0] ^ 0xFF]))
    assert _sha256(graph) != manifest["graph_sha256"]
    assert ensure_export(files, tmp_path) == graph  # exported again...
    assert _sha256(graph) == manifest["graph_sha256"]  # ...to the same, whole graph

    (folder / MANIFEST).unlink()  # as a process killed before the manifest leaves it
    assert ensure_export(files, tmp_path) == graph
    assert (folder / MANIFEST).is_file()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".export-")]


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_onnx_backend_refuses_models_it_cannot_reproduce(tmp_path: Path) -> None:
    """Another architecture, pooling or a Dense layer would give other vectors under the
    same model name; the torch backend still takes such a folder."""
    bundled = ModelFiles.resolve(None).path
    for name, change in (("mpnet", {"config.json": {"model_type": "mpnet"}}),
                         ("maxpool", {"1_Pooling/config.json": {
                             "word_embedding_dimension": 384,
                             "pooling_mode_max_tokens": True}}),
                         ("dense", {"2_Dense/config.json": {"out_features": 256}})):
        folder = tmp_path / name
        shutil.copytree(bundled, folder, ignore=shutil.ignore_patterns("*.safetensors"))
        for relative, content in change.items():
            (folder / relative).parent.mkdir(exist_ok=True)
            (folder / relative).write_text(json.dumps(content))
        with pytest.raises(ConfigurationError, match="EMBEDDING_BACKEND=torch"):
            OnnxEmbedder(folder, cache_dir=tmp_path / "cache")
        assert SentenceTransformerEmbedder(folder).model_name == str(folder)


PROBE = """\
import sys
from nous_memory.cli import main
code = main(sys.argv[1:])
runtimes = sorted(m for m in ("torch", "onnxruntime", "sentence_transformers", "transformers",
                              "openai", "fastapi") if m in sys.modules)
print("runtimes:", ",".join(runtimes) or "none", file=sys.stderr)
raise SystemExit(code)
"""


@pytest.mark.parametrize("command", [["db", "status"], ["list", "--agent", "a"],
                                     ["get", "--agent", "a",
                                      "00000000-0000-0000-0000-000000000000"],
                                     ["history", "--agent", "a",
                                      "00000000-0000-0000-0000-000000000000"],
                                     ["jobs", "list"]])
def test_commands_that_do_not_embed_import_no_model_runtime(database_url: str,
                                                            command: list[str]) -> None:
    env = {"NOUS_MEMORY_DATABASE_URL": database_url, "PATH": "/usr/bin:/bin",
           "HF_HUB_OFFLINE": "1"}
    result = subprocess.run([sys.executable, "-c", PROBE, *command], env=env,
                            capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode in (0, 3), result.stderr  # 3: the history of an unknown id
    assert "runtimes: none" in result.stderr, result.stderr


async def test_a_repeated_query_skips_the_model(store: MemoryStore,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    await store.remember("cache-agent", "fact", content="Ana is vegetarian")
    calls: list[int] = []
    inner = store.embedder.embed

    async def counting(texts: list[str]) -> list[np.ndarray]:
        calls.append(len(texts))
        return await inner(texts)

    monkeypatch.setattr(store.embedder, "embed", counting)
    first = await store.assemble_context("cache-agent", "what does Ana eat?")
    again = await store.assemble_context("cache-agent", "what does Ana eat?")
    recalled = await store.recall("cache-agent", "what does Ana eat?")
    other_agent = await store.assemble_context("another-agent", "what does Ana eat?")
    assert calls == [1, 1]  # the first call, then the other agent's own (never shared)
    assert first.text == again.text and recalled.items
    assert not other_agent.items


def test_loading_the_torch_model_draws_no_progress_bar() -> None:
    """The model loads from a local folder in a blink: nothing on the caller's stderr."""
    code = ("from nous_memory.embeddings.torch_backend import SentenceTransformerEmbedder\n"
            "print(len(SentenceTransformerEmbedder().encode(['hello'])[0]))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "384"
    assert "Loading weights" not in done.stderr and "%|" not in done.stderr, done.stderr
