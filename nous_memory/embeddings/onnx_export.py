"""Export a sentence-transformers BERT model to ONNX, once, into a cache folder.

The export runs on this machine from the model folder's own weights (nothing is
downloaded) the first time an ONNX embedder needs it: torch traces the transformer,
ONNX Runtime applies its portable graph fusions (attention, GELU, layer norm) and saves
the result.  A finished export is a folder holding ``model.onnx`` and a
``manifest.json`` with the graph's SHA-256 and the source weights it came from; the
folder is built under a temporary name and renamed into place, so a process killed
mid-export leaves nothing that looks usable, and a graph whose checksum does not match
its manifest is exported again.  Delete the cache folder at any time; it is rebuilt.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import re
import shutil
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import ConfigurationError
from .model_files import ModelFiles

log = logging.getLogger(__name__)

EXPORT_FORMAT = 1  # bump when the exported graph changes: old exports are then redone
GRAPH = "model.onnx"
MANIFEST = "manifest.json"
INPUTS = ("input_ids", "attention_mask", "token_type_ids")
OPSET = 17


def export_dir(files: ModelFiles, cache_dir: Path) -> Path:
    """Where the export of ``files`` lives: one folder per model folder and format."""
    weights = _weights(files.path)
    stamp = f"{files.path.resolve()}|{weights.stat().st_size}|{EXPORT_FORMAT}"
    digest = hashlib.sha256(stamp.encode()).hexdigest()[:12]
    slug = re.sub(r"[^A-Za-z0-9]+", "-", files.name).strip("-").lower()[-60:]
    return cache_dir / f"{slug}-{digest}"


def ensure_export(files: ModelFiles, cache_dir: Path) -> Path:
    """The verified ``model.onnx`` of ``files``, exporting it first if need be."""
    target = export_dir(files, cache_dir)
    graph = verified_graph(target, files)
    if graph is not None:
        return graph
    cache_dir.mkdir(parents=True, exist_ok=True)
    with _export_lock(cache_dir):
        graph = verified_graph(target, files)  # another process may have finished it
        if graph is not None:
            return graph
        log.warning("exporting %s to ONNX in %s (once; takes a few seconds)", files.name, target)
        _export(files, target)
    graph = verified_graph(target, files)
    if graph is None:
        raise ConfigurationError(f"the ONNX export in {target} does not verify")
    return graph


def verified_graph(folder: Path, files: ModelFiles) -> Path | None:
    """``folder/model.onnx`` if its manifest matches the graph and the source weights."""
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    graph = folder / GRAPH
    stat = _weights(files.path).stat()
    # weights replaced in place (a fine-tune of the same size) change their mtime
    expected = {"format": EXPORT_FORMAT, "weights_bytes": stat.st_size,
                "weights_mtime_ns": stat.st_mtime_ns}
    if any(manifest.get(key) != value for key, value in expected.items()):
        return None  # made from other weights, or by another format: exported again
    if not graph.is_file() or _sha256(graph) != manifest.get("graph_sha256"):
        log.warning("the ONNX export in %s is damaged; exporting again", folder)
        return None
    return graph


def _weights(path: Path) -> Path:
    for name in ("model.safetensors", "pytorch_model.bin"):
        if (path / name).is_file():
            return path / name
    raise ConfigurationError(f"no model.safetensors or pytorch_model.bin in {path}")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@contextlib.contextmanager
def _export_lock(cache_dir: Path) -> Iterator[None]:
    """One exporter per cache folder across processes (others wait, then reuse it)."""
    with (cache_dir / ".export.lock").open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _export(files: ModelFiles, target: Path) -> None:
    work = Path(tempfile.mkdtemp(prefix=".export-", dir=target.parent))
    try:
        traced = work / "traced.onnx"
        _trace(files, traced)
        _fuse(traced, work / GRAPH)
        traced.unlink()
        weights = _weights(files.path)
        manifest = {"format": EXPORT_FORMAT, "model": files.name,
                    "source": str(files.path.resolve()), "weights_bytes": weights.stat().st_size,
                    "weights_mtime_ns": weights.stat().st_mtime_ns,
                    "weights_sha256": _sha256(weights), "graph_sha256": _sha256(work / GRAPH),
                    "opset": OPSET}
        (work / MANIFEST).write_text(json.dumps(manifest, indent=2))
        if target.exists():
            shutil.rmtree(target)  # a damaged or outdated export
        os.replace(work, target)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _trace(files: ModelFiles, out: Path) -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import torch
    from transformers import AutoModel

    base = AutoModel.from_pretrained(str(files.path), local_files_only=True).eval()

    class Hidden(torch.nn.Module):
        """The transformer's last hidden state; pooling happens outside the graph."""

        def __init__(self, model: Any) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.model(input_ids=input_ids, attention_mask=attention_mask,
                              token_type_ids=token_type_ids).last_hidden_state

    sample = torch.ones((2, 8), dtype=torch.int64)
    axes = {name: {0: "batch", 1: "tokens"} for name in (*INPUTS, "last_hidden_state")}
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tracer notes about the exporter's own internals
        torch.onnx.export(Hidden(base), (sample, sample, torch.zeros_like(sample)), str(out),
                          input_names=list(INPUTS), output_names=["last_hidden_state"],
                          dynamic_axes=axes, opset_version=OPSET, dynamo=False)


def _fuse(traced: Path, out: Path) -> None:
    """ONNX Runtime's extended (hardware-independent) fusions, saved so that a session
    starts from the fused graph instead of fusing it at every start."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    options.optimized_model_filepath = str(out)
    ort.InferenceSession(str(traced), options, providers=["CPUExecutionProvider"])
