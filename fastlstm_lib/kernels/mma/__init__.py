"""Tensor-core pieces for the kernels: TF32 and one warp's ``mma.m16n8k8`` (issue 68).

What a kernel calls (device functions, chosen at import by ``runtime.device.DEVICE``):

- ``to_tf32(x)``: ``x`` rounded to TF32, PTX ``cvt.rna.tf32.f32`` (10 mantissa bits, to
  nearest, ties away from zero), as a float32 whose 13 low bits are zero.
- ``d0, d1, d2, d3 = mma_tf32_m16n8k8(a0, a1, a2, a3, b0, b1, c0, c1, c2, c3)``: PTX
  ``mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32``, D = A x B + C for a 16 x 8 x 8 tile,
  one instruction for the whole warp (``HMMA.1688.F32.TF32`` on sm_80 and sm_90). Every lane
  passes its 4 registers of A, 2 of B (``to_tf32`` values), 4 of C, and gets its 4 of D. All 32
  lanes of the warp must call it together (no divergence), and blocks are whole warps.

Where kernels are compiled (a GPU, the fake GPU) they are Numba intrinsics emitting inline PTX
(``intrinsics``); on the simulator, Python stand-ins that compute the same thing (``standin``:
the warp's 32 threads meet, the last one multiplies). Host helpers: ``round_tf32`` and
``truncate_tf32`` (``tf32``, NumPy) and the fragment layout (``layout``: ``element``, ``table``,
``draw``), and where the instruction exists (``MIN_COMPUTE_CAPABILITY``, ``require_tf32``).

The fragment layout (PTX ISA, "Matrix Fragments for mma.m16n8k8", .tf32 A and B, .f32 C/D),
with group = lane >> 2 and tig = lane % 4; "T5:a2" is lane 5's register a2:

A (16 x 8, row-major): a0 (group, tig), a1 (group + 8, tig), a2 (group, tig + 4), a3 (group + 8, tig + 4)

               0      1      2      3      4      5      6      7
       0   T0:a0  T1:a0  T2:a0  T3:a0  T0:a2  T1:a2  T2:a2  T3:a2
       1   T4:a0  T5:a0  T6:a0  T7:a0  T4:a2  T5:a2  T6:a2  T7:a2
       2   T8:a0  T9:a0 T10:a0 T11:a0  T8:a2  T9:a2 T10:a2 T11:a2
       3  T12:a0 T13:a0 T14:a0 T15:a0 T12:a2 T13:a2 T14:a2 T15:a2
       4  T16:a0 T17:a0 T18:a0 T19:a0 T16:a2 T17:a2 T18:a2 T19:a2
       5  T20:a0 T21:a0 T22:a0 T23:a0 T20:a2 T21:a2 T22:a2 T23:a2
       6  T24:a0 T25:a0 T26:a0 T27:a0 T24:a2 T25:a2 T26:a2 T27:a2
       7  T28:a0 T29:a0 T30:a0 T31:a0 T28:a2 T29:a2 T30:a2 T31:a2
       8   T0:a1  T1:a1  T2:a1  T3:a1  T0:a3  T1:a3  T2:a3  T3:a3
       9   T4:a1  T5:a1  T6:a1  T7:a1  T4:a3  T5:a3  T6:a3  T7:a3
      10   T8:a1  T9:a1 T10:a1 T11:a1  T8:a3  T9:a3 T10:a3 T11:a3
      11  T12:a1 T13:a1 T14:a1 T15:a1 T12:a3 T13:a3 T14:a3 T15:a3
      12  T16:a1 T17:a1 T18:a1 T19:a1 T16:a3 T17:a3 T18:a3 T19:a3
      13  T20:a1 T21:a1 T22:a1 T23:a1 T20:a3 T21:a3 T22:a3 T23:a3
      14  T24:a1 T25:a1 T26:a1 T27:a1 T24:a3 T25:a3 T26:a3 T27:a3
      15  T28:a1 T29:a1 T30:a1 T31:a1 T28:a3 T29:a3 T30:a3 T31:a3

B (8 x 8, B[k, n]; "col": each lane holds part of a column): b0 (tig, group), b1 (tig + 4, group)

               0      1      2      3      4      5      6      7
       0   T0:b0  T4:b0  T8:b0 T12:b0 T16:b0 T20:b0 T24:b0 T28:b0
       1   T1:b0  T5:b0  T9:b0 T13:b0 T17:b0 T21:b0 T25:b0 T29:b0
       2   T2:b0  T6:b0 T10:b0 T14:b0 T18:b0 T22:b0 T26:b0 T30:b0
       3   T3:b0  T7:b0 T11:b0 T15:b0 T19:b0 T23:b0 T27:b0 T31:b0
       4   T0:b1  T4:b1  T8:b1 T12:b1 T16:b1 T20:b1 T24:b1 T28:b1
       5   T1:b1  T5:b1  T9:b1 T13:b1 T17:b1 T21:b1 T25:b1 T29:b1
       6   T2:b1  T6:b1 T10:b1 T14:b1 T18:b1 T22:b1 T26:b1 T30:b1
       7   T3:b1  T7:b1 T11:b1 T15:b1 T19:b1 T23:b1 T27:b1 T31:b1

C and D (16 x 8): c0 (group, 2 tig), c1 (group, 2 tig + 1), c2 (group + 8, 2 tig), c3 (group + 8, 2 tig + 1)

               0      1      2      3      4      5      6      7
       0   T0:c0  T0:c1  T1:c0  T1:c1  T2:c0  T2:c1  T3:c0  T3:c1
       1   T4:c0  T4:c1  T5:c0  T5:c1  T6:c0  T6:c1  T7:c0  T7:c1
       2   T8:c0  T8:c1  T9:c0  T9:c1 T10:c0 T10:c1 T11:c0 T11:c1
       3  T12:c0 T12:c1 T13:c0 T13:c1 T14:c0 T14:c1 T15:c0 T15:c1
       4  T16:c0 T16:c1 T17:c0 T17:c1 T18:c0 T18:c1 T19:c0 T19:c1
       5  T20:c0 T20:c1 T21:c0 T21:c1 T22:c0 T22:c1 T23:c0 T23:c1
       6  T24:c0 T24:c1 T25:c0 T25:c1 T26:c0 T26:c1 T27:c0 T27:c1
       7  T28:c0 T28:c1 T29:c0 T29:c1 T30:c0 T30:c1 T31:c0 T31:c1
       8   T0:c2  T0:c3  T1:c2  T1:c3  T2:c2  T2:c3  T3:c2  T3:c3
       9   T4:c2  T4:c3  T5:c2  T5:c3  T6:c2  T6:c3  T7:c2  T7:c3
      10   T8:c2  T8:c3  T9:c2  T9:c3 T10:c2 T10:c3 T11:c2 T11:c3
      11  T12:c2 T12:c3 T13:c2 T13:c3 T14:c2 T14:c3 T15:c2 T15:c3
      12  T16:c2 T16:c3 T17:c2 T17:c3 T18:c2 T18:c3 T19:c2 T19:c3
      13  T20:c2 T20:c3 T21:c2 T21:c3 T22:c2 T22:c3 T23:c2 T23:c3
      14  T24:c2 T24:c3 T25:c2 T25:c3 T26:c2 T26:c3 T27:c2 T27:c3
      15  T28:c2 T28:c3 T29:c2 T29:c3 T30:c2 T30:c3 T31:c2 T31:c3

Read it as: the 8 groups of 4 lanes each own 2 rows of A and of C (group and group + 8) and one
column of B; within a group, lane tig holds columns tig and tig + 4 of A (rows tig and tig + 4
of B) and the neighbouring columns 2 tig, 2 tig + 1 of C.
"""

