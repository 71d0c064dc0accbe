"""Model configs that look like zspark's but are not (pure Python).

dbt keeps any config a model sets, known or not, and zspark reads only its own by name: a
``hilbrt_by`` builds an unclustered table without a word, a ``layout: hilbert`` is never
read. :func:`misnamed_configs` names such a config with the one meant, so that a run can
warn about it (``services/builds.py``). It flags a config that no one knows (neither
zspark, whose configs the caller passes, nor dbt) when it is

- within an edit distance of one or two of a zspark config (case aside; two only between
  names of six letters or more, one from four, none below), or
- a ``*_by`` (or ``*by``) config, as zspark's layouts are: it chooses no layout, or
- ``layout`` (or ``layouts``): a layout is chosen by its own config, set to the columns.

>>> [m.meant for m in misnamed_configs({"hilbrt_by": ["a"], "tags": []}, ["hilbert_by"],
...                                    ["hilbert_by"], known=["tags"])]
[('hilbert_by',)]
>>> edit_distance("hilbert_by", "hilbetr_by")  # a swap of neighbours is one edit
1
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

#: Configs that name a layout as a value, which zspark takes from the config's own name.
LAYOUT_WORDS = ("layout", "layouts")


@dataclass(frozen=True)
class MisnamedConfig:
    """A config a model set that zspark does not read, and the zspark configs meant."""

    given: str
    #: The zspark configs it looks like (the nearest, several when tied); empty: none.
    meant: tuple[str, ...]
    message: str


def edit_distance(a: str, b: str) -> int:
    """The Damerau-Levenshtein distance of ``a`` and ``b`` (its optimal-string-alignment
    form): insertions, deletions, substitutions and swaps of two neighbours, one each.

    >>> edit_distance("gray_by", "gary_by"), edit_distance("tags", "zorder_by")
    (1, 9)
    """
    previous: list[int] = []
    row = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        before, previous, row = previous, row, [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            row[j] = min(previous[j] + 1, row[j - 1] + 1,
                         previous[j - 1] + (a[i - 1] != b[j - 1]))
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                row[j] = min(row[j], before[j - 2] + 1)
    return row[len(b)]


def allowed_distance(a: str, b: str) -> int:
    """The largest edit distance at which ``a`` still looks like ``b``: two between names
    of six letters or more, one from four, none below (``tags`` is no near miss)."""
    shorter = min(len(a), len(b))
    return 2 if shorter >= 6 else 1 if shorter >= 4 else 0


def nearest(given: str, names: Iterable[str]) -> tuple[str, ...]:
    """The ``names`` nearest to ``given`` (case aside), several when tied, in the order
    given; empty when none is within :func:`allowed_distance`.

    >>> nearest("Zorder_By", ["zorder_by", "gray_by"]), nearest("order_id", ["zorder_by"])
    (('zorder_by',), ())
    """
    lowered = given.lower()
    near = [(distance, name) for name in dict.fromkeys(names)
            if (distance := edit_distance(lowered, name.lower()))
            <= allowed_distance(lowered, name)]
    best = min((distance for distance, _ in near), default=None)
    return tuple(name for distance, name in near if distance == best)


def misnamed_configs(config: Mapping[str, object], zspark: Iterable[str],
                     layouts: Sequence[str], known: Iterable[str] = ()) -> list[MisnamedConfig]:
    """The configs of a model's ``config`` (every key it set) that look like zspark's but
    are not, in its order. ``zspark``: the configs zspark reads; ``layouts``: those that
    choose a layout (``zorder_by``, ...); ``known``: every other config (dbt's), never
    flagged. A key is compared as it is spelt: ``Hilbert_By`` is not ``hilbert_by``.

    >>> for m in misnamed_configs({"sort_by": "a"}, [], ["zorder_by", "gray_by"]):
    ...     print(m.message)  # doctest: +NORMALIZE_WHITESPACE
    config 'sort_by' is not a zspark config and chooses no layout; a layout is chosen by
    zorder_by or gray_by. It was ignored.
    """
    ours = tuple(dict.fromkeys((*zspark, *layouts)))
    known_names = {*ours, *known}
    layout_list = _either(list(layouts))
    found = []
    for given, value in config.items():
        if not isinstance(given, str) or given in known_names:
            continue
        meant = nearest(given, ours)
        if given.lower() in LAYOUT_WORDS:
            meant = _layout_named(value, layouts)
            message = (f"config '{given}' is not a zspark config; "
                       + (f"did you mean {_quoted(meant)}? A" if meant else "a")
                       + f" layout is chosen by its own config, set to the columns to "
                       f"cluster by: {layout_list}.")
        elif meant:
            message = f"config '{given}' is not a zspark config; did you mean {_quoted(meant)}?"
        elif given.lower().endswith("by"):
            message = (f"config '{given}' is not a zspark config and chooses no layout; a "
                       f"layout is chosen by {layout_list}.")
        else:
            continue
        found.append(MisnamedConfig(given, meant, f"{message} It was ignored."))
    return found


def _layout_named(value: object, layouts: Sequence[str]) -> tuple[str, ...]:
    """The layout configs a ``layout`` config's value names (``'hilbrt'``: hilbert_by)."""
    if not isinstance(value, str):
        return ()
    by_name = {layout.removesuffix("_by"): layout for layout in layouts}
    return tuple(by_name[name] for name in nearest(value.lower().removesuffix("_by"), by_name))


def _quoted(names: Sequence[str]) -> str:
    return " or ".join(f"'{name}'" for name in names)


def _either(names: list[str]) -> str:
    return ", ".join(names[:-1]) + " or " * (len(names) > 1) + "".join(names[-1:])
