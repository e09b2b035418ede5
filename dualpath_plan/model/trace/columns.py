"""The rounds of many trace lines at once: the ``rounds`` lists of lines written as ``Session.line`` writes them,
read into columns with array operations (``trace stats`` streams at tens of MB/s on this path).

A canonical ``rounds`` list is compact JSON with the keys in order: ``{"append_tokens":A,"gen_tokens":G}``, then
optionally ``,"tool_s":T`` and ``,"keep_tokens":K`` before the ``}``, the rounds joined by ``,``. The lists of a
block's lines are joined by ``|`` and read on arrays:

* every colon ends a key, told by two of its letters and checked byte for byte; the keys follow ``A G [T] [K]`` in
  every round; a number runs from its colon up to the next key, or up to the ``},`` or ``}|`` that ends its round,
  so that keys, numbers and round ends tile the text (every byte of a number is then checked as below);
* after ``A``, ``G`` and ``K``, 1 to 10 digits without a leading zero (JSON's integer, at most ``MAX_ROUND_TOKENS``
  after the range check of ``read_columns``' caller), read by Horner's rule a digit position at a time;
* after ``T``, JSON's non-negative number (``0`` or a digit string not starting with ``0``, an optional fraction, an
  optional exponent): the usual ones (at most 15 digits and a point) as an exact integer over an exact power of ten
  (Clinger's fast path), the rest checked on a matrix of their characters and converted by numpy's string-to-float
  cast; both round correctly as Python's ``float`` does (a property test holds them to the same bits).

Anything else (another key order, spaces, a string, a key twice) returns ``None``: the caller then reads those lines
with the JSON parser, which names what is wrong. Both paths give the same numbers for every line this one takes.
"""

from __future__ import annotations

import numpy as np

from dualpath_plan.model.trace.schema import NO_KEEP

MAX_INT_DIGITS = 10  # JSON integers the fast path reads; longer ones (beyond any valid token count) go to the JSON parser
MAX_FLOAT_CHARS = 32  # JSON numbers the fast path reads (``repr`` of a float takes at most 24); longer ones go to the JSON parser
_A, _G, _T, _K = 1, 2, 3, 4
_KEY = {_A: b'{"append_tokens":', _G: b',"gen_tokens":', _T: b',"tool_s":', _K: b',"keep_tokens":'}
_LENGTH = np.array([0] + [len(_KEY[k]) for k in (_A, _G, _T, _K)])
_NEXT = np.zeros((5, 5), dtype=bool)  # _NEXT[k, n]: key n may follow key k
for _k, _ns in ((_A, (_G,)), (_G, (_T, _K, _A)), (_T, (_K, _A)), (_K, (_A,))):
    _NEXT[_k, list(_ns)] = True
_COLON, _COMMA, _CLOSE, _LINE = (ord(c) for c in ":,}|")


def read_columns(lists: list[bytes]) -> tuple[np.ndarray, ...] | None:
    """The rounds of ``lists`` (each a line's ``rounds`` list between its brackets) as ``(append, gen, tool_s, keep,
    lengths)``: int64, int64, float64 and int64 columns over every round in order (``keep`` is ``NO_KEEP`` where a
    round has none) and the rounds per list; None when any list is not canonical (module docstring)."""
    text = b"|".join(lists) + b"|"
    b = np.frombuffer(text, dtype=np.uint8)
    colon = np.flatnonzero(b == _COLON)
    kind = _keys(b, colon)
    if kind is None:
        return None
    new_round = np.append(kind[1:] == _A, True)
    start_next = np.append(colon[1:] - _LENGTH[kind[1:]] + 1, b.size)  # where the next key (or the text's end) starts
    end = start_next - 2 * new_round  # a number runs up to the next key, or up to the "}," "}|" that end its round
    closing = np.minimum(end + 1, b.size - 1)
    if not np.all(~new_round | ((b[end] == _CLOSE) & ((b[closing] == _COMMA) | (b[closing] == _LINE)))):
        return None
    begin, size = colon + 1, end - colon - 1
    append, gen, keep = (_integers(b, begin[kind == k], size[kind == k]) for k in (_A, _G, _K))
    tool = _floats(b, begin[kind == _T], size[kind == _T])
    if append is None or gen is None or keep is None or tool is None:
        return None
    owner = np.cumsum(kind == _A) - 1  # the round each key belongs to
    n = append.size
    keep_col, tool_col = np.full(n, NO_KEEP, dtype=np.int64), np.zeros(n)
    keep_col[owner[kind == _K]] = keep
    tool_col[owner[kind == _T]] = tool
    line_end = new_round & (b[closing] == _LINE)
    if int(line_end.sum()) != len(lists):
        return None
    lengths = np.diff(np.concatenate(([0], owner[line_end] + 1)))
    return append, gen, tool_col, keep_col, lengths


