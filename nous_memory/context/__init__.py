"""The read path: recall, context assembly within a token budget, and expand.

- ``recall``: the hybrid ranking (vector and full text fused by RRF, bounded priors);
- ``model``: the request and result records of context assembly;
- ``assembly``: ``assemble_context``; ``sections``: per-section budgets and the text;
- ``extraction``: cached tier-2 extraction of complex records; ``truncation``: the
  non-LLM fallback;
- ``expand``: tier 3, a memory in full with its history, source and cold storage;
- ``access``: deferred, batched access bookkeeping.
"""
