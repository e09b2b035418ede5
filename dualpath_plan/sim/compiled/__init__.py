"""The compiled fluid engine (numba): a step-for-step port of ``sim.python``, on two flat arenas.

numba is imported only by ``run`` when a compiled run starts (and by the kernels it loads), never by a
command that does not simulate.
"""
