"""Exercise (notebook 41): ``column_sum(a, out, accumulate)``, the bias gradient db = 1^T dZ; the
solution is ``kernels/reduce/v1_column_sum.py``.

Where there are more columns than rows, the output fixes the weight each row was added with (an
exact least-squares solve): which rows are missing or counted twice says whether the stride or
the tree is at fault.
"""

from __future__ import annotations

import numpy as np

from ...kernels import reduce
from ...kernels.geometry import blocks_for
from . import locate, symptoms
from .base import Mistake
from .kernel_runs import KernelExercise, Probe

R, C = reduce.ROW_THREADS, reduce.COLUMNS
ODD_ROWS, COLS = 3 * R + 1, C + 5
ODD = f"{ODD_ROWS} x {COLS}: a block of {C} columns and part of a second, {R} threads down each"
SQUARE = f"{COLS} x {COLS}: as many rows as columns"
ACCUMULATE = f"{2 * R + 1} x {COLS} with accumulate=True: out holds values to add to"
FEW_ROWS = f"{R - 1} x 5: fewer rows than threads down a column"


def sum_inputs(rows: int, cols: int, seed: int, accumulate: bool = False):
    def make() -> dict:
        rng = np.random.default_rng(seed)
        a = rng.standard_normal((rows, cols)).astype(np.float32)
        out = rng.standard_normal(cols).astype(np.float32) if accumulate else np.full(cols, np.nan, np.float32)
        return {"a": a, "out": out}

    return make


def odd_weights(evidence) -> np.ndarray | None:
    """The whole number of times the odd probe's out (its first thread order) added each row of a
    (out = w @ a), or None."""
    result = evidence.probe(ODD)
    if result.error is not None or not np.isfinite(result.outputs["out"]).all():
        return None
    a, out = result.inputs["a"].astype(np.float64), result.outputs["out"].astype(np.float64)
    weights = np.linalg.lstsq(a.T, out, rcond=None)[0]
    whole = np.round(weights)
    scale = float(np.abs(a).sum(axis=0).max())
    if np.abs(weights - whole).max() > 1e-3 or np.abs(a.T @ whole - out).max() > 1e-4 * scale:
        return None
    return whole.astype(int)


def by_thread(weights: np.ndarray) -> np.ndarray | None:
    """The weight of each thread ty's rows (ty, ty + R, ...) when all rows of a thread share one; else None."""
    per_thread = [set(weights[y::R]) for y in range(R)]
    return np.array([s.pop() for s in per_thread]) if all(len(s) == 1 for s in per_thread) else None


def rows_left_out(by_tree: bool):
    """Some rows are never added: by whole threads (``by_tree``: the tree drops sums) or not (the stride)."""

    def detect(evidence):
        weights = odd_weights(evidence)
        if weights is None or weights.min() != 0 or weights.max() != 1:
            return None
        threads = by_thread(weights)
        if (threads is not None) != by_tree:
            return None
        if by_tree:
            lost = np.flatnonzero(threads == 0)
            kept = ", ".join(map(str, np.flatnonzero(threads)))
            return (f"out equals the sum of the rows of threads ty = {kept} alone: the partial sums of threads "
                    f"ty = {', '.join(map(str, lost))} never reach out (probe: {ODD})")
        return (f"out equals a sum without {locate.spans(np.flatnonzero(weights == 0), weights.size, 'row')} "
                f"of a (probe: {ODD})")

    return detect


def order_dependent_with_nan(nan: bool):
    """The thread orders differ, with NaN in one (a sum read before it was stored) or in neither."""
    detect_order = symptoms.order_dependent(ODD)

    def detect(evidence):
        where = detect_order(evidence)
        result = evidence.probe(ODD)
        if where is None or any(not np.isfinite(o.outputs["out"]).all() for o in result.outcomes) != nan:
            return None
        return where + ("; NaN is shared memory nobody had stored yet" if nan else "")

    return detect


def added_to_nan(evidence):
    """Without accumulate out comes back NaN, with it right: out is always added to."""
    result, accumulated = evidence.probe(ODD), evidence.probe(ACCUMULATE)
    if result.error is not None or result.order_dependent() or np.isfinite(result.outputs["out"]).any():
        return None
    if accumulated.error is not None or accumulated.wrong(evidence.exercise):
        return None
    return (f"with accumulate=False, every element of out is NaN, its value before the launch plus the sum "
            f"(probe: {ODD})")


def launch(kernel, arrays: dict) -> None:
    a, out = arrays["a"], arrays["out"]
    kernel[blocks_for(a.shape[1], C), (C, R)](a, out, bool(arrays.get("accumulate", False)))


def expected(inputs: dict) -> dict:
    total = inputs["a"].astype(np.float64).sum(axis=0)
    before = inputs["out"].astype(np.float64)
    return {"out": total if np.isnan(before).all() else before + total}


