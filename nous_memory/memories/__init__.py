"""Typed memories, the base every other domain builds on.

- ``kinds``: the five kinds, their enums, documented limits and validated details;
- ``summaries``: tier-1 template summaries computed at write time;
- ``records``: the immutable results the store returns (``Memory``, ``MemoryEvent``,
  ``Page``);
- ``manager``: create (single and batch), read, update, delete and list, one short
  transaction each; ``changes``: what an update may change and recompute;
- ``params``: caller arguments parsed with field-named errors;
- ``fact_key``: the normalised exact-duplicate key of a fact.
"""
