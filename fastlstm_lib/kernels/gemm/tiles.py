"""The GEMM family's shapes and facts, shared by every version file: how a block cuts C
(``Blocking``, the GPU's and the simulator's), whether a tile divides a shape, the vector width
of versions 5 and 6, the shared tiles' padding and alignment, the traffic formula of every
version, the compile matrix's rows, and the runner's shapes and operands.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import boolean, float32

from ...runtime.device import DEVICE
from ...runtime.target import target
from ..spec import Build, Spec, Traffic
from ..views import view_of

#: Tile edge of ``tiled_gemm``: 16 x 16 = 256 threads on a GPU; 4 x 4 on the simulator, where
#: every simulated thread costs ~0.15 ms per launch.
TILE = 4 if DEVICE.small else 16


class Blocking(NamedTuple):
    """How a blocked GEMM (versions 2-6) cuts C: a (bm x bn) patch per block, K in bk-slabs, tm x tn per thread."""

    bm: int
    bn: int
    bk: int
    tm: int
    tn: int

    @property
    def threads(self) -> int:
        return (self.bm // self.tm) * (self.bn // self.tn)


#: Extra words per shared-tile row: 4 keeps a warp's transposing stores in 32 different banks.
SHARED_PADDING = 4
#: Byte alignment of versions 5-7's shared tiles, so that 4 neighbouring floats are one 128-bit
#: load (the simulator takes no alignment: it has no vector loads).
SHARED_ALIGN = DEVICE.shared_alignment

#: On a GPU: 256 threads, 16 outputs each (64 x 64 per block), or a 32 x 32 patch with 4 each
#: when 64 x 64 patches would leave SMs idle (the LSTM's recurrent GEMM is only batch rows tall).
GPU_LARGE = Blocking(bm=64, bn=64, bk=8, tm=4, tn=4)
GPU_SMALL = Blocking(bm=32, bn=32, bk=8, tm=2, tn=2)
#: Where M, N and K are multiples of 128, 128 and 8 and its blocks still fill every SM: 8 x 8
#: outputs per thread, so each value loaded from shared memory feeds 8 FFMAs, not 4.
GPU_WIDE = Blocking(bm=128, bn=128, bk=8, tm=8, tn=8)
#: On the simulator: 16 threads, 4 outputs each: the same code paths, milliseconds per launch.
SIMULATOR_BLOCKING = Blocking(bm=8, bn=8, bk=4, tm=2, tn=2)


def divides(blocking, m: int, n: int, k: int) -> bool:
    """Whether ``blocking``'s tile divides an (m x n) C over k, with whole cooperative loads."""
    bm, bn, bk, tm, tn = blocking
    threads = (bm // tm) * (bn // tn)
    return (m % bm == 0 and n % bn == 0 and k % bk == 0 and (bm * bk) % threads == 0
            and (bn * bk) % threads == 0 and bk & (bk - 1) == 0)


def vector_width(blocking) -> int:
    """The widest vector (4, 2 or 1 floats) in which version 5's threads load their slab of A and B:
    it must divide each thread's share of both and the rows it is cut from."""
    bm, bn, bk, tm, tn = blocking
    a_loads, b_loads = bm * bk // blocking.threads, bn * bk // blocking.threads
    return next(w for w in (4, 2, 1) if a_loads % w == 0 and b_loads % w == 0 and bk % w == 0 and bn % w == 0)


def vector_fits(blocking, m: int, n: int, k: int) -> bool:
    """Whether version 5 can run ``blocking`` on this shape: ``divides``, and an even number of
    outputs per thread along M and N (its two halves, see ``owned``)."""
    return divides(blocking, m, n, k) and blocking.tm % 2 == 0 and blocking.tn % 2 == 0


def gemm_shape(a, b, c, transpose_b: bool, transpose_a: bool = False) -> tuple[int, int, int]:
    """(M, N, K) of C = op(A) @ op(B); a ValueError if the shapes don't chain."""
    k, m = a.shape if transpose_a else a.shape[::-1]
    k_b, n = (b.shape[1], b.shape[0]) if transpose_b else b.shape
    if k != k_b or c.shape != (m, n):
        stored_a = f"A {a.shape}" + (" transposed" if transpose_a else "")
        stored_b = f"B {b.shape}" + (" transposed" if transpose_b else "")
        raise ValueError(f"gemm shapes don't chain: {stored_a} @ {stored_b} -> C {c.shape}")
    return m, n, k


def gemm_traffic(args, grid, block, constants) -> Traffic:
    """Every GEMM kernel: every block loads its rows of A and its columns of op(B) over all of K
    (elements past an edge are zeros, not loads), so A is loaded once per block column of C and
    B once per block row; C is stored once (and loaded once to accumulate). FLOPs: 2 M N K (+ M N
    to accumulate). Split-K (version 6, C of shape (splits, M, N), grid depth splits): each layer
    of blocks loads its part of K, so A and B are loaded as often, and each part of C is stored once."""
    a, b, c, accumulate = args["a"], args["b"], args["c"], bool(args["accumulate"])
    m, k = a.shape
    parts = c.shape[0] if len(c.shape) == 3 else 1
    n = c.shape[len(c.shape) - 1]  # (the simulator's shapes take no negative index)
    blocks_n, blocks_m = grid[0], grid[1]
    loads = {"a": blocks_n * m * k, "b": blocks_m * k * n}
    reads = [view_of(a), view_of(b)]
    if accumulate:
        loads["c"] = parts * m * n
        reads.append(view_of(c))
    flop = 2 * m * n * k + (parts * m * n if accumulate else 0)
    return Traffic(flop, loads, {"c": parts * m * n}, tuple(reads), (view_of(c),), tuple(reads))


#: The signatures the compile matrix builds: any layout; C-contiguous rows (what every step passes
#: at the article's size); split-K's parts.
ANY = (float32[:, :],) * 3 + (boolean,)
CONTIGUOUS = (float32[:, ::1],) * 3 + (boolean,)
SPLIT = (float32[:, ::1], float32[:, ::1], float32[:, :, ::1], boolean)


def build(row: str, blocking: Blocking, make, signature: tuple, what: str = "", timed: bool = True) -> Build:
    """A compile-matrix row of a blocked version: ``make()`` builds it for ``blocking``; ``timed``: the
    row the timeline reads for launches of that version and blocking."""
    tiling = f"{blocking.bm}x{blocking.bn}x{blocking.bk} tile, {blocking.tm}x{blocking.tn} per thread"
    return Build(row, lambda: (make(), signature), tiling + what, blocking, timed)


_ACCESS = ((0, 1), (2,))  # reads a and b, writes c


def spec(number: int, name: str, what: str, builds, **facts) -> Spec:
    """A GEMM version's spec: it reads A and B and writes C; ``gemm_traffic``; its compiled rows;
    the charts' "GEMM", blue (``facts``: other ``Spec`` fields, or these otherwise)."""
    facts = {"role": "GEMM", "colour": "tab:blue", **facts}
    return Spec("gemm", number, name, what, _ACCESS, gemm_traffic, builds, **facts)


#: (M, N, K): odd, and the article's GEMMs: a step's (recurrent or input), the wavefront's 5-step
#: chunk of inputs, and the input GEMM of all steps.
SHAPES = {"odd": [(7, 13, 11)], "article": [(64, 2048, 512), (320, 2048, 512), (6400, 2048, 512)]}


def operands(rng, m: int, n: int, k: int):
    """Fresh A (m, k) and B (k, n), float32, standard normal, and A @ B in float64."""
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    return a, b, a.astype(np.float64) @ b


def rounded_up(blocking, m: int, n: int, k: int) -> tuple[int, int, int]:
    """The next shape up that ``blocking``'s tile divides (the exact-tile versions run only there)."""
    return -(-m // blocking.bm) * blocking.bm, -(-n // blocking.bn) * blocking.bn, -(-k // blocking.bk) * blocking.bk


def gpu_blocking(m: int, n: int, k: int, sms: int) -> Blocking:
    """What a GPU with ``sms`` SMs runs for an (m x n) C over k: GPU_WIDE patches where they divide
    the shape and fill every SM, else GPU_LARGE ones, unless those would give fewer blocks than it
    has SMs (then GPU_SMALL)."""
    if divides(GPU_WIDE, m, n, k) and (m // GPU_WIDE.bm) * (n // GPU_WIDE.bn) >= sms:
        return GPU_WIDE
    blocks = -(-m // GPU_LARGE.bm) * -(-n // GPU_LARGE.bn)
    return GPU_SMALL if blocks < sms else GPU_LARGE


def geometry_sms() -> int | None:
    """The SMs the GEMMs' blockings and parts of K are chosen for: the target's (``runtime.target``:
    this GPU's, or a dry run's named chip); None on the simulator (small blockings, K never cut: its
    blocks run one at a time)."""
    return target().sms


def choose_blocking(m: int, n: int, k: int) -> Blocking:
    """The blocking ``gemm()`` launches here: this GPU's choice, or the simulator's small one."""
    sms = geometry_sms()
    return SIMULATOR_BLOCKING if sms is None else gpu_blocking(m, n, k, sms)


def recurrent_blocking() -> Blocking:
    """Versions 7 and 8's blocking here: ``GPU_LARGE`` (64 x 64, 4 x 4 per thread) on a GPU, or as
    one (a dry run), else the simulator's small one."""
    return SIMULATOR_BLOCKING if geometry_sms() is None else GPU_LARGE


def choose_splits(m: int, n: int, k: int) -> int:
    """The parts of K a recurrent GEMM of (m x n) over k runs in here (``gemm_split``): on a GPU,
    versions 7 and 8's (``recurrent_splits``) where their patch divides the shape, else version 6's
    (``split_plan``); 1 on the simulator (its blocks run one at a time: there is no GPU to fill)."""
    sms = geometry_sms()
    return 1 if sms is None else recurrent_splits(m, n, k, sms) or split_plan(m, n, k, sms)[1]


#: Version 6 splits K until the grid holds this many warps per SM on average: 28 of the 64 an
#: H100 SM can hold (the kernel issue's target, 3.5 blocks of 8 warps), so that while some warps
#: wait on memory others issue (V. Volkov, "Understanding Latency Hiding on GPUs", 2016). A
#: starting point for the GPU run to time against version 3, not a measured optimum.
SPLIT_WARPS_PER_SM = 28
#: ...but no part of K shorter than this many slabs (each part pays a prologue and an epilogue).
SPLIT_MIN_SLABS = 8


def split_plan(m: int, n: int, k: int, sms: int) -> tuple[Blocking, int]:
    """(blocking, splits) for an (m x n) C over k on a GPU with ``sms`` SMs: ``gpu_blocking``'s
    patch, and K cut into the fewest power-of-two parts whose blocks give ``SPLIT_WARPS_PER_SM``
    warps per SM, each part at least ``SPLIT_MIN_SLABS`` slabs long and its slabs whole (1: no
    split, and wherever the patch does not divide the shape)."""
    for name, value in (("m", m), ("n", n), ("k", k), ("sms", sms)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive int, got {value!r}")
    blocking = gpu_blocking(m, n, k, sms)
    blocks = -(-m // blocking.bm) * -(-n // blocking.bn)
    splits = 1
    if not vector_fits(blocking, m, n, k):  # version 6 runs exact tiles only
        return blocking, splits
    warps = blocking.threads // 32
    while (blocks * splits * warps < SPLIT_WARPS_PER_SM * sms and k % (2 * splits * blocking.bk) == 0
           and k // (2 * splits) >= SPLIT_MIN_SLABS * blocking.bk):
        splits *= 2
    return blocking, splits


#: Versions 7 and 8 cut K until every SM holds a block and, on average, this many warps (the kernel
#: issue's floor: 8 warps, 2 per scheduler, each with 16 independent accumulators).
RECURRENT_WARPS_PER_SM = 8


def recurrent_splits(m: int, n: int, k: int, sms: int) -> int:
    """Parts of K in which versions 7 and 8 run an (m x n) C over k on a GPU with ``sms`` SMs: the fewest
    (a power of two) that give every SM a block of ``GPU_LARGE`` (64 x 64, 4 x 4 per thread, 8 warps)
    and ``RECURRENT_WARPS_PER_SM`` warps, each part an even number of slabs (its double buffer takes
    them two at a time); 0 where the patch does not divide the shape or K cannot be cut so."""
    b = GPU_LARGE
    if not vector_fits(b, m, n, k):
        return 0
    blocks, warps, splits = (m // b.bm) * (n // b.bn), b.threads // 32, 1
    while (blocks * splits < sms or blocks * splits * warps < RECURRENT_WARPS_PER_SM * sms) and k % (4 * splits * b.bk) == 0:
        splits *= 2
    return splits if k % (2 * splits * b.bk) == 0 else 0


#: The layouts of B that versions 2 and 3 also run in, on the size's first shape (notebook 06):
#: (label, stored transposed and read with the 'T' flag, loaded in the naive order); the first is
#: every version's plain run (no variant).
B_LAYOUTS = (("B stored (K, N)", False, False), ("B stored (N, K), loaded along k", True, False),
             ("B stored (N, K), naive loads (strided_b)", True, True))


def cases(size: str, rng, launcher, *, exact: bool, layouts: tuple = B_LAYOUTS[:1]) -> list:
    """A version's runner cases at ``size``: one per shape of ``SHAPES[size]`` (rounded up to this
    device's tile where the version is ``exact``), B in each of ``layouts`` on the first shape.
    ``launcher(blocking, m, n, k, a, b, transposed, strided)`` returns (kernel, grid, block)."""
    from numba import cuda

    from ..case import Case, poisoned

    found = []
    for index, (m, n, k) in enumerate(SHAPES[size]):
        blocking = choose_blocking(m, n, k)
        if exact:
            m, n, k = rounded_up(blocking, m, n, k)
        a, b, want = operands(rng, m, n, k)
        a_d, c_d = cuda.to_device(a), poisoned(m, n)
        for layout, transposed, strided in (layouts if index == 0 else layouts[:1]):
            b_d = cuda.to_device(np.ascontiguousarray(b.T) if transposed else b)
            kernel, grid, block = launcher(blocking, m, n, k, a_d, b_d, transposed, strided)

            def launch(kernel=kernel, grid=grid, block=block, b_d=b_d):
                kernel[grid, block](a_d, b_d, c_d, False)

            found.append(Case(f"{m} x {n} x {k}", launch, {"c": c_d}, {"c": want}, 2.0 * m * n * k,
                              4.0 * (m * k + k * n + m * n), variant=layout if transposed else ""))
    return found


def split_k_case(m: int, n: int, k: int, rng, blocking: Blocking, splits: int, launch, rtol: float | None = None):
    """A split-K version's runner case (versions 7-9): (m x n) over k rounded up to whole patches of
    ``blocking`` and to ``splits`` parts of K of two slabs or more each; ``launch(a, b, parts)`` runs
    the version into ``parts`` (splits, rows, cols), each part checked on its own against float64
    (within ``rtol``, default the FP32 tolerance)."""
    from numba import cuda

    from ..case import Case, f32, poisoned

    step = 2 * blocking.bk * splits
    rows, cols, depth = -(-m // blocking.bm) * blocking.bm, -(-n // blocking.bn) * blocking.bn, -(-k // step) * step
    a, b = f32(rng, rows, depth), f32(rng, depth, cols)
    a_d, b_d, parts = cuda.to_device(a), cuda.to_device(b), poisoned(splits, rows, cols)
    share = depth // splits
    want = np.stack([a[:, s * share:(s + 1) * share].astype(np.float64) @ b[s * share:(s + 1) * share]
                     for s in range(splits)])
    return Case(f"{rows} x {cols} x {depth}, {splits} parts", lambda: launch(a_d, b_d, parts), {"parts": parts},
                {"parts": want}, 2.0 * rows * cols * depth, 4.0 * (rows * depth + depth * cols + splits * rows * cols),
                **({"rtol": rtol} if rtol is not None else {}))