EXERCISE = KernelExercise(
    name="column_sum", notebook="41", difficulty="medium",
    title=("the kernel column_sum(a, out, accumulate): out[j] = sum of column j of a (out[j] += it with "
           f"accumulate); a block of {C} columns x ROW_THREADS threads down them, partial sums added in a "
           "shared-memory tree"),
    hints=(
        ('Each column has ROW_THREADS threads: which rows does each one add up, so that every row is '
         'added exactly once, and how do the ROW_THREADS sums of a column become one, when a thread '
         'cannot read the registers of another?'),
        ("Each thread adds up a strided share of one column's rows; the block then combines its "
         "threads' shares in shared memory by halving, a tree, waiting after each level. Which "
         "thread writes the column's result, and what does accumulate change?"),
        ('acc = float32(0.0); if col < cols: for r in range(ty, rows, ROW_THREADS): acc += a[r, '
         'col]; partial[ty, tx] = acc; cuda.syncthreads(); half = ROW_THREADS // 2; while half > 0: '
         '(if ty < half: partial[ty, tx] += partial[ty + half, tx]); cuda.syncthreads(); half //= 2; '
         'then if ty == 0 and col < cols: out[col] += partial[0, tx] if accumulate, else out[col] = '
         'partial[0, tx]'),
    ),
    solution=lambda: reduce.column_sum_kernel(R),
    source=f"fastlstm_lib/kernels/reduce/v1_column_sum.py (row_threads is ROW_THREADS, {R} here)",
    launch=launch, expected=expected, outputs={"out": ("column",)},
    probes=(Probe(ODD, sum_inputs(ODD_ROWS, COLS, seed=11)),
            Probe(SQUARE, sum_inputs(COLS, COLS, seed=12)),
            Probe(ACCUMULATE, sum_inputs(2 * R + 1, COLS, seed=13, accumulate=True), flags=(("accumulate", True),)),
            Probe(FEW_ROWS, sum_inputs(R - 1, 5, seed=14))),
    catalog=(
        Mistake("rows_and_columns_swapped", "the sum runs along a row of a, not down a column",
                "a[r, col] is row r of column col: thread (tx, ty) walks down its column, the row index r changing",
                symptoms.equals(SQUARE, "out", lambda inputs: inputs["a"].astype(np.float64).sum(axis=1), "the row sums of a")),
        Mistake("accumulate_always", "out is added to even when accumulate is False",
                "with accumulate=False the column's total replaces out[col] (`out[col] = ...`); only with "
                "accumulate=True is it added to what out holds",
                added_to_nan),
        Mistake("same_columns_every_block", "every block sums the same columns",
                "the block's columns start at blockIdx.x * COLUMNS: col = cuda.blockIdx.x * COLUMNS + tx",
                symptoms.written_only(ODD, "out", symptoms.first(C))),
        Mistake("unguarded_column_edge", "the columns past the last one are not guarded",
                "the last block's tile hangs past the last column: its threads there load nothing "
                "(`if col < cols:` around the loop) and write nothing (`and col < cols` on the write)",
                symptoms.past_edge(ODD, "out")),
        Mistake("missing_sync_before_tree", "no barrier between storing the partial sums and adding them up",
                "cuda.syncthreads() right after `partial[ty, tx] = acc`: the tree reads the partial sums of other "
                "threads, which must all be stored first",
                order_dependent_with_nan(True)),
        Mistake("every_thread_writes", "every thread of a column writes out[col], not thread ty = 0 alone",
                "after the tree partial[0, tx] holds the column's total, and one thread must write it: "
                "`if ty == 0 and col < cols:` (on a GPU, several threads adding to out[col] at once also race)",
                symptoms.equals(ACCUMULATE, "out", lambda inputs: inputs["out"] + R * inputs["a"].astype(np.float64).sum(axis=0),
                                f"its old values plus {R} times the sum")),
        Mistake("missing_sync_in_tree", "no barrier between the levels of the tree",
                "cuda.syncthreads() at the end of every level, inside the loop: the next level reads sums this level "
                "has just written, some by other threads",
                order_dependent_with_nan(False)),
        Mistake("tree_drops_partial_sums", "the tree stops before it has added every partial sum",
                "halve until 1 is done: `while half > 0` (a tree over ROW_THREADS sums has log2(ROW_THREADS) levels)",
                rows_left_out(by_tree=True)),
        Mistake("stride_skips_rows", "the loop down the column skips rows",
                "the ROW_THREADS threads of a column share its rows: thread ty takes rows ty, ty + ROW_THREADS, "
                "ty + 2 ROW_THREADS, ... (a step of ROW_THREADS, not COLUMNS or blockDim.x)",
                rows_left_out(by_tree=False)),
        Mistake("accumulate_ignored", "accumulate is ignored: out is overwritten",
                "with accumulate=True, add the column's total to what out holds: `out[col] += partial[0, tx]`",
                symptoms.equals(ACCUMULATE, "out", lambda inputs: inputs["a"].astype(np.float64).sum(axis=0),
                                "the sum alone, without out's old values")),
    ),
)
