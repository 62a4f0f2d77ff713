"""Scratch kernels of known shared-memory patterns, for tests/test_wavefronts.py: each reads one
shared array once per thread, its lanes' addresses chosen so the standard bank rules give a known
count of wavefronts. ``known()`` measures them all (``compile_matrix.wavefronts.measure``); it runs
on the simulator, in a process of its own (``wavefronts.in_simulator``), GPU or not.
"""

import numpy as np
from numba import cuda, float32

from fastlstm_lib.kernels.vector import load_vector

WORDS = 1024
load2, load4 = load_vector(2, ndim=1), load_vector(4, ndim=1)


@cuda.jit
def conflict_free(out):
    """Lane l reads word l: 32 banks, one word each."""
    tile = cuda.shared.array(WORDS, float32)
    out[cuda.threadIdx.x] = tile[cuda.threadIdx.x % 32]


@cuda.jit
def two_way(out):
    """Lane l reads word 2l: lanes l and l + 16 on one bank, different words."""
    tile = cuda.shared.array(WORDS, float32)
    out[cuda.threadIdx.x] = tile[2 * (cuda.threadIdx.x % 32)]


@cuda.jit
def thirty_two_way(out):
    """Lane l reads word 32l: every lane on bank 0, 32 different words."""
    tile = cuda.shared.array(WORDS, float32)
    out[cuda.threadIdx.x] = tile[32 * (cuda.threadIdx.x % 32)]


@cuda.jit
def broadcast(out):
    """Every lane reads word 0."""
    tile = cuda.shared.array(WORDS, float32)
    out[cuda.threadIdx.x] = tile[0]


@cuda.jit
def rows_of_a_view(out):
    """Even lanes read word 0 of row 0 of a (2, 32) tile, odd lanes word 0 of row 1, each row taken as a
    view (tile[lane % 2]): words 0 and 32, one bank, a 2-way conflict (1 wavefront were the views' offsets lost)."""
    tile = cuda.shared.array((2, 32), float32)
    row = tile[cuda.threadIdx.x % 2]
    out[cuda.threadIdx.x] = row[0]


@cuda.jit
def lds64(out):
    """Lane l reads 2 floats at word 2l (one 64-bit load): each half-warp 32 different words on 32 banks."""
    tile = cuda.shared.array(WORDS, float32)
    values = load2(tile, 2 * (cuda.threadIdx.x % 32))
    out[cuda.threadIdx.x] = values[0] + values[1]


@cuda.jit
def lds128_distinct(out):
    """Lane l reads 4 floats at word 4l (one 128-bit load): each quarter-warp 8 distinct 16-byte words, one per
    bank quad, no neighbouring lanes sharing one: 4 passes, not halved."""
    tile = cuda.shared.array(WORDS, float32)
    values = load4(tile, 4 * (cuda.threadIdx.x % 32))
    out[cuda.threadIdx.x] = values[0] + values[3]


@cuda.jit
def lds128_halves(out):
    """Lanes 0-15 read the 16-byte word 0, lanes 16-31 word 1: one word per quarter-warp, 4 passes halved
    (every pair l, l^1 reads one address): 2, as measured on CC 8.6 and 9.0."""
    tile = cuda.shared.array(WORDS, float32)
    values = load4(tile, 4 * ((cuda.threadIdx.x % 32) // 16))
    out[cuda.threadIdx.x] = values[0] + values[3]


#: Kernel -> (shared loads, wavefronts) per warp, by the rules.
EXPECTED = {"conflict_free": (1, 1), "two_way": (1, 2), "thirty_two_way": (1, 32), "broadcast": (1, 1),
            "rows_of_a_view": (1, 2), "lds64": (1, 2), "lds128_distinct": (1, 4), "lds128_halves": (1, 2)}


def known(warps: str = "2") -> dict:
    """Kernel name -> ``measure`` of it over ``warps`` warps of one block (loads and wavefronts summed over them)."""
    from compile_matrix.wavefronts import measure

    threads = 32 * int(warps)
    return {name: measure(globals()[name], 1, threads, [cuda.to_device(np.zeros(threads, np.float32))])
            for name in EXPECTED}
