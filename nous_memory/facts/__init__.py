"""Fact consolidation: ``learn_fact`` and its rules.

- ``consolidation``: pure functions (values, relations, thresholds, the verdict plan); no I/O;
- ``learning``: ``FactLearner``, which stages exact hash, cosine neighbours and the
  optional LLM classifier, then confirms, rewords, supersedes or inserts in one short
  transaction per fact;
- ``undelete``: the owner's restore of a soft-deleted memory (a fact through the value
  rule, so it never stands beside a newer version of itself).
"""
