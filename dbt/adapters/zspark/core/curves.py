"""Space-filling curve keys (Z-order and Hilbert) for clustering rows.

Pure numpy so it can run inside pandas UDFs and be unit-tested without Spark. Each
dimension is an integer first (``value_ranks.py``: ranks among sampled boundaries, or
direct order-preserving codes); ranks are then combined by ``interleave_bits`` (Z-order)
or ``hilbert_index``, direct codes by ``interleave_codes_to_bytes``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "MAX_KEY_BITS",
    "HilbertAutomaton",
    "bit_schedule",
    "deinterleave_bits",
    "fit_ranks",
    "hilbert_automaton",
    "hilbert_index",
    "hilbert_point",
    "interleave_bits",
    "interleave_codes_to_bytes",
    "rank_bits",
]

# Keys are stored in a signed int64 column, so they must stay non-negative.
MAX_KEY_BITS = 63
_U64 = np.uint64


def rank_bits(boundary_count: int) -> int:
    """Bits needed to hold ranks 0..boundary_count + 1."""
    if boundary_count < 0:
        raise ValueError("boundary_count must be >= 0")
    return (boundary_count + 1).bit_length()


def fit_ranks(ranks: np.ndarray, from_bits: int, to_bits: int) -> np.ndarray:
    """Drop low bits so ``from_bits``-bit ranks fit ``to_bits`` (order kept, ties may appear)."""
    if to_bits < 0 or from_bits < 0:
        raise ValueError("bit counts must be >= 0")
    r = _as_u64(ranks)
    if from_bits <= to_bits:
        return r
    return r >> _U64(from_bits - to_bits)


# --------------------------------------------------------------------------- Z-order


def _as_u64(a: np.ndarray) -> np.ndarray:
    arr = np.asarray(a)
    if arr.dtype.kind == "i":
        if arr.size and int(arr.min()) < 0:
            raise ValueError("ranks must be non-negative")
        return arr.astype(np.uint64)
    if arr.dtype.kind in "ub":
        return arr.astype(np.uint64)
    if arr.size == 0:
        return arr.astype(np.uint64)
    raise ValueError(f"ranks must be an integer array, got {arr.dtype}")


def _check_grid(ranks: Sequence[np.ndarray], bits: int) -> list[np.ndarray]:
    dims = len(ranks)
    if dims < 1:
        raise ValueError("need at least one dimension")
    if bits < 1 or dims * bits > MAX_KEY_BITS:
        raise ValueError(f"{dims} dims x {bits} bits must be within 1..{MAX_KEY_BITS} bits")
    cols = [_as_u64(r) for r in ranks]
    n = len(cols[0])
    if any(c.ndim != 1 or len(c) != n for c in cols):
        raise ValueError("rank arrays must be 1-d and of equal length")
    limit = 1 << bits
    for c in cols:
        if c.size and int(c.max()) >= limit:
            raise ValueError(f"rank {int(c.max())} does not fit in {bits} bits")
    return cols


def bit_schedule(weights: Sequence[float], bits: int) -> tuple[int, ...]:
    """The dimension of each key bit, most significant first, when dimensions weigh
    ``weights`` (shares of point queries): each next bit goes to the dimension whose
    queries it saves most, ``w / 2**taken``, so the leading bits, those that cut files,
    give each dimension ``2**taken`` ranges in proportion to its weight (what minimises
    files read, ``sum(w / ranges)``). Equal weights give plain Z-order's round robin;
    weight-0 dimensions take their bits last, in turn.

    >>> bit_schedule([1, 1, 1], 2), bit_schedule([0.8, 0.2, 0], 3)
    ((0, 1, 2, 0, 1, 2), (0, 0, 1, 0, 1, 1, 2, 2, 2))
    """
    taken = [0] * len(weights)
    schedule = []
    for _ in range(bits * len(weights)):
        open_dims = [j for j in range(len(weights)) if taken[j] < bits]
        chosen = max(open_dims, key=lambda j: (weights[j] / 2 ** taken[j], -taken[j], -j))
        schedule.append(chosen)
        taken[chosen] += 1
    return tuple(schedule)


def bit_positions(dims: int, bits: int,
                   schedule: Sequence[int] | None) -> list[tuple[int, int, int]]:
    """(dimension, its bit, key bit) of every key bit under ``schedule`` (default round
    robin, dimension 0 first)."""
    order = list(schedule) if schedule is not None else [j for _ in range(bits)
                                                         for j in range(dims)]
    if sorted(order) != sorted(j for j in range(dims) for _ in range(bits)):
        raise ValueError(f"a schedule names each of {dims} dims {bits} times")
    left = [bits] * dims
    positions = []
    for slot, j in enumerate(order):
        left[j] -= 1
        positions.append((j, left[j], dims * bits - 1 - slot))
    return positions


def interleave_bits(ranks: Sequence[np.ndarray], bits: int,
                    schedule: Sequence[int] | None = None) -> np.ndarray:
    """Z-order key: each dimension's bits from most to least significant, in the order of
    ``schedule`` (:func:`bit_schedule`; default: dimension 0 first at every level)."""
    cols = _check_grid(ranks, bits)
    key = np.zeros(len(cols[0]), dtype=np.uint64)
    one = _U64(1)
    for j, bit, slot in bit_positions(len(cols), bits, schedule):
        key |= ((cols[j] >> _U64(bit)) & one) << _U64(slot)
    return key


def _check_key(key: np.ndarray, dims: int, bits: int) -> np.ndarray:
    if dims < 1 or bits < 1 or dims * bits > MAX_KEY_BITS:
        raise ValueError(f"{dims} dims x {bits} bits must be within 1..{MAX_KEY_BITS} bits")
    k = _as_u64(key)
    if k.size and int(k.max()) >> (dims * bits):
        raise ValueError(f"key does not fit in {dims * bits} bits")
    return k


def deinterleave_bits(key: np.ndarray, dims: int, bits: int,
                      schedule: Sequence[int] | None = None) -> list[np.ndarray]:
    """Inverse of ``interleave_bits``."""
    k = _check_key(key, dims, bits)
    out = [np.zeros(len(k), dtype=np.uint64) for _ in range(dims)]
    one = _U64(1)
    for j, bit, slot in bit_positions(dims, bits, schedule):
        out[j] |= ((k >> _U64(slot)) & one) << _U64(bit)
    return out


# --------------------------------------------------------------------------- Hilbert


def _undo_step(x: list[np.ndarray], i: int, level: int) -> None:
    """Skilling's inner step for bit Q = 2**level: invert x0's low bits where x[i] has Q
    set, else exchange the low bits of x0 and x[i]. Branch-free over rows."""
    low = _U64((1 << level) - 1)
    # All ones where the bit is set, zero elsewhere (0 - 1 wraps in uint64).
    hit = _U64(0) - ((x[i] >> _U64(level)) & _U64(1))
    t = (x[0] ^ x[i]) & low & ~hit
    x[0] ^= (low & hit) | t
    if i:
        x[i] ^= t


def _axes_to_transpose(x: list[np.ndarray], bits: int) -> None:
    """Skilling (2004) AxestoTranspose, in place, vectorised over rows."""
    n = len(x)
    zero = _U64(0)
    # Inverse undo of the excess rotations/reflections, from the top bit down.
    for level in range(bits - 1, 0, -1):
        for i in range(n):
            _undo_step(x, i, level)
    # Gray encode.
    for i in range(1, n):
        x[i] ^= x[i - 1]
    t = np.zeros_like(x[0])
    q = 1 << (bits - 1)
    while q > 1:
        t ^= np.where((x[n - 1] & _U64(q)) != 0, _U64(q - 1), zero)
        q >>= 1
    for i in range(n):
        x[i] ^= t


def _transpose_to_axes(x: list[np.ndarray], bits: int) -> None:
    """Skilling (2004) TransposetoAxes, in place, vectorised over rows."""
    n = len(x)
    # Gray decode.
    t = x[n - 1] >> _U64(1)
    for i in range(n - 1, 0, -1):
        x[i] ^= x[i - 1]
    x[0] ^= t
    # Undo the excess work, from the low bits up.
    for level in range(1, bits):
        for i in range(n - 1, -1, -1):
            _undo_step(x, i, level)


def hilbert_index(ranks: Sequence[np.ndarray], bits: int) -> np.ndarray:
    """Hilbert key of points with ``bits``-bit coordinates in any number of dimensions."""
    cols = _check_grid(ranks, bits)  # fresh copies, safe to transform in place
    _axes_to_transpose(cols, bits)
    # The transposed form interleaved (dimension 0 most significant) is the index.
    return interleave_bits(cols, bits)


@dataclass(frozen=True)
class HilbertAutomaton:
    """``hilbert_index`` as a finite-state machine over the points' digits, one level at
    a time from the top (a digit: the level's bit of every dimension, dimension 0 most
    significant): ``table[state * 2**dims + digit]`` is ``next_state * 2**dims`` plus the
    index's digit at that level. So the index needs one table lookup per level, which a
    SQL engine does in generated code with no lambda and no Python."""

    dims: int
    bits: int
    start: int
    table: tuple[int, ...]

    @property
    def states(self) -> int:
        return len(self.table) >> self.dims

    def levels_per_step(self) -> int:
        """How many levels one lookup may take with a table of at most
        ``MAX_AUTOMATON_ENTRIES`` (fewer lookups make a shorter chain in SQL)."""
        levels = 1
        while levels < self.bits and \
                self.states << (self.dims * (levels + 1)) <= MAX_AUTOMATON_ENTRIES:
            levels += 1
        return levels

    def step_table(self, levels: int) -> tuple[int, ...]:
        """The machine taking ``levels`` digits at once (the top one most significant):
        ``[state * 2**(dims*levels) + digits]`` is ``next_state * 2**(dims*levels)`` plus
        the index's ``levels`` digits."""
        radix = 1 << self.dims
        table = []
        for state in range(self.states):
            for digits in range(radix ** levels):
                at, out = state, 0
                for level in range(levels - 1, -1, -1):
                    entry = self.table[at * radix + (digits >> (self.dims * level)) % radix]
                    at, out = entry // radix, out * radix + entry % radix
                table.append((at * radix ** levels) + out)
        return tuple(table)

    def index(self, ranks: Sequence[np.ndarray]) -> np.ndarray:
        """The index of points by walking the machine (equal to ``hilbert_index``)."""
        # The digits are the Z-order key's, a level (dims bits) at a time from the top.
        digits = interleave_bits(ranks, self.bits)
        table = np.asarray(self.table, dtype=np.uint64)
        radix = _U64(1 << self.dims)
        state = np.full(len(digits), _U64(self.start), dtype=np.uint64)
        key = np.zeros(len(digits), dtype=np.uint64)
        for level in range(self.bits):
            digit = (digits >> _U64(self.dims * (self.bits - 1 - level))) % radix
            entry = table[state * radix + digit]
            key = key * radix + entry % radix
            state = entry // radix
        return key


