"""Unit constants and the only conversions between data-file units and SI.

Inside the package every quantity is SI: bytes, bytes/s, FLOP, FLOP/s, seconds. Data files and
flags name their unit in the key (``cnic_Gbps``, ``dram_GBps``); this module is the one place that
turns those into SI. Bandwidth prefixes are decimal; binary prefixes are used only for sizes that
say ``GiB``. Network line rates are in bits.
"""

from __future__ import annotations

KB = 1e3
MB = 1e6
GB = 1e9
TB = 1e12
GiB = 2.0**30
BITS_PER_BYTE = 8
GIGA = 1e9
TERA = 1e12
PETA = 1e15

# Conversion factors from a data-file unit suffix to SI. The suffix is the part after the last
# underscore of a key (``snic_Gbps`` -> ``Gbps``).
TO_SI: dict[str, float] = {
    "Gbps": GIGA / BITS_PER_BYTE,  # gigabits/s -> bytes/s
    "GBps": GB,  # gigabytes/s -> bytes/s
    "TBps": TB,  # terabytes/s -> bytes/s
    "GB": GB,  # gigabytes -> bytes
    "TB": TB,  # terabytes -> bytes
    "GiB": GiB,  # gibibytes -> bytes
    "TFLOPS": TERA,  # teraFLOP/s -> FLOP/s
    "bytes": 1.0,
    "params": 1.0,
    "tokens": 1.0,
    "s": 1.0,
    "ms": 1e-3,
    "us": 1e-6,  # microseconds -> seconds
    "frac": 1.0,
    "usd": 1.0,
    "usd_per_hour": 1.0,  # kept per hour (the unit-suffixed name says so), as rents are quoted
    "W": 1.0,  # watts
}

SI_UNIT: dict[str, str] = {
    "Gbps": "B/s",
    "GBps": "B/s",
    "TBps": "B/s",
    "GB": "B",
    "TB": "B",
    "GiB": "B",
    "TFLOPS": "FLOP/s",
    "bytes": "B",
    "params": "",
    "tokens": "tokens",
    "s": "s",
    "ms": "s",
    "us": "s",
    "frac": "",
    "usd": "USD",
    "usd_per_hour": "USD/h",
    "W": "W",
}


# How a data-file unit reads in a message to a person ("frac" values are fractions of 1).
UNIT_WORDS: dict[str, str] = {"Gbps": "Gb/s", "GBps": "GB/s", "TBps": "TB/s", "TFLOPS": "TFLOP/s", "frac": "(a fraction of 1)", "usd": "USD", "usd_per_hour": "USD/h", "us": "µs"}


def gbps_to_Bps(gbps: float) -> float:
    """Network line rate in gigabits/s -> bytes/s (400 Gb/s -> 5.0e10 B/s)."""
    return gbps * GIGA / BITS_PER_BYTE


def Bps_to_gbps(rate_Bps: float) -> float:
    """bytes/s -> gigabits/s; the exact inverse of :func:`gbps_to_Bps`."""
    return rate_Bps * BITS_PER_BYTE / GIGA


def to_si(value: float, unit: str) -> float:
    """Convert ``value`` given in the data-file ``unit`` to SI."""
    return value * TO_SI[unit]


def from_si(value: float, unit: str) -> float:
    """Convert an SI ``value`` to the data-file ``unit``."""
    return value / TO_SI[unit]