from __future__ import annotations

from ...runtime.device import DEVICE
from .layout import K, M, N, WARP, draw, element, table
from .tf32 import round_tf32, truncate_tf32

if DEVICE.compiled:  # a GPU or the fake GPU: the instructions themselves
    from .intrinsics import make as _make

    to_tf32, mma_tf32_m16n8k8 = _make()
else:  # the simulator: the stand-ins, same signatures, same results
    from .standin import mma_tf32_m16n8k8, to_tf32

#: The first compute capability whose tensor cores take TF32 (Ampere, sm_80): ``mma.sync`` with
#: .tf32 operands does not exist below it (ptxas refuses the PTX for sm_75 and older).
MIN_COMPUTE_CAPABILITY = (8, 0)


def compute_capability() -> tuple[int, int] | None:
    """This GPU's compute capability (major, minor), or None on the simulator, where the stand-ins
    run whatever chip a GPU would be."""
    if not DEVICE.compiled:
        return None
    from numba import cuda

    return tuple(int(part) for part in cuda.get_current_device().compute_capability)


def require_tf32(kernel: str, cc: tuple[int, int] | None = None) -> None:
    """Refuse to launch ``kernel`` (a RuntimeError naming the compute capability) on a GPU of
    compute capability ``cc`` (default: this one's, ``compute_capability``) below
    ``MIN_COMPUTE_CAPABILITY``; nothing on the simulator (``cc`` None)."""
    cc = compute_capability() if cc is None else tuple(cc)
    if cc is not None and cc < MIN_COMPUTE_CAPABILITY:
        raise RuntimeError(
            f"{kernel} needs TF32 tensor cores (mma.sync with .tf32 operands), which exist from compute "
            f"capability {MIN_COMPUTE_CAPABILITY[0]}.{MIN_COMPUTE_CAPABILITY[1]} (sm_80, Ampere) on; this GPU is "
            f"compute capability {cc[0]}.{cc[1]} (sm_{cc[0]}{cc[1]})")


__all__ = ["K", "M", "MIN_COMPUTE_CAPABILITY", "N", "WARP", "compute_capability", "draw", "element",
           "mma_tf32_m16n8k8", "require_tf32", "round_tf32", "table", "to_tf32", "truncate_tf32"]
