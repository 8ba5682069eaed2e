"""The OpenAI embedder through the real openai client, against the scripted server."""

from __future__ import annotations

import numpy as np
import pytest

from nous_memory import ConfigurationError, EmbeddingMismatchError, MemoryStore, OpenAIEmbedder
from nous_memory.testing import FakeEmbedder, ScriptedLLMServer


async def test_batches_orders_and_normalises(llm_server: ScriptedLLMServer) -> None:
    embedder = OpenAIEmbedder("text-embedding-3-small", base_url=llm_server.base_url,
                              dimension=384, batch_size=2)
    texts = ["alpha", "beta", "gamma"]
    vectors = await embedder.embed(texts)
    await embedder.aclose()
    assert [len(b["input"]) for b in llm_server.embedding_requests] == [2, 1]
    assert all(b["dimensions"] == 384 for b in llm_server.embedding_requests)
    fake = FakeEmbedder(dimension=384)
    for text, vector in zip(texts, vectors, strict=True):
        assert vector.shape == (384,)
        assert float(np.linalg.norm(vector)) == pytest.approx(1.0, abs=1e-5)
        assert float(vector @ fake.vector(text)) == pytest.approx(1.0, abs=1e-5)


async def test_store_with_openai_embedder(database_url: str,
                                          llm_server: ScriptedLLMServer) -> None:
    async with MemoryStore.open(database_url=database_url, embedding_provider="openai",
                                embedding_model="text-embedding-3-small",
                                embedding_base_url=llm_server.base_url,
                                embedding_dimensions=384) as store:
        memory = await store.remember("a", "fact", content="Remote embeddings work")
        assert memory.embedding_model == "text-embedding-3-small"
        assert store.embedder.dimension == 384


async def test_wrong_dimension_from_server_is_refused(llm_server: ScriptedLLMServer) -> None:
    llm_server.embedding_dimension = 12
    embedder = OpenAIEmbedder("my-model", base_url=llm_server.base_url, dimension=384)
    embedder._request_dims = None  # a server that ignores the requested size
    with pytest.raises(EmbeddingMismatchError, match="12"):
        await embedder.embed(["x"])
    await embedder.aclose()


def test_unknown_model_needs_a_dimension() -> None:
    with pytest.raises(ConfigurationError, match="dimension"):
        OpenAIEmbedder("mystery-model", base_url="http://127.0.0.1:9/v1")
