"""Exercise (notebook 12): the shared-memory tile loads of ``tiled_gemm`` and its two barriers; the
solution is ``kernels/gemm/v1_tiled``. Probes at sizes off the tile edges, exact tiles, one slab."""

from __future__ import annotations

import numpy as np

from ...kernels import gemm
from .base import Mistake
from .kernel_runs import KernelExercise, Probe
from . import symptoms

TILE = gemm.TILE
ODD = f"odd sizes: C ({TILE + 1} x {2 * TILE - 1}) = A @ B, K = {2 * TILE + 1}"
EXACT = f"exact tiles: C ({2 * TILE} x {2 * TILE}), K = {2 * TILE}"
ONE_SLAB = f"one slab: C ({TILE + 1} x {TILE + 3}), K = {TILE - 1}"


def gemm_inputs(m: int, n: int, k: int, seed: int):
    def make() -> dict:
        rng = np.random.default_rng(seed)
        return {"a": rng.standard_normal((m, k)).astype(np.float32),
                "b": rng.standard_normal((k, n)).astype(np.float32),
                "c": np.full((m, n), np.nan, dtype=np.float32)}

    return make


def right_on_tiles_only(evidence):
    """Right at exact tile sizes, wrong (deterministically) as soon as a matrix edge cuts a tile."""
    exact, odd = evidence.probe(EXACT), evidence.probe(ODD)
    if exact.error or odd.error or exact.wrong(evidence.exercise) or odd.order_dependent():
        return None
    wrong = odd.wrong(evidence.exercise)
    return f"right at exact tile sizes, but {wrong}" if wrong else None


def wrong_without_edges(evidence):
    """Wrong even where no edge is involved, and the same in both thread orders."""
    exact = evidence.probe(EXACT)
    if exact.error is None and not exact.order_dependent():
        return exact.wrong(evidence.exercise)
    return None


def launch(kernel, arrays: dict) -> None:
    m, n = arrays["c"].shape
    kernel[(-(-n // TILE), -(-m // TILE)), (TILE, TILE)](arrays["a"], arrays["b"], arrays["c"], False)


EXERCISE = KernelExercise(
    name="tile_loads", notebook="12", difficulty="medium",
    title=("in tiled_gemm, load one element of A and one of B into the shared tiles (zero past the edges of "
           "the matrices), and put the two cuda.syncthreads() where the block must wait"),
    hints=(
        ('Each thread of the block fills one element of each shared tile, per slab of K. What '
         'must every thread wait for before it reads the tiles, and before the next slab '
         'overwrites them?'),
        ("A thread's tile element of A lies in its output row, of B in its output column; its "
         'other index moves along k from the slab\'s start: which of the thread\'s two indices '
         'gives it? An element past a matrix\'s edge must add nothing to any sum. Then the two '
         'moments when one thread may get ahead of another: before reading, and before refilling.'),
        ('a_tile[ty, tx] = a[row, k0 + tx] if row < m and k0 + tx < k_total else 0.0; the same '
         'for b_tile[ty, tx] from b[k0 + ty, col] (k0 + ty < k_total, col < n); '
         'cuda.syncthreads() after the two loads and again after the k loop.'),
    ),
    solution=lambda: gemm.tiled_gemm_kernel(TILE), source="fastlstm_lib/kernels/gemm/v1_tiled.py (tile is TILE)",
    launch=launch, expected=lambda inputs: {"c": inputs["a"].astype(np.float64) @ inputs["b"].astype(np.float64)},
    outputs={"c": ("row", "column")},
    probes=(Probe(ODD, gemm_inputs(TILE + 1, 2 * TILE - 1, 2 * TILE + 1, seed=3)),
            Probe(EXACT, gemm_inputs(2 * TILE, 2 * TILE, 2 * TILE, seed=4)),
            Probe(ONE_SLAB, gemm_inputs(TILE + 1, TILE + 3, TILE - 1, seed=5))),
    catalog=(
        Mistake(
            "unguarded_load", "the tile loads are not guarded at the edges of the matrices",
            "a thread whose row, column or k falls outside A or B must load 0.0 instead of reading: "
            "`a[row, a_col] if (row < m and a_col < k_total) else float32(0.0)`",
            symptoms.past_edge(ODD, "c")),
        Mistake(
            "missing_sync_after_loads", "no barrier between loading the tiles and reading them",
            "cuda.syncthreads() right after the two loads: every thread reads a whole row of one tile and a whole "
            "column of the other, most of them loaded by other threads",
            symptoms.order_dependent(ONE_SLAB)),
        Mistake(
            "missing_sync_before_next_loads", "no barrier between reading the tiles and loading the next slab",
            "cuda.syncthreads() at the end of each slab: otherwise a fast thread loads the next slab over values "
            "that slower threads are still multiplying",
            symptoms.order_dependent(ODD)),
        Mistake(
            "wrong_load_index", "the loads put elements in the wrong places of the tiles",
            "thread (ty, tx) stores A's element at a_tile[ty, tx] and B's at b_tile[ty, tx]; the multiply-adds read "
            "a_tile[ty, kk] (a row of A) and b_tile[kk, tx] (a column of B)",
            wrong_without_edges),
        Mistake(
            "edge_not_zeroed", "the tile entries past an edge are skipped, not zeroed",
            "an `if` that skips the load leaves the previous slab's value in the tile, and it is multiplied in: "
            "store 0.0 there instead (`... else float32(0.0)`)",
            right_on_tiles_only),
    ),
)
