"""Tiny kernels that use the tensor-core pieces (``fastlstm_lib.kernels.mma``), for tests/test_mma.py:
run on the simulator there, compiled for sm_80 and sm_90 by its compile test (``compile_main``, in
a process of its own without the simulator).

The fragments are loaded by the PTX ISA's layout written out here, on purpose not taken from
``mma.layout``: a layout wrong in the stand-in and in the kernel alike would otherwise go unseen.
"""

import json
import re
import sys
import tempfile
from pathlib import Path

from numba import cuda, float32

from fastlstm_lib.kernels.mma import mma_tf32_m16n8k8, to_tf32


@cuda.jit(device=True)
def load(matrix, row, col):
    """matrix[row, col], 0 outside it: the zero padding of an odd size to whole tiles."""
    if row < matrix.shape[0] and col < matrix.shape[1]:
        return matrix[row, col]
    return float32(0.0)


@cuda.jit(device=True)
def tile_step(a, b, row0, col0, group, tig, k0, c0, c1, c2, c3):
    """One ``mma`` of a warp's 16 x 8 tile at (row0, col0) over K[k0:k0 + 8], the fragments loaded by
    the PTX ISA's layout and rounded to TF32 as loaded: the new (c0, c1, c2, c3)."""
    a0 = to_tf32(load(a, row0 + group, k0 + tig))
    a1 = to_tf32(load(a, row0 + group + 8, k0 + tig))
    a2 = to_tf32(load(a, row0 + group, k0 + tig + 4))
    a3 = to_tf32(load(a, row0 + group + 8, k0 + tig + 4))
    b0 = to_tf32(load(b, k0 + tig, col0 + group))
    b1 = to_tf32(load(b, k0 + tig + 4, col0 + group))
    return mma_tf32_m16n8k8(a0, a1, a2, a3, b0, b1, c0, c1, c2, c3)


def _tile_product(synced):
    """D = A @ B, any sizes: warp w of the (one) block computes the 16 x 8 tile w of D (tiles in row
    order), over K in steps of 8, one ``mma`` per step; with ``synced`` a block barrier after every
    step, so that warps meet in ``syncthreads`` between their ``mma`` calls (as a blocked GEMM's
    slabs do)."""

    def product(a, b, d):
        tid = cuda.threadIdx.x + cuda.blockDim.x * (cuda.threadIdx.y + cuda.blockDim.y * cuda.threadIdx.z)
        warp, lane = tid // 32, tid % 32
        tiles_n = (d.shape[1] + 7) // 8
        row0, col0 = (warp // tiles_n) * 16, (warp % tiles_n) * 8
        group, tig = lane >> 2, lane % 4
        c0 = c1 = c2 = c3 = float32(0.0)
        for k0 in range(0, a.shape[1], 8):
            c0, c1, c2, c3 = tile_step(a, b, row0, col0, group, tig, k0, c0, c1, c2, c3)
            if synced:
                cuda.syncthreads()
        for value, row, col in ((c0, row0 + group, col0 + 2 * tig), (c1, row0 + group, col0 + 2 * tig + 1),
                                (c2, row0 + group + 8, col0 + 2 * tig), (c3, row0 + group + 8, col0 + 2 * tig + 1)):
            if row < d.shape[0] and col < d.shape[1]:
                d[row, col] = value

    return product


tile_product = _tile_product(False)
synced_tile_product = _tile_product(True)


def repeated_product(a, b, d):
    """Warp w adds the one-tile product A @ B (A at most 16 x 8, B at most 8 x 8) w + 1 times into
    its own 16 x 8 slice of D (rows 16 w ...): warps call ``mma`` different numbers of times."""
    tid = cuda.threadIdx.x
    warp, lane = tid // 32, tid % 32
    group, tig = lane >> 2, lane % 4
    a0 = to_tf32(load(a, group, tig))
    a1 = to_tf32(load(a, group + 8, tig))
    a2 = to_tf32(load(a, group, tig + 4))
    a3 = to_tf32(load(a, group + 8, tig + 4))
    b0 = to_tf32(load(b, tig, group))
    b1 = to_tf32(load(b, tig + 4, group))
    c0 = c1 = c2 = c3 = float32(0.0)
    for _ in range(warp + 1):
        c0, c1, c2, c3 = mma_tf32_m16n8k8(a0, a1, a2, a3, b0, b1, c0, c1, c2, c3)
    row = 16 * warp + group
    d[row, 2 * tig] = c0
    d[row, 2 * tig + 1] = c1
    d[row + 8, 2 * tig] = c2
    d[row + 8, 2 * tig + 1] = c3


def unrounded_product(a, b, d):
    """Every lane passes 1 + 2**-11 + 2**-20 for its A and B, not rounded (a and b unused): the
    tensor core reads 1.0, so each element of D is 8.0."""
    lane = cuda.threadIdx.x
    x = float32(1 + 2**-11 + 2**-20)
    d0, d1, d2, d3 = mma_tf32_m16n8k8(x, x, x, x, x, x, float32(0.0), float32(0.0), float32(0.0), float32(0.0))
    d[0, lane] = d0


def divergent_product(a, b, d):
    """Wrong on purpose: lane 0 skips the ``mma`` its warp's other 31 lanes execute."""
    lane = cuda.threadIdx.x % 32
    if lane != 0:
        d0, d1, d2, d3 = mma_tf32_m16n8k8(a[0, 0], a[0, 0], a[0, 0], a[0, 0], b[0, 0], b[0, 0],
                                          float32(0.0), float32(0.0), float32(0.0), float32(0.0))
        d[0, lane % 8] = d0


SIGNATURE = "void(float32[:, ::1], float32[:, ::1], float32[:, ::1])"


def compile_main(argv):
    """``MAJOR.MINOR``: compile ``tile_product`` for that architecture (numba.cuda imported first,
    simulator off: see compile_matrix.jobs) and print JSON: its PTX's mma and cvt lines, ptxas's
    report, and the SASS opcodes."""
    from compile_matrix import sass, toolkits
    from compile_matrix.jobs import prepare

    cc = tuple(int(part) for part in argv[0].split("."))
    prepare(cc)
    ptx, _ = cuda.compile_ptx(tile_product, SIGNATURE, cc=cc)
    entry = re.search(r"\.entry\s+(\S+)\s*\(", ptx).group(1)
    out = Path(tempfile.mkdtemp())
    (out / "k.ptx").write_text(ptx)
    report = toolkits.assemble(out / "k.ptx", cc, out / "k.cubin", relocatable=False, max_registers=None)
    code = sass.parse_nvdisasm(sass.disassembly(out / "k.cubin", cc), entry)
    print(json.dumps({"ptx": [line.strip() for line in ptx.splitlines() if "mma." in line or "cvt.rna" in line],
                      "resources": toolkits.resources(report, entry),
                      "opcodes": [instruction.opcode for instruction in code]}))


if __name__ == "__main__":
    compile_main(sys.argv[1:])
