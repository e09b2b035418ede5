"""Where a turn is: the stages a request passes through in both fluid engines, and which of them are waits.

Every turn in flight is in exactly one stage at a time, so the requests counted in the stages always add up to
the agents in the cluster (arrived, not finished: one turn each). The engines keep, per stage, how many requests
and how many prompt tokens (``len(r)``, hit + miss) are in it (``Engine.stage_load``: requests, then tokens), and
the meter integrates both over time (request-seconds and token-seconds per stage, ``sim.metrics``), so the mean
occupancy of a stage over any interval is the difference of two records over its length, and by Little's law
the mean time a turn spends in it is that occupancy over the turns finished per second.

The stages, in the order a turn meets them (``sim.python.engine`` module docstring, steps 1-7):

* ``pe_assign``: in the prefill queue, waiting for a PE (Algorithm 1 at PE-group fetches);
* ``de_assign``: waiting for a DE (the global or a group's private decode queue);
* ``read_queue``: in its node's storage read queue, behind other reads or waiting for the node's read window
  (a node keeps one step of its SNIC's line rate admitted: ``Engine._take_room``);
* ``buffer_room``: at the head of its node's read queue, waiting for DRAM buffer room (its own node's, or the
  DE buffer's, granted in the order the heads asked for it);
* ``reading``: its hit KV moving from storage into a DRAM buffer;
* ``load_wait`` / ``load``: without layer-wise prefill (``basic``), waiting for PE HBM room / loading the whole
  hit KV into PE HBM;
* ``batch_wait``: in its PE's ready queue, waiting to join a forward batch (a chunked request waits here between
  its chunks);
* ``prefill``: in a forward batch;
* ``decode_admission``: prefilled, waiting for DE HBM room (the H2D is admitted when the DE has room);
* ``h2d``: its KV moving from the DE buffer into DE HBM;
* ``decode``: in its DE's decode batch;
* ``writeback``: its new KV on the way back to storage.

``WAITS`` are the stages where a request is held rather than served; the gap attribution (``sim.gap``) splits the
binding resources' idle time over them.
"""

from __future__ import annotations

from dualpath_plan.sim.pipes import H2D, LOAD, READ_DE, READ_PE, WB

STAGES = ("pe_assign", "de_assign", "read_queue", "buffer_room", "reading", "load_wait", "load", "batch_wait", "prefill",
          "decode_admission", "h2d", "decode", "writeback")
(PE_ASSIGN, DE_ASSIGN, READ_QUEUE, BUFFER_ROOM, READING, LOAD_WAIT, LOADING, BATCH_WAIT, PREFILL, DECODE_ADMISSION,
 H2D_RUN, DECODE, WRITEBACK) = range(len(STAGES))
N_STAGES = len(STAGES)
NONE = -1  # not in flight (before its first turn, after its last)

WAITS = ("pe_assign", "de_assign", "read_queue", "buffer_room", "load_wait", "batch_wait", "decode_admission")

# the stage of an item queued in a pipe, and of one admitted to it, by the item's tag (sim.pipes)
WAITING = {READ_PE: READ_QUEUE, READ_DE: READ_QUEUE, LOAD: LOAD_WAIT, H2D: DECODE_ADMISSION}
SERVING = {READ_PE: READING, READ_DE: READING, LOAD: LOADING, H2D: H2D_RUN, WB: WRITEBACK}
WAITING_BY_TAG = tuple(WAITING.get(tag, NONE) for tag in range(5))  # the same, indexed by tag (the compiled engine)
SERVING_BY_TAG = tuple(SERVING[tag] for tag in range(5))

WORDS = {
    "pe_assign": "waiting for a PE", "de_assign": "waiting for a DE", "read_queue": "in a read queue",
    "buffer_room": "waiting for buffer room", "reading": "reading", "load_wait": "waiting for PE HBM",
    "load": "loading into PE HBM", "batch_wait": "waiting for a forward batch", "prefill": "prefilling",
    "decode_admission": "waiting for decode HBM", "h2d": "H2D", "decode": "decoding", "writeback": "writing back",
}
