"""The DRAM tier in the runner (``--dram-tier``): an LRU cache of the agents' KV over the pooled host DRAM.

The bound (``bounds.lru``) estimates what the tier serves with Che's approximation; the runner plays the cache itself,
so its runs test that estimate. Its objects are the agents' KV (an agent's context, one object per agent, as the bound's
working set):

* when a turn is given its decode engine (where the engines choose its read side), the cache is asked for the agent's KV:
  a **hit** when the object is there and holds at least the turn's hit tokens (the whole context of its last turn; a
  compacted context needs less), and the turn reads its hit KV from the pool (``layout.TIER_ROUTES``' ``tier_read``)
  instead of storage (it enters no read queue: it reserves its decode-buffer room in that buffer's line when it joins a
  forward batch, or before its whole-KV load). Otherwise a **miss**: the turn reads from storage as without the tier, and those bytes are copied
  into the pool as they are read (every storage read carries ``insert_pe`` or ``insert_de``), so the object now holds them;
* when the turn's write-back ends, its new KV has been copied too (``insert_wb``): an object still there now holds the
  whole context; one evicted meanwhile (while its turn prefilled and decoded, its KV in HBM, the object was the least
  recently used) is made again of the new KV alone, which serves no next turn (a hit needs the context from its first
  token, as prefix caching matches blocks from the first) but takes room until it is evicted or remade at the next ask.

Every use (ask or write) makes the object the most recently used; when the objects exceed the tier's bytes the least
recently used go, whole. An object larger than the tier never stays. What the model leaves out: objects are whole
(a real pool evicts blocks, so a partly evicted context would still hit in part), an object may be evicted while a hit
streams from it (the bytes are charged as read), and sub-agents and sessions sharing a prefix do not share objects (a
fork's first turn misses). The Python engine keeps the order in an ``OrderedDict`` (``sim.python.tier``); the compiled
engine keeps the same order in a doubly linked list over the agents (``sim.compiled.tier``), and evicts in the same order.
"""

from __future__ import annotations

FIT = 1 + 1e-12  # a hit needs the object to hold the turn's hit bytes, to rounding

# Why the LRU serves other than the bound's share (``bounds.lru``), as the reports of simulate and --check say it
ESTIMATE_WORDS = ("the bound takes Che's estimate for agents asked independently, min(1, tier / working set), and an LRU serves "
                  "less when the agents come round in near-cyclic order and their KV outgrows the tier, more when fewer agents "
                  "are live than the bound's working set")
