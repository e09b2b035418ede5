"""The model layer: the frozen inputs every other layer reads.

Units and their conversions (``units``), the one number formatter (``fmt``), errors that carry an exit
code (``errors``), the profile schema and strict loading (``schema``, ``profiles``), the cluster's
symbols ``g``, ``B``, ``s``, ``M`` (``cluster``) and the scenario that bundles them (``scenario``).
Nothing here imports from a layer above (``tests/test_layers.py``).
"""