#: A machine with more table entries than this is not built (a key in SQL falls back to
#: Skilling's transform): 3 dims at 10 bits take 24 states x 8 digits, 4 dims 192 x 16.
MAX_AUTOMATON_ENTRIES = 4096


#: Machines built so far. A plain dict, not ``functools.cache``: this module travels to
#: executors by value, and a cache wrapper would travel by reference, importing dbt there.
_AUTOMATA: dict[tuple[int, int], HilbertAutomaton | None] = {}


def hilbert_automaton(dims: int, bits: int) -> HilbertAutomaton | None:
    """The machine of ``hilbert_index`` for ``dims`` x ``bits``, or None if its table
    would pass ``MAX_AUTOMATON_ENTRIES`` (built once per shape)."""
    if (dims, bits) not in _AUTOMATA:
        _AUTOMATA[dims, bits] = _build_automaton(dims, bits)
    return _AUTOMATA[dims, bits]


def _build_automaton(dims: int, bits: int) -> HilbertAutomaton | None:
    """The machine of ``hilbert_index``, found from the index itself, breadth first over
    digit prefixes: the state after a prefix is the order in which the index visits the
    sub-cells one level down (a Hilbert sub-curve is the whole curve turned and mirrored,
    and that order fixes the turn), so a prefix whose order was seen before reaches a
    known state."""
    if dims < 1 or bits < 1 or dims * bits > MAX_KEY_BITS:
        raise ValueError(f"{dims} dims x {bits} bits must be within 1..{MAX_KEY_BITS} bits")
    radix = 1 << dims

    def visit_orders(prefix: tuple[int, ...], children: bool) -> list[tuple[int, ...]]:
        """The index's digits at the level below ``prefix`` for each next digit; with
        ``children`` the same for each of the prefix's children instead, from one call of
        ``hilbert_index`` (one call per prefix took a fresh process 0.14 s)."""
        level = len(prefix) + children
        shift = _U64(dims * (bits - 1 - level))
        cells = radix ** (1 + children)
        # The cells whose Z-order digits are the prefix, then each next digit(s), then zeros.
        start = 0
        for digit in prefix:
            start = start * radix + digit
        points = deinterleave_bits((np.arange(cells, dtype=np.uint64) + _U64(start * cells))
                                   << shift, dims, bits)
        digits = ((hilbert_index(points, bits) >> shift) % _U64(radix)).reshape(-1, radix)
        return [tuple(int(v) for v in row) for row in digits]

    orders = {visit_orders((), children=False)[0]: 0}
    prefixes: list[tuple[int, ...]] = [()]
    following: dict[tuple[int, int], int] = {}
    for state, prefix in enumerate(prefixes):  # grows while it is walked
        if len(prefix) == bits - 1:
            continue  # first met at the last level: it has no next level
        for digit, order in enumerate(visit_orders(prefix, children=True)):
            if order not in orders:
                if (len(orders) + 1) * radix > MAX_AUTOMATON_ENTRIES:
                    return None
                orders[order] = len(prefixes)
                prefixes.append((*prefix, digit))
            following[state, digit] = orders[order]
    order_of = {state: order for order, state in orders.items()}
    table = tuple(following.get((state, digit), 0) * radix + order_of[state][digit]
                  for state in range(len(prefixes)) for digit in range(radix))
    return HilbertAutomaton(dims, bits, 0, table)


