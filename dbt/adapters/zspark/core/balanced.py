"""The balanced layout's partition (pure numpy): rows split into groups of whole files.

Curves cut one key into files, so a file's box is as narrow on each column as the curve
allows (Hilbert: 87.5% skipped per point query at 1000 files and 3 columns, where 90% is
the best any layout can do). The balanced layout splits the rows instead, like a k-d tree
fitted on the build's sample: the first column's values into ``f1`` ranges of equal rows,
each of those into ``f2`` ranges of the second column, and so on; the last column is not
cut in advance: each group of the other columns is written by a task of its own, sorted
by the last column and cut into files by row count, so no file straddles two groups and
every file is a narrow box on every column.

Fan-outs follow each column's weight (the share of point queries that filter on it): the
files a workload reads, ``sum(w_c / f_c)`` per file budget, is least when ``f_c`` is
proportional to ``w_c`` under ``prod(f_c) = files``. They are chosen per subtree from its
own sample rows, so a column with 7 distinct values never takes 10 cuts, a value holding
30% of a subtree's rows becomes a range of its own (cuts at equal quantiles collapse onto
it) and its subtree's deeper columns get its files, and correlated columns adapt.

Where the columns are so correlated that a curve's files are narrower boxes than the
tree's groups can be, the sample shows it, and the layout keeps the curve
(:func:`keep_better`).

Which values do point queries ask for? Two models are equally real. Row-weighted: a value
as often as it occurs (the probes are sampled rows). Value-uniform: every distinct value
of the column as often as any other (a dashboard listing every city). On a skewed column
they part: cuts at equal rows put the rare values, most of the distinct ones, into ranges
of many values, so under the second model most queries read those ranges' files.

Without a declared workload the layout promises no loss against the curve: it keeps, of
the trees that skip at least the curve's share on every column under both models (as the
sample shows, within a file per query), the one of least regret (:func:`judge`): under
each model, the files a point query reads over the fewest any candidate reads; a
candidate's regret is the larger of its two. Minimax, since nothing tells which model a
table's users follow; of the regret rather than of the files read, since on a skewed
column the row-weighted model reads more under every layout and would decide alone.
Where no tree is that safe, it keeps the curve. With a declared workload
(``cluster_weights``) each model's reads are weighed by it and the candidate of least
regret is kept, tree or curve: the workload's columns decide.

The tree's cuts follow a blend of the two measures: equal quantiles of ``alpha`` times the
row share plus ``1 - alpha`` times the distinct-value share (``alpha = 1``: equal rows).
Files are still cut by rows within the groups (:func:`file_rows`), so uneven groups do not
make uneven files. The column cut by rows within the groups has no cuts to blend; what
it can have is more of the fan-out: a ``tilt`` above 1 weighs it that much more, so the
tree makes fewer, larger groups, each cut finer along it (a value holding many rows, or
one of many rare values, then sits in fewer of every group's files). A build fits the
blends of :data:`BLENDS` and keeps one, or the curve (:func:`choose_layout`); the tree
records what the choice saw (:attr:`Tree.compared`, :attr:`Tree.by_blend`,
:attr:`Tree.skips`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

#: How much closer to whole files per part the farther rounding of a fan-out must come.
WHOLE_FILES_MARGIN = 0.05
#: The largest file a group is written into, over the mean file of the build.
MAX_FILE_SHARE = 1.25
#: The fewest files the last column cuts a group into (unless the build has fewer).
MIN_GROUP_FILES = 2
#: The cut measures a build fits (the row share's part of the blend), equal rows first.
ALPHAS = (1.0, 0.75, 0.5, 0.0)
#: How much more the fan-outs weigh the column cut by rows, as declared first.
TILTS = (1.0, 1.5, 2.0)
#: Every (alpha, tilt) a build fits a tree for; the first cuts at equal rows, as declared.
BLENDS = tuple((alpha, tilt) for tilt in TILTS for alpha in ALPHAS)
#: How much less regret (:func:`judge`) another blend must have to be kept over the
#: first: on data without skew the blends differ by the sample's noise alone.
ALPHA_MARGIN = 0.01


def fan_outs(files: float, weights: Sequence[float], distinct: Sequence[int]) -> list[float]:
    """Fan-out per column for a subtree of ``files`` files: proportional to the weights
    with a product of ``files``, each within ``[1, distinct]``.

    >>> [round(f, 2) for f in fan_outs(1000, [1, 1, 1], [250, 250, 10**6])]
    [10.0, 10.0, 10.0]
    >>> [round(f, 2) for f in fan_outs(1000, [1, 1, 1], [5, 250, 10**6])]
    [5.0, 14.14, 14.14]
    >>> [round(f, 2) for f in fan_outs(1000, [0.8, 0.2, 0], [250, 250, 10**6])]
    [63.25, 15.81, 1.0]
    """
    fixed: dict[int, float] = {}
    while True:
        free = [i for i in range(len(weights)) if i not in fixed and weights[i] > 0]
        left = max(files, 1.0) / math.prod(fixed.values())
        if not free:
            break
        # In logs: weights only matter relative to each other, however small.
        logs = {i: math.log(weights[i]) for i in free}
        scale = (math.log(max(left, 1.0)) - sum(logs.values())) / len(free)
        wanted = {i: math.exp(min(logs[i] + scale, 700.0)) for i in free}
        # Columns below one range take one; then columns above their distinct values take
        # those; the rest share what is left, until nothing is clamped.
        low = {i: 1.0 for i, f in wanted.items() if f < 1}
        high = {i: float(max(distinct[i], 1)) for i, f in wanted.items()
                if f > max(distinct[i], 1)}
        if not low and not high:
            fixed.update(wanted)
            break
        fixed.update(low or high)
    return [fixed.get(i, 1.0) for i in range(len(weights))]


@dataclass
class Node:
    """A group of rows of the tree: its cut values on its level's column (the lower bound
    of each child range but the first), and its children (none at the last split level)."""

    cuts: np.ndarray
    children: list[Node] = field(default_factory=list)

    def groups(self) -> int:
        return sum(c.groups() for c in self.children) if self.children else 1


@dataclass(frozen=True)
class Skips:
    """Per column, the expected share of files a point query skips under each query model:
    ``rows`` (values asked as often as they occur) and ``values`` (each distinct value
    asked once)."""

    rows: list[float]
    values: list[float]

    def reads(self, weights: Sequence[float], files: int) -> tuple[float, float]:
        """Files a declared point query reads on average under each model (rows, values).

        >>> Skips([0.75, 0.5], [0.875, 0.25]).reads([1, 1], 8)
        (3.0, 3.5)
        """
        return (expected_reads(self.rows, weights, files),
                expected_reads(self.values, weights, files))

    def describe(self, names: Sequence[str]) -> str:
        """For the build's log.

        >>> Skips([0.9, 0.8], [0.95, 0.7]).describe(["a", "b"])
        'rows-weighted a 90.0%, b 80.0%; value-uniform a 95.0%, b 70.0%'
        """
        def shares(skips: list[float]) -> str:
            return ", ".join(f"{n} {100 * s:.1f}%" for n, s in zip(names, skips, strict=True))

        return f"rows-weighted {shares(self.rows)}; value-uniform {shares(self.values)}"


@dataclass(frozen=True)
class Judged:
    """What the choice saw of a candidate: the files a declared point query reads under
    each query model, and its regret (:func:`judge`; 1: the fewest of all under both)."""

    rows: float
    values: float
    regret: float

    @property
    def worse(self) -> float:
        """The files a declared point query reads under the worse model (for the log)."""
        return max(self.rows, self.values)

    def rounded(self) -> Judged:
        """As recorded: files to a tenth, regret to a thousandth."""
        return Judged(round(self.rows, 1), round(self.values, 1), round(self.regret, 3))


@dataclass
class Tree:
    """The fitted partition: nested cuts over ``levels`` columns, then one cut by rows."""

    root: Node
    levels: int
    #: Fan-out of every split, per level, for the build's log.
    fan_outs: list[list[int]]
    #: The columns (indices) in level order, the one cut by rows last (:func:`level_order`).
    order: tuple[int, ...]
    #: A curve whose order the sample showed to have less regret than the nested cuts
    #: (:func:`keep_better`): then the rows are one group, keyed and cut along the curve.
    curve: str | None = None
    #: What the choice saw of the tree it weighed against the curve (``"tree"``), then of
    #: the curve (its name).
    compared: dict[str, Judged] = field(default_factory=dict)
    #: The row share's part of the measure the cuts follow (1: equal rows).
    alpha: float = 1.0
    #: What the choice saw of each blend's tree, by (alpha, tilt).
    by_blend: dict[tuple[float, float], Judged] = field(default_factory=dict)
    #: Expected skip per column and query model of the layout chosen (tree or curve).
    skips: Skips | None = None
    #: How much more the fan-outs weighed the column cut by rows than declared.
    tilt: float = 1.0

    @property
    def by_rows(self) -> int:
        """The column each group is sorted by and cut into files along."""
        return self.order[-1]

    @property
    def groups(self) -> int:
        return 1 if self.curve else self.root.groups()


def _cut(values: np.ndarray, parts: int, measure: np.ndarray | None = None) -> np.ndarray:
    """Cut values at ``parts`` equal quantiles of ``measure`` (each row's; default: one per
    row); equal cuts collapse (a heavy value keeps a range of its own).

    >>> skewed = np.array([0, 1, 2, 3, 4, 5, 5, 5, 5, 5, 5, 5])
    >>> _cut(skewed, 2).tolist(), _cut(skewed, 2, _measure(skewed, 0.0)).tolist()
    ([5], [3])
    """
    if parts <= 1 or values.size == 0:
        return values[:0]
    distinct = np.unique(values)
    if distinct.size <= parts:  # a range per value
        return distinct[1:]
    by_value = np.argsort(values, kind="stable")
    ordered = values[by_value]
    # Whole numbers per row unless blended, so equal rows cut exactly where they always did.
    below = np.cumsum(np.ones(values.size) if measure is None else measure[by_value])
    wanted = np.arange(1, parts) * below[-1] / parts
    positions = np.minimum(np.searchsorted(below, wanted, side="right"), values.size - 1)
    cuts = np.unique(ordered[positions])
    return cuts[cuts > ordered[0]]  # a cut at the minimum would leave an empty first range


def _measure(value_ids: np.ndarray, alpha: float) -> np.ndarray:
    """Each row's part of the blend ``alpha * row share + (1 - alpha) * distinct-value
    share`` of its rows (the rows of a value sharing that value's part), scaled so a row
    weighs 1 on average."""
    _, which, counts = np.unique(value_ids, return_inverse=True, return_counts=True)
    return alpha + (1 - alpha) * value_ids.size / (counts.size * counts[which])


def _whole_parts(budget: float, fan_out: float) -> int:
    """Round a fan-out to its nearer neighbour, unless the other leaves each part clearly
    closer to whole files (16 files split 2 ways leave 8 each, 3 ways 5.33; a budget is a
    sample's estimate, so 99.3 files still split 10 ways, not 9 of 11.03).

    >>> _whole_parts(16, 2.52), _whole_parts(1000, 10.0), _whole_parts(99.3, 9.96)
    (2, 10, 10)
    """
    def loss(parts: int) -> float:
        each = budget / parts
        return abs(each - round(each)) / each if each >= 1 else 1.0

    low, high = max(1, math.floor(fan_out)), max(1, math.ceil(fan_out))
    nearest, other = (low, high) if fan_out - low <= high - fan_out else (high, low)
    return other if loss(other) + WHOLE_FILES_MARGIN < loss(nearest) else nearest


def level_order(weights: Sequence[float]) -> tuple[int, ...]:
    """The columns in the tree's level order: those no query filters on (weight 0) first,
    where they take one range each, so the column cut by rows within the groups, the
    finest cut of all, is one that queries filter on.

    >>> level_order([1, 1, 1]), level_order([0.8, 0.2, 0]), level_order([0, 3, 0, 1])
    ((0, 1, 2), (2, 0, 1), (0, 2, 1, 3))
    """
    if not any(w > 0 for w in weights):
        return tuple(range(len(weights)))
    return (*(i for i, w in enumerate(weights) if w <= 0),
            *(i for i, w in enumerate(weights) if w > 0))


def fit(columns: Sequence[np.ndarray], weights: Sequence[float], files: int,
        alpha: float = 1.0, value_ids: Sequence[np.ndarray] | None = None,
        tilt: float = 1.0) -> Tree:
    """Fit the tree on sample columns (comparable arrays: numbers, or strings of one
    width; nulls already mapped below every value) for ``files`` files, cutting at equal
    quantiles of ``alpha`` times the row share plus ``1 - alpha`` times the distinct-value
    share, the column cut by rows weighing ``tilt`` times its weight in the fan-outs.
    ``value_ids`` tell each row's value where a column holds ranks (a rank may hold
    several values); by default the column's own values."""
    if not columns:
        raise ValueError("the balanced layout needs at least one column")
    order = level_order(weights)
    ids = [(columns if value_ids is None else value_ids)[i] for i in order]
    columns = [columns[i] for i in order]
    weights = [weights[i] for i in order]
    weights[-1] *= tilt
    rows = len(columns[0])
    levels = len(columns) - 1
    per_level: list[list[int]] = [[] for _ in range(levels)]

    def split(level: int, index: np.ndarray, budget: float) -> Node:
        if level == levels or budget <= 1 or index.size == 0:
            return Node(columns[min(level, levels)][:0])
        here = [c[index] for c in columns[level:]]
        distinct = [int(np.unique(v).size) for v in here]
        parts = _whole_parts(budget, fan_outs(budget, weights[level:], distinct)[0])
        if level == levels - 1:
            # Groups of at least two files: a group the sample misjudged, or a heavy value
            # that cannot be split, then changes its files' sizes by a part, not a whole.
            parts = min(parts, max(1, math.floor(budget / MIN_GROUP_FILES)))
        # The distinct values counted are this subtree's: its own queries' values.
        cuts = _cut(here[0], parts, None if alpha == 1 else _measure(ids[level][index], alpha))
        per_level[level].append(len(cuts) + 1)
        child = np.searchsorted(cuts, here[0], side="right")
        return Node(cuts, [split(level + 1, index[child == k],
                                 budget * np.count_nonzero(child == k) / index.size)
                           for k in range(len(cuts) + 1)])

    root = split(0, np.arange(rows), float(files))
    return Tree(root, levels, per_level, order, alpha=alpha, tilt=tilt)


def assign(tree: Tree, columns: Sequence[np.ndarray]) -> np.ndarray:
    """The group of every row (ordinals in the tree's order, 0 .. groups - 1)."""
    rows = len(columns[0]) if columns else 0
    group = np.zeros(rows, dtype=np.int64)
    columns = [columns[i] for i in tree.order]

    def walk(node: Node, level: int, index: np.ndarray, first: int) -> int:
        if not node.children:
            group[index] = first
            return first + 1
        child = np.searchsorted(node.cuts, columns[level][index], side="right")
        for k, sub in enumerate(node.children):
            first = walk(sub, level + 1, index[child == k], first)
        return first

    walk(tree.root, 0, np.arange(rows), 0)
    return group


def to_json(tree: Tree) -> dict[str, Any]:
    def node(n: Node) -> Any:
        return {"cuts": n.cuts.tolist(), "children": [node(c) for c in n.children]}

    return {"levels": tree.levels, "fan_outs": tree.fan_outs, "order": list(tree.order),
            "root": node(tree.root), "alpha": tree.alpha, "tilt": tree.tilt,
            **({"curve": tree.curve} if tree.curve else {}),
            **({"compared": {k: asdict(j) for k, j in tree.compared.items()}}
               if tree.compared else {}),
            **({"by_blend": {f"{a}/{t}": asdict(j) for (a, t), j in tree.by_blend.items()}}
               if tree.by_blend else {}),
            **({"skips": {"rows": tree.skips.rows, "values": tree.skips.values}}
               if tree.skips else {})}


def from_json(data: dict[str, Any], kinds: Sequence[str]) -> Tree:
    """The tree of :func:`to_json`, its cuts typed per level as ``kinds`` (numpy dtypes,
    in level order)."""
    def node(n: Any, level: int) -> Node:
        return Node(np.asarray(n["cuts"], dtype=kinds[min(level, len(kinds) - 1)]),
                    [node(c, level + 1) for c in n["children"]])

    levels = int(data["levels"])
    # Trees stored before the level order (or the choice's figures) was recorded kept the
    # columns' own order (and cut at equal rows). Figures of one number per candidate
    # (row-weighted reads, the choice before both models counted) are not kept.
    order = tuple(int(i) for i in data.get("order", range(levels + 1)))
    skips = data.get("skips")

    def judged(figures: Any) -> Judged:
        return Judged(float(figures["rows"]), float(figures["values"]),
                      float(figures["regret"]))

    # Trees stored before the tilt was fitted weighed their blends by alpha alone.
    blends = {(float(a), 1.0): v for a, v in data.get("by_alpha", {}).items()}
    blends.update({(float(k.split("/")[0]), float(k.split("/")[1])): v
                   for k, v in data.get("by_blend", {}).items()})
    return Tree(node(data["root"], 0), levels, data["fan_outs"], order, data.get("curve"),
                {str(k): judged(v) for k, v in data.get("compared", {}).items()
                 if isinstance(v, dict)},
                float(data.get("alpha", 1.0)),
                {blend: judged(v) for blend, v in blends.items()},
                None if skips is None else Skips([float(s) for s in skips["rows"]],
                                                 [float(s) for s in skips["values"]]),
                float(data.get("tilt", 1.0)))


def file_rows(group_rows: Sequence[float], files: int,
              sampled: Sequence[int] | None = None) -> int:
    """The fewest rows per file that cut groups of ``group_rows`` rows (each cut on its
    own) into at most ``files`` files; one file per group when there are more groups.
    With ``sampled`` (the sample rows behind each estimate) every group counts two
    standard errors larger, so a group the sample underestimated does not spill a tiny
    extra file.

    >>> file_rows([2000, 2100, 1900], 6), file_rows([2000, 2100, 1900], 2)
    (1050, 2100)
    >>> file_rows([6000, 1000, 1000], 3)  # the heavy group in 2 files, not 1 of 6x
    3334
    """
    sizes = [max(0.0, float(g)) for g in group_rows]
    # No file above this share of the mean: a group too big for one (a heavy value the
    # layout cannot split) is cut into several rather than written as one huge file.
    cap = max(1, math.ceil(MAX_FILE_SHARE * sum(sizes) / max(files, 1)))
    if sampled is not None:
        sizes = [g * (1 + 2 / math.sqrt(n)) if n else g
                 for g, n in zip(sizes, sampled, strict=True)]
    largest = max(sizes, default=1.0)
    low, high = 1, min(cap, max(1, math.ceil(largest)))
    if len([g for g in sizes if g > 0]) >= files:
        return high
    while low < high:
        middle = (low + high) // 2
        if sum(math.ceil(g / middle) for g in sizes) <= files:
            high = middle
        else:
            low = middle + 1
    return min(low, cap)


def expected_skips(columns: Sequence[np.ndarray], group: np.ndarray,
                   rows_per_file: float, order: np.ndarray | None = None,
                   value_ids: Sequence[np.ndarray] | None = None) -> Skips:
    """Per column and query model, the share of files a point query skips, were the sample
    rows (comparable arrays) written as the build writes all rows: each group sorted by
    ``order`` (default: the last column) and cut every ``rows_per_file`` rows (scaled to
    the sample). Row-weighted probes are the sample rows; value-uniform ones each distinct
    value once (per ``value_ids`` where a column holds ranks of several values each)."""
    if group.size == 0:
        return Skips([0.0] * len(columns), [0.0] * len(columns))
    by_file = np.lexsort((columns[-1] if order is None else order, group))
    grouped = group[by_file]
    starts = np.r_[0, np.flatnonzero(np.diff(grouped)) + 1]
    within = np.arange(grouped.size) - np.repeat(starts, np.diff(np.r_[starts, grouped.size]))
    file = grouped * (grouped.size + 1) + within // max(rows_per_file, 1.0)
    firsts = np.r_[0, np.flatnonzero(np.diff(file)) + 1]
    rows, values = [], []
    for c, column in enumerate(columns):
        in_files = column[by_file]
        low = np.sort(np.minimum.reduceat(in_files, firsts))
        high = np.sort(np.maximum.reduceat(in_files, firsts))
        probes, which = np.unique(column, return_inverse=True)
        # A probe reads the files starting at or below it, less those ending below it.
        reads = (np.searchsorted(low, probes, side="right")
                 - np.searchsorted(high, probes, side="left"))[which]
        ids = column if value_ids is None else value_ids[c]
        a_row_per_value = np.unique(ids, return_index=True)[1]
        rows.append(float(1 - reads.mean() / low.size))
        values.append(float(1 - reads[a_row_per_value].mean() / low.size))
    return Skips(rows, values)


#: How many more files per point query on a column a tree may read than the curve and
#: still count as no worse (:func:`no_less`): less than a sample tells apart, and at
#: 1000 files a tenth of a point of skip.
NO_LOSS_FILES = 1.0

#: How much less regret (:func:`judge`) the curve must have to be kept over the tree: the
#: sample's estimates carry noise, and the tree is the layout asked for.
CURVE_MARGIN = 0.02


def expected_reads(skips: Sequence[float], weights: Sequence[float], files: int) -> float:
    """Files a declared point query reads on average: each column's unskipped files,
    weighed by its share of the queries (equal shares when no column weighs anything).

    >>> round(expected_reads([0.9, 0.8], [3, 1], 100), 6)
    12.5
    """
    shares = list(weights) if any(w > 0 for w in weights) else [1.0] * len(skips)
    return sum(w * (1 - s) for w, s in zip(shares, skips, strict=True)) * files / sum(shares)


def tree_skips(tree: Tree, columns: Sequence[np.ndarray], files: int,
               value_ids: Sequence[np.ndarray] | None = None) -> Skips:
    """:func:`expected_skips` of the sample written as the build writes ``tree``'s groups."""
    group = assign(tree, columns)
    counts = np.bincount(group, minlength=tree.groups)
    return expected_skips(columns, group, file_rows(counts.tolist(), files),
                          order=columns[tree.by_rows], value_ids=value_ids)


def judge(skips: Sequence[Skips], weights: Sequence[float], files: int) -> list[Judged]:
    """Each candidate's files read per declared point query under both query models, and
    its regret: the larger, over the models, of its reads over the fewest any candidate
    reads under that model.

    Fewest files under one model but three times the fewest under the other loses to
    twice the fewest under both:

    >>> best_for_rows, near_both = Skips([0.875], [0.25]), Skips([0.75], [0.75])
    >>> [round(j.regret, 3) for j in judge([best_for_rows, near_both], [1], 8)]
    [3.0, 2.0]
    """
    reads = [s.reads(weights, files) for s in skips]
    # Every sampled value lies in some file: the fewest reads are above zero.
    fewest = [min(r[m] for r in reads) for m in (0, 1)]
    return [Judged(*r, max(r[m] / fewest[m] for m in (0, 1))) for r in reads]


def no_less(skips: Skips, than: Skips, files: int) -> bool:
    """Whether ``skips`` are at least ``than`` on every column under both query models, but
    for :data:`NO_LOSS_FILES` (of ``files``).

    >>> no_less(Skips([0.9, 0.9], [0.9, 0.8]), Skips([0.8, 0.8], [0.8, 0.8]), 100)
    True
    >>> no_less(Skips([0.9, 0.9], [0.9, 0.78]), Skips([0.8, 0.8], [0.8, 0.8]), 100)
    False
    """
    pairs = [*zip(skips.rows, than.rows, strict=True),
             *zip(skips.values, than.values, strict=True)]
    return all((theirs - mine) * files <= NO_LOSS_FILES + 1e-9 for mine, theirs in pairs)


def keep_better(candidates: Sequence[Tree], columns: Sequence[np.ndarray],
                weights: Sequence[float], files: int, curve: str, curve_keys: np.ndarray,
                value_ids: Sequence[np.ndarray] | None = None) -> Tree:
    """Of the fitted trees (one per blend, the first as declared) and the order of
    ``curve`` (its keys of the sample rows), written every way from the sample, the one
    the objective keeps (module docstring). Without a workload (equal ``weights``): of the
    trees skipping no less than the curve on every column under both models (within
    :data:`NO_LOSS_FILES`), the one of
    least regret (:func:`judge`), else the curve. With one: the tree of least regret,
    then the curve if its regret is clearly less. Of the trees the first is kept unless
    another's regret is clearly less. Nested cuts beat the curves on independent columns;
    where columns are correlated and the rows sit near a line, every curve file is a
    narrow box on every column, while a group cut along one column spans its group on the
    others."""
    rows = len(columns[0]) if columns else 0
    if rows == 0 or all(tree.groups <= 1 for tree in candidates):
        return candidates[0]
    skips = [tree_skips(tree, columns, files, value_ids) for tree in candidates]
    skips.append(expected_skips(columns, np.zeros(rows, dtype=np.int64), rows / max(files, 1),
                                order=curve_keys, value_ids=value_ids))
    *trees, of_curve = judge(skips, weights, files)
    by_blend = {(tree.alpha, tree.tilt): j.rounded()
                for tree, j in zip(candidates, trees, strict=True)}
    workload = len(set(weights)) > 1
    allowed = [i for i in range(len(trees)) if workload or no_less(skips[i], skips[-1], files)]
    least = min(allowed or range(len(trees)), key=lambda i: trees[i].regret)
    if 0 in allowed and trees[least].regret >= (1 - ALPHA_MARGIN) * trees[0].regret:
        least = 0
    compared = {"tree": trees[least].rounded(), curve: of_curve.rounded()}
    if allowed and (not workload or of_curve.regret >= (1 - CURVE_MARGIN) * trees[least].regret):
        return replace(candidates[least], compared=compared, by_blend=by_blend,
                       skips=skips[least])
    return Tree(Node(columns[0][:0]), 0, [], tuple(range(len(columns))), curve, compared,
                by_blend=by_blend, skips=skips[-1])


def choose_layout(columns: Sequence[np.ndarray], weights: Sequence[float], files: int,
                  curve: str, curve_keys: np.ndarray,
                  value_ids: Sequence[np.ndarray] | None = None) -> Tree:
    """A build's layout: the tree fitted at each blend of :data:`BLENDS`, or the curve, as
    the objective keeps (:func:`keep_better`)."""
    trees = [fit(columns, weights, files, alpha, value_ids, tilt) for alpha, tilt in BLENDS]
    return keep_better(trees, columns, weights, files, curve, curve_keys, value_ids)