def _keys(b: np.ndarray, colon: np.ndarray) -> np.ndarray | None:
    """Which key ends at each colon (``_A`` ... ``_K``), told by two of its letters and then checked byte for byte (8
    bytes at a time), and in the order ``A G [T] [K]`` per round; None when any colon follows no key or the order is wrong."""
    if not colon.size or colon[0] != _LENGTH[_A] - 1:  # the first key starts the text
        return None
    ninth = b[colon - 9]
    kind = np.where(b[colon - 3] == ord("_"), _T, np.where(ninth == ord("d"), _A, np.where(ninth == ord("n"), _G, _K)))
    words = np.ndarray((b.size - 7,), dtype="<u8", buffer=b, strides=(1,))  # words[i]: the 8 bytes from i (unaligned)
    for k, key in _KEY.items():
        at = colon[kind == k] - len(key) + 1
        for j in sorted({*range(0, len(key) - 7, 8), len(key) - 8}):  # 8-byte windows that cover the key
            if np.any(words[at + j] != int.from_bytes(key[j:j + 8], "little")):
                return None
    if kind[0] != _A or kind[-1] == _A or not _NEXT[kind[:-1], kind[1:]].all():
        return None
    return kind


def _integers(b: np.ndarray, begin: np.ndarray, size: np.ndarray) -> np.ndarray | None:
    """JSON integers (1 to ``MAX_INT_DIGITS`` digits, no leading zero) at ``begin`` of ``size`` bytes, or None."""
    if not begin.size:
        return np.zeros(0, dtype=np.int64)
    if size.min() < 1 or size.max() > MAX_INT_DIGITS:
        return None
    if np.any((b[begin] == ord("0")) & (size > 1)):
        return None
    value = np.zeros(begin.size, dtype=np.int64)
    for j in range(int(size.max())):
        live = size > j
        digit = b[begin[live] + j] - np.uint8(ord("0"))  # wraps below "0": a non-digit is above 9
        if np.any(digit > 9):
            return None
        value[live] = value[live] * 10 + digit
    return value


def _floats(b: np.ndarray, begin: np.ndarray, size: np.ndarray) -> np.ndarray | None:
    """JSON non-negative numbers at ``begin`` of ``size`` bytes as float64, correctly rounded, or None.

    Numbers of the usual form (digits, at most one point) are taken a length and a point position at a time, where
    every row's digit weights are the same; the rest (exponents, long mantissas) by :func:`_general`."""
    if not begin.size:
        return np.zeros(0)
    if size.min() < 1 or size.max() > MAX_FLOAT_CHARS:
        return None
    value = np.empty(begin.size)
    rest = []
    for length in np.flatnonzero(np.bincount(size)).tolist():
        rows = np.flatnonzero(size == length)
        chars = b[begin[rows, None] + np.arange(length)]
        point = chars == ord(".")
        at = np.where(point.any(axis=1), point.argmax(axis=1), length)  # the point's position (length: none)
        digits = ((chars >= ord("0")) & (chars <= ord("9"))).sum(axis=1)
        plain = digits + (at < length) == length
        if np.any(plain & ((at == 0) | (at == length - 1) | ((chars[:, 0] == ord("0")) & (at > 1)))):
            return None  # ".5", "5." or a leading zero: not JSON
        fast = plain & (digits <= 15)
        rest.append(rows[~fast])
        for where in np.flatnonzero(np.bincount(at[fast], minlength=1)).tolist():
            pick = fast & (at == where)
            value[rows[pick]] = _plain(chars[pick], where)
    rest = np.concatenate(rest)
    if rest.size:
        slow = _general(b, begin[rest], size[rest])
        if slow is None:
            return None
        value[rest] = slow
    return value