def hilbert_point(index: np.ndarray, dims: int, bits: int) -> list[np.ndarray]:
    """Inverse of ``hilbert_index``: the coordinates of each Hilbert key."""
    cols = deinterleave_bits(index, dims, bits)
    _transpose_to_axes(cols, bits)
    return cols


# --------------------------------------------------------------------------- direct Z-order


def interleave_codes_to_bytes(codes: Sequence[np.ndarray]) -> list[bytes]:
    """Bit-interleave n uint64 code columns into 8n big-endian bytes per row.

    Bit 63 of every column comes first (column 0 leading), so bytewise order is Z order.
    """
    if len(codes) == 0:
        raise ValueError("need at least one code column")
    cols = [np.asarray(c).astype(np.uint64) for c in codes]
    rows = len(cols[0])
    if any(c.ndim != 1 or len(c) != rows for c in cols):
        raise ValueError("code arrays must be 1-d and of equal length")
    dims = len(cols)
    # (rows, dims) big-endian words -> bits (rows, dims, 64) -> (rows, 64, dims) -> bytes.
    words = np.stack(cols, axis=1).astype(">u8")
    bits = np.unpackbits(words.view(np.uint8).reshape(rows, dims, 8), axis=2)
    packed = np.packbits(bits.transpose(0, 2, 1).reshape(rows, 64 * dims), axis=1)
    width = 8 * dims
    flat = packed.tobytes()
    return [flat[i : i + width] for i in range(0, rows * width, width)]
