"""The simulation layer: the fluid runner that plays the paper's scheduler on the cluster.

Shared by both engines: the resource layout and routes (``layout``), the
pipes' layout (``pipes``), the scheduler's names and constants (``rules``), the meter (``metrics``), the
run's LP bound (``bound``) and the run itself (``runner``: options, engine choice, results).

Twinned: ``python/`` is the Python engine and ``compiled/`` its numba port, module for module
(``state``, ``engine``, ``late``/``loop``, ``policies``, ``share``); ``tests/sim/test_compiled.py`` and
``tests/properties/test_core_props.py`` hold them equal. Neither twin imports the other.
"""
