"""Shared-memory wavefronts of a blocked GEMM's main loop, from its thread layout: what a kernel
declares in its ``Build`` (``wavefronts_per_ffma``) and the timeline prices (an SM serves one
wavefront of 128 bytes a clock: 32 banks of 4 bytes, NVIDIA's CUDA C++ Programming Guide).

A layout is ``layout(tid, blocking) -> (thread_m, thread_n)``: which row and column of threads
thread ``tid`` is. Each k of a slab, a thread reads its run of tm floats of A and tn of B with one
128-bit load each (LDS.128, the 4 x 4 blockings); ``per_ffma`` counts a warp's wavefronts of both
loads per FFMA (tm x tn of them per thread per k). tests/test_gemm_warptiled.py checks version 7's
0.375 and version 8's 0.25.
"""

from __future__ import annotations

from .tiles import SHARED_PADDING, Blocking


def rowwise_thread(tid: int, blocking: Blocking) -> tuple[int, int]:
    """Versions 2-7's layout (``pipeline.prologue``): row by row, ``bn / tn`` threads to a row."""
    threads_n = blocking.bn // blocking.tn
    return tid // threads_n, tid % threads_n


def lds128_words(layout, blocking: Blocking, warp: int, operand: str, k: int = 0,
                 padding: int = SHARED_PADDING) -> list[int]:
    """The 16-byte word (its byte offset / 16 in the tile) each of ``warp``'s 32 lanes reads in the
    slab's LDS.128 of A (``operand`` "a") or B ("b") at row k of the padded tile."""
    if operand not in ("a", "b"):
        raise ValueError(f"operand must be 'a' or 'b', got {operand!r}")
    bm, bn, _, tm, tn = blocking
    words = []
    for lane in range(32):
        thread_m, thread_n = layout(warp * 32 + lane, blocking)
        if operand == "a":
            words.append((k * (bm + padding) + int(thread_m) * tm) * 4 // 16)
        else:
            words.append((k * (bn + padding) + int(thread_n) * tn) * 4 // 16)
    return words


def quarter_words(words: list[int]) -> list[int]:
    """Distinct 16-byte words each quarter-warp reads."""
    return [len(set(words[q * 8:(q + 1) * 8])) for q in range(4)]


def lds128_wavefronts(words: list[int]) -> float:
    """Wavefronts of one warp's LDS.128: a pass per quarter-warp, as many as its most-used bank quad
    (4 banks, a 16-byte word) has distinct words; the passes halved where every lane pair (l, l^1),
    or every (l, l^2), reads one address: NVIDIA's packing rule for uniform LDS (developer forum,
    "Unexpected shared memory bank conflict", CC 7.x), and the measured 2 wavefronts of lanes 0-15
    on one word and 16-31 on another on CC 8.6 and 9.0 (forum, "Discrepancy in LDS.128 wavefronts")."""
    passes = 0
    for q in range(4):
        quads: dict = {}
        for word in set(words[q * 8:(q + 1) * 8]):
            quads[word % 8] = quads.get(word % 8, 0) + 1
        passes += max(quads.values())
    packed = any(all(words[lane] == words[lane ^ pair] for lane in range(32)) for pair in (1, 2))
    return passes / 2 if packed else passes


def pattern(layout, blocking: Blocking) -> tuple:
    """Over every warp of the block and two rows of k: (distinct words per quarter-warp of A, of B;
    wavefronts per warp per k of A, of B; wavefronts per FFMA). ValueError where warps or rows of k
    differ (no one figure describes the loop)."""
    if blocking.threads % 32:
        raise ValueError(f"blocking {blocking} has {blocking.threads} threads: no whole number of warps")
    found = set()
    for warp in range(blocking.threads // 32):
        for k in (0, 1):
            a, b = (lds128_words(layout, blocking, warp, operand, k) for operand in ("a", "b"))
            found.add((max(quarter_words(a)), max(quarter_words(b)), lds128_wavefronts(a), lds128_wavefronts(b)))
    if len(found) != 1:
        raise ValueError(f"the layout's warps or rows of k read different patterns: {sorted(found)}")
    a_words, b_words, a_waves, b_waves = found.pop()
    return a_words, b_words, a_waves, b_waves, (a_waves + b_waves) / (blocking.tm * blocking.tn)


def per_ffma(layout, blocking: Blocking) -> float:
    """Shared-memory wavefronts per FFMA of ``layout``'s main loop at ``blocking`` (``pattern``)."""
    return pattern(layout, blocking)[-1]