def _plain(chars: np.ndarray, point: int) -> np.ndarray:
    """Numbers of one length with the point at ``point`` (the length: none) and at most 15 digits: the digits ``M`` as
    an exact integer (below 2**53) over an exact power of ten (at most 10**15), one correctly rounded division
    (Clinger's fast path), as a correctly rounding string-to-float conversion gives."""
    length = chars.shape[1]
    columns = [j for j in range(length) if j != point]
    weights = 10 ** np.arange(len(columns) - 1, -1, -1, dtype=np.int64)
    m = (chars[:, columns].astype(np.int64) - ord("0")) @ weights
    return m / 10.0 ** max(length - 1 - point, 0)


def _general(b: np.ndarray, begin: np.ndarray, size: np.ndarray) -> np.ndarray | None:
    """Any JSON non-negative numbers (checked on a matrix of their characters), by numpy's string-to-float cast, which
    rounds correctly as Python's ``float`` does; None when one is not JSON."""
    width = int(size.max())
    inside = np.arange(width) < size[:, None]
    chars = np.where(inside, b[np.minimum(begin[:, None] + np.arange(width), b.size - 1)], 0).astype(np.uint8)
    digit = (chars >= ord("0")) & (chars <= ord("9"))
    point, exp, sign = chars == ord("."), (chars == ord("e")) | (chars == ord("E")), (chars == ord("+")) | (chars == ord("-"))
    if not _json_number(chars, digit, point, exp, sign, inside, size):
        return None
    return np.ascontiguousarray(chars).view(f"S{width}").ravel().astype(np.float64)


def _json_number(chars: np.ndarray, digit: np.ndarray, point: np.ndarray, exp: np.ndarray, sign: np.ndarray,
                 inside: np.ndarray, size: np.ndarray) -> bool:
    """Whether every row of ``chars`` is JSON's non-negative number: ``0`` or ``[1-9][0-9]*``, then ``(.[0-9]+)?``,
    then ``([eE][+-]?[0-9]+)?``."""
    rows = np.arange(chars.shape[0])
    if not (digit[:, 0].all() and digit[rows, size - 1].all()):  # starts and ends with a digit
        return False
    if chars.shape[1] > 1 and np.any((chars[:, 0] == ord("0")) & digit[:, 1]):
        return False  # a leading zero
    if np.any(point.sum(axis=1) > 1) or np.any(exp.sum(axis=1) > 1) or np.any(sign.sum(axis=1) > 1):
        return False
    after = np.zeros_like(digit)
    after[:, :-1] = digit[:, 1:]
    before_exp = np.zeros_like(digit)
    before_exp[:, 1:] = exp[:, :-1]
    if np.any(point & ~after) or np.any(sign & ~before_exp):  # a fraction has digits; a sign follows the e
        return False
    exp_after = np.zeros_like(digit)
    exp_after[:, 1:] = np.cumsum(exp, axis=1)[:, :-1] > 0  # positions after an e
    if np.any(point & exp_after):  # the fraction comes before the exponent
        return False
    sign_or_digit_after = np.zeros_like(digit)
    sign_or_digit_after[:, :-1] = digit[:, 1:] | sign[:, 1:]
    return not np.any(exp & ~sign_or_digit_after) and bool(np.all(digit | point | exp | sign | ~inside))
