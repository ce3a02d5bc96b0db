"""The ranked runs of a store's pairs (SPEC §9, §15): what they must be, against the pairs they rank.

An extension reads a stored stream by rank (:class:`pickscale.metrics.ranked_runs.RankedStream`): its order
statistics are those of the ranked copy, not of the pairs.  So a store that keeps one is refused when:

- its runs (``attrs["pair_runs"]``) do not cover its pairs, a run crosses a segment's end, or a run's rows
  are not all pairs of the dataset, model and phase it names (every opening: the attributes and the pairs'
  index variables' shape only, and whole openings the indices themselves);
- its block table has another number of blocks or levels than its runs and the grid give (every opening);
- a run's ranked copy is not its pairs' residuals and levels, ranked, or its block table not that copy's
  (whole openings, which read every pair: a lazy opening takes them as stored, as it takes the timing
  readings).
"""

from __future__ import annotations

import pathlib
from typing import TYPE_CHECKING

import numpy as np
import xarray as xr

from ...metrics.ranked_runs import block_table
from ...metrics.split_stream import BLOCK
from ...metrics.timing import levels_of
from ...options import PHASES
from ...results.variables import RANKED, RUNS
from ...results.variables import residual_ns as residual_ns_of
from ..segments import segments_of
from .refusal import _bad_variable

if TYPE_CHECKING:
    from ...options import Options

__all__ = ["check_ranked"]


def check_ranked(store: pathlib.Path, ds: xr.Dataset, options: Options, *, pairs: bool) -> None:
    """Refuse ranked runs that do not rank ``ds``'s pairs (module docstring); ``pairs``: read every pair."""
    have = [name for name in RANKED if name in ds.variables]
    runs = ds.attrs.get(RUNS)
    if not have and runs is None:
        return  # (a store written before it kept its pairs ranked)
    if len(have) < len(RANKED) or not isinstance(runs, list):
        raise _bad_variable(store, ds, RUNS if isinstance(runs, list) else "ranked_residual",
                            "comes without the rest of the ranked runs (ranked_*, attrs['pair_runs']; SPEC §9)")
    n = int(ds.sizes.get("pair", 0))
    try:
        listed = [(str(d), str(m), PHASES.index(str(p)), int(k)) for d, m, p, k in runs]
    except (TypeError, ValueError) as error:
        raise _bad_variable(store, ds, RUNS, f"must list [dataset, model, phase, pairs] runs ({error})") from None
    if any(k <= 0 for *_, k in listed) or sum(k for *_, k in listed) != n:
        raise _bad_variable(store, ds, RUNS, f"must list runs of at least one pair covering the {n} pairs")
    ends = set(np.cumsum(segments_of(ds.attrs, n)).tolist())
    starts = np.r_[0, np.cumsum([k for *_, k in listed])[:-1]].astype(np.int64).tolist() if listed else []
    for lo, (*_, k) in zip(starts, listed):
        if any(lo < end < lo + k for end in ends):
            raise _bad_variable(store, ds, RUNS, f"has a run over rows {lo}–{lo + k - 1} across a segment's end")
    blocks = sum(-(-k // BLOCK) for *_, k in listed)
    width = options.grid.size + 1
    if ds.variables["ranked_first"].shape != (blocks,) or ds.variables["ranked_counts"].shape != (blocks, width):
        raise _bad_variable(store, ds, "ranked_counts", f"must hold {blocks} blocks of {width} levels, the runs' "
                            f"blocks of {BLOCK} pairs (it holds {ds.variables['ranked_counts'].shape})")
    d_at = {str(d): i for i, d in enumerate(ds["dataset"].values)}
    m_at = {str(m): i for i, m in enumerate(ds["model"].values)}
    first = np.asarray(ds["ranked_first"].values)
    counts = np.asarray(ds["ranked_counts"].values)
    _check_tables(store, ds, listed, first, counts, d_at, m_at)
    if not pairs:
        return
    block = 0
    for (d, m, p, k), lo in zip(listed, starts):
        rows = slice(lo, lo + k)
        where = f"in the run of rows {lo}–{lo + k - 1} ({d}, {m}, {PHASES[p]})"
        index = {name: np.asarray(ds[name].isel(pair=rows).values) for name in ("pair_dataset", "pair_model",
                                                                                 "pair_phase")}
        if (d not in d_at or m not in m_at or (index["pair_dataset"] != d_at[d]).any()
                or (index["pair_model"] != m_at[m]).any() or (index["pair_phase"] != p).any()):
            raise _bad_variable(store, ds, RUNS, f"names a stream {where} whose pairs are of another one")
        e = residual_ns_of(ds["residual"].isel(pair=rows).values)
        level = levels_of(ds["pair_conf"].isel(pair=rows).values, options.grid)
        order = np.lexsort((level, e))
        ranked_e = np.asarray(ds["ranked_residual"].isel(pair=rows).values).astype(np.int64)
        ranked_level = np.asarray(ds["ranked_level"].isel(pair=rows).values).astype(np.int64)
        if not (np.array_equal(ranked_e, e[order]) and np.array_equal(ranked_level, level[order])):
            raise _bad_variable(store, ds, "ranked_residual", f"must be the pairs' residuals and levels ranked {where}")
        n_blocks = -(-k // BLOCK)
        want_first, want_counts = block_table(ranked_e, ranked_level, options.grid.size)
        if not (np.array_equal(first[block:block + n_blocks], want_first)
                and np.array_equal(counts[block:block + n_blocks], want_counts)):
            raise _bad_variable(store, ds, "ranked_counts", f"must be the blocks of the ranked residuals {where}")
        block += n_blocks


def _check_tables(store: pathlib.Path, ds: xr.Dataset, listed: list[tuple[str, str, int, int]], first: np.ndarray,
                  counts: np.ndarray, d_at: dict[str, int], m_at: dict[str, int]) -> None:
    """What the block tables must be whatever the pairs (every opening): each run's blocks holding its pairs,
    their first residuals ascending, and a stream's rows per level over its runs those of its exact sums
    (``residual_sums``, SPEC §5)."""
    per_stream: dict[tuple[int, int, int], np.ndarray] = {}
    block = 0
    for d, m, p, k in listed:
        n_blocks = -(-k // BLOCK)
        rows = counts[block:block + n_blocks]
        if d not in d_at or m not in m_at:
            raise _bad_variable(store, ds, RUNS, f"names a dataset or model the results do not hold ({d}, {m})")
        if (rows < 0).any() or rows.sum(axis=1).tolist() != [min(BLOCK, k - i * BLOCK) for i in range(n_blocks)]:
            raise _bad_variable(store, ds, "ranked_counts", f"must count the {k} pairs of the run ({d}, {m}, "
                                f"{PHASES[p]}) in blocks of {BLOCK}")
        if (np.diff(first[block:block + n_blocks]) < 0).any():
            raise _bad_variable(store, ds, "ranked_first", f"must ascend within the run ({d}, {m}, {PHASES[p]})")
        key = (d_at[d], m_at[m], p)
        per_stream[key] = per_stream.get(key, 0) + rows.sum(axis=0)
        block += n_blocks
    if "residual_sums" not in ds.variables:
        return
    kept = np.asarray(ds["residual_sums"].transpose("dataset", "model", "phase", "level", "residual_term").values)
    want = np.zeros(kept.shape[:4], np.int64)
    for key, levels in per_stream.items():
        want[key] = levels
    if not np.array_equal(want, kept[..., 0]):
        raise _bad_variable(store, ds, "ranked_counts", "must count, stream by stream, the pairs per level that "
                            "residual_sums counts (SPEC §5, §9)")
