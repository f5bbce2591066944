"""The warm-up left out of the analysis: a declared count per boot, or the CUSUM test's cut.

A rule is ``"none"``, ``"auto"`` or a count K (as text, ``"2"``). It comes from the run
(``lab run --warmup``, a study file's ``warmup`` key, stored in the ``warmup`` table) or
from ``lab compare``/``lab report --warmup``, which overrides it; runs that declared
nothing keep every sample.

- **K**: the first K iterations of the run after every boot of each guest (boot ids of the
  successful attempts; samples without a boot id, as imported ones, count as one boot);
- **auto**: the leading iterations :func:`lab.stats.warmup.suggest_warmup` (a CUSUM test for
  one change in the mean, significant in the first half) finds in each arm's samples of the
  run, in iteration order.

One cut per comparison: within each run, an iteration left out of one arm is left out of
every arm, so each arm keeps the same iteration numbers. With ``auto`` that is the longer
of the arms' suggested warm-ups, not each arm's own, because

- the arms are then compared over the same iterations, which in a concurrent or synchronised
  run is the same stretch of time: whatever the host was doing then (its page cache filling,
  an NFS server warming up) weighs on both arms' kept samples alike;
- the test finds a warm-up with some power, not with certainty: cutting each arm by its own
  finding would compare one arm's steady state with the other's steady state plus a warm-up
  the test happened to miss, a bias in the direction of whichever detection failed; cutting
  both by the longer one removes it at the cost of a few good samples of the other arm;
- the paired analysis pairs iteration i of A with iteration i of B (the k-th occurrence of
  i with the k-th, when runs are pooled): dropping the same numbers keeps every pair.

A variant whose warm-up is longer (THP faulting memory in, where 1 GiB pages were reserved
up front) is a finding, not noise: each arm's own suggestion is kept and shown beside
what was cut (:class:`ArmCut`), with MSER-5 as a second opinion.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from lab.stats.series import Series, SeriesKey, series_key, unique_labels
from lab.stats.warmup import WarmupSuggestion, discard_per_boot, mser5, suggest_warmup

AUTO = "auto"
NONE = "none"
RECORDED = "recorded with the run"
OVERRIDDEN = "--warmup"
UNDECLARED = "none declared"


def parse_warmup(value: object, allow_none: bool = True) -> str:
    """``"auto"``, ``"none"`` (with ``allow_none``) or a count K as text, from a command line
    (text) or a study file (an integer, or the string "auto"); else ValueError/TypeError."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise TypeError(f"must be a count of iterations or 'auto', not {type(value).__name__}")
    text = str(value).strip().lower()
    if text == AUTO or (allow_none and text == NONE):
        return text
    if text.isascii() and text.isdigit():
        return str(int(text))
    if text.startswith("-") and text[1:].isdigit():
        raise ValueError("must be 0 or more (iterations discarded after every boot)")
    if allow_none:
        raise ValueError("must be a count of iterations (0 or more), 'auto' or 'none'")
    raise ValueError("must be a count of iterations (0 or more) or 'auto'")


def declared_warmup(value: object, n: int, n_name: str = "--n", toml: bool = False) -> str:
    """The warm-up a run declares (``lab run --warmup``, a study file's ``warmup``): "auto"
    or a count below the run's ``n`` (named ``n_name``); in TOML a count is an integer."""
    rule = parse_warmup(value, allow_none=False)
    if rule != AUTO and toml and not isinstance(value, int):
        raise ValueError(f"a count is an integer: write warmup = {rule}, without quotes")
    if rule != AUTO and int(rule) >= n:
        raise ValueError(f"discards every one of the {n_name} = {n} iterations of a boot")
    return rule


def describe_rule(rule: str) -> str:
    """'2 per boot', 'auto (CUSUM test)' or 'none', for tables and notes."""
    if rule == AUTO:
        return "auto (CUSUM test)"
    if rule == NONE:
        return NONE
    return f"{rule} per boot"


@dataclass(frozen=True, eq=False)
class ArmCut:
    """One arm's samples of one run: the rule, what the arm's own samples suggest, the cut."""

    label: str
    run: str  # the run's key
    rule: str  # "none", "auto" or a count K
    source: str  # RECORDED, OVERRIDDEN or UNDECLARED
    samples: int  # before the cut
    boots: int  # distinct boots among them ("" counts as one)
    own: tuple[int, ...]  # iterations this arm's rule alone discards
    discarded: tuple[int, ...]  # iterations discarded: own, and those of the other arms
    cusum: WarmupSuggestion  # on this arm's samples of the run, in iteration order
    mser: WarmupSuggestion


@dataclass(frozen=True, eq=False)
class WarmupCut:
    """What the warm-up rules took out of one (study, workload, metric)."""

    study: str
    workload: str
    metric: str
    arms: tuple[ArmCut, ...]  # per arm, then per run

    @property
    def discarded(self) -> int:
        return sum(len(a.discarded) for a in self.arms)


@dataclass(frozen=True, eq=False)
class Trimmed:
    """The series without their warm-up, the kept samples and what was cut, and why."""

    series: list[Series]
    keep: dict[SeriesKey, np.ndarray]  # per series: which of its samples were kept
    cuts: dict[tuple[str, str, str], WarmupCut]

    def aligned(self, arrays: Mapping[SeriesKey, np.ndarray]) -> dict[SeriesKey, np.ndarray]:
        """Arrays aligned with the original series (placement labels) cut the same way."""
        return {
            k: a[self.keep[k]] if k in self.keep and not self.keep[k].all() else a
            for k, a in arrays.items()
        }


