"""The planning layer: answers a buyer asks, built from the bounds.

The ``bottleneck`` analysis of one scenario (``analysis``), the procurement MILP (``plan``) and its
parsed request (``request``), and the split sweep of a GPU budget (``sweep``).
"""
