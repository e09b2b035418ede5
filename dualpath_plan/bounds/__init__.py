"""The bounds layer: the analytical core.

The sympy model of every link load (``symbolic``, paper eq. (1)-(9)) and its generated numeric twin
(``_generated``); link loads, the P/D range and KV ceilings (``bandwidth``); what a decode step and a
prefill pass cost (``steptime``); the prefill FLOPs and rate (``compute``) and decode rates (``decode``); the throughput LP (``lp``, HiGHS) and its closed-form
solution (``closed_bound``). It reads only ``model``.
"""