def _segment(
    s: Series, origin: tuple[np.ndarray, np.ndarray], run_id: int, rule: str
) -> tuple[np.ndarray, int, WarmupSuggestion, WarmupSuggestion]:
    """(iterations the rule discards, boots, CUSUM, MSER-5) of one arm's samples of a run."""
    runs, boots = origin
    iterations, values, boot = s.iterations, s.values, boots
    inside = runs == run_id
    if not inside.all():  # runs pooled: this run's part (copies of a million samples cost)
        iterations, values, boot = iterations[inside], values[inside], boot[inside]
    if np.any(iterations[1:] < iterations[:-1]):  # stored by iteration; made sure of here
        order = np.argsort(iterations, kind="stable")
        iterations, values, boot = iterations[order], values[order], boot[order]
    cusum, mser = suggest_warmup(values), mser5(values)
    if rule == AUTO:
        own = iterations[: cusum.n]
    elif rule == NONE:
        own = iterations[:0]
    else:
        own = discard_per_boot(iterations, values, boot, int(rule)).discarded_iterations
    return own, _distinct(boot), cusum, mser


def _distinct(boot: np.ndarray) -> int:
    """How many boots: distinct among the first of each run of equal ids (a set of every
    sample's id cost a fifth of a second per million)."""
    if boot.size == 0:
        return 0
    firsts = boot[np.concatenate([[True], boot[1:] != boot[:-1]])]
    return len({str(b) for b in firsts})


def cut_warmup(
    series: Sequence[Series],
    boots: Mapping[SeriesKey, tuple[np.ndarray, np.ndarray]],
    recorded: Mapping[int, str],
    run_keys: Mapping[int, str],
    override: str | None = None,
) -> Trimmed:
    """Every series without the warm-up its runs declared (``recorded``: run id -> rule),
    or ``override`` ("none", "auto", "K") for every run.

    ``boots`` is :meth:`lab.store.Store.sample_boots`: each sample's run id and boot id.
    """
    groups: dict[tuple[str, str, str], list[Series]] = {}
    for s in series:
        groups.setdefault((s.study, s.workload, s.metric), []).append(s)
    keep: dict[SeriesKey, np.ndarray] = {}
    cuts: dict[tuple[str, str, str], WarmupCut] = {}
    for key, group in groups.items():
        unknown = (np.zeros(0, np.int64), np.zeros(0, object))
        origin = [boots.get(series_key(s), unknown) for s in group]
        labels = unique_labels(group)  # as lab.stats.analysis labels the arms
        masks = [np.ones(s.values.size, dtype=bool) for s in group]
        arms: list[tuple[int, ArmCut]] = []  # (the arm's place in the group, its cut)
        for run_id in _in_order_of_appearance([runs for runs, _ in origin]):
            rule = override or recorded.get(run_id, NONE)
            source = OVERRIDDEN if override else RECORDED if run_id in recorded else UNDECLARED
            members = [i for i, (runs, _) in enumerate(origin) if np.any(runs == run_id)]
            found = {i: _segment(group[i], origin[i], run_id, rule) for i in members}
            union = np.unique(np.concatenate([f[0] for f in found.values()]))
            for i in members:
                s, inside = group[i], origin[i][0] == run_id
                dropped = inside & np.isin(s.iterations, union)
                masks[i] &= ~dropped
                own, boot_count, cusum, mser = found[i]
                arms.append((i, ArmCut(
                    label=labels[i], run=run_keys.get(run_id, str(run_id)), rule=rule,
                    source=source, samples=int(inside.sum()), boots=boot_count,
                    own=tuple(int(j) for j in own),
                    discarded=tuple(int(j) for j in np.sort(s.iterations[dropped])),
                    cusum=cusum, mser=mser,
                )))  # fmt: skip
        keep.update((series_key(s), m) for s, m in zip(group, masks, strict=True))
        arms.sort(key=lambda a: a[0])  # per arm, then per run (a stable sort)
        cuts[key] = WarmupCut(*key, arms=tuple(a for _, a in arms))
    trimmed = [_kept(s, keep[series_key(s)]) for s in series]
    return Trimmed(trimmed, keep, cuts)


def _kept(s: Series, keep: np.ndarray) -> Series:
    """``s`` with only the samples ``keep`` marks: ``s`` itself where it marks them all (no
    warm-up to cut, as usual: copies of 2 × 3.1M samples took 99 MB)."""
    if keep.all():
        return s
    return replace(s, iterations=s.iterations[keep], values=s.values[keep])


def _in_order_of_appearance(parts: Sequence[np.ndarray]) -> list[int]:
    """The distinct run ids of the arrays, in the order they first appear: among the first
    id of each run of equal ids (a run's samples are stored together), not every sample's."""
    joined = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
    starts = joined[np.concatenate([[True], joined[1:] != joined[:-1]])] if joined.size else joined
    ids, first = np.unique(starts, return_index=True)
    return [int(i) for i in ids[np.argsort(first)]]
