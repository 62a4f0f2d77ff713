"""Which lane of a warp holds which element of A, B and C/D in one ``mma.m16n8k8`` with TF32
inputs: the PTX ISA's fragment layout (section "Matrix Fragments for mma.m16n8k8", the .tf32
figures for A and B and the .f32 accumulator figure), as index tables and as a drawing.

With ``group = lane >> 2`` and ``tig = lane % 4`` (PTX: groupID, threadID_in_group):

- A (16 x 8, row-major): a0 (group, tig), a1 (group + 8, tig), a2 (group, tig + 4), a3 (group + 8, tig + 4)
- B (8 x 8, "col": B[k, n] with k the row): b0 (tig, group), b1 (tig + 4, group)
- C and D (16 x 8): c0 (group, 2 tig), c1 (group, 2 tig + 1), c2 (group + 8, 2 tig), c3 (group + 8, 2 tig + 1)

The simulator's stand-in gathers a warp's fragments with these tables; the lesson draws them.
"""

from __future__ import annotations

import numpy as np

from ...checks import check_int

#: The instruction's shape: D (M x N) = A (M x K) x B (K x N) + C, one warp.
M, N, K = 16, 8, 8
WARP = 32
#: operand -> (its shape, how many registers each lane holds of it)
OPERANDS = {"a": ((M, K), 4), "b": ((K, N), 2), "c": ((M, N), 4)}


def element(operand: str, lane: int, register: int) -> tuple[int, int]:
    """(row, col) of the element of ``operand`` ("a", "b" or "c"; D is laid out as C) that
    ``lane`` holds in its register ``register`` (a0..a3, b0..b1, c0..c3)."""
    if operand not in OPERANDS:
        raise ValueError(f"operand must be one of {sorted(OPERANDS)}, got {operand!r}")
    check_int("lane", lane, minimum=0)
    if lane >= WARP:
        raise ValueError(f"lane must be in 0..{WARP - 1}, got {lane!r}")
    registers = OPERANDS[operand][1]
    check_int("register", register, minimum=0)
    if register >= registers:
        raise ValueError(f"register must be in 0..{registers - 1} for {operand}, got {register!r}")
    group, tig = lane >> 2, lane % 4
    if operand == "a":
        return group + 8 * (register % 2), tig + 4 * (register // 2)
    if operand == "b":
        return tig + 4 * register, group
    return group + 8 * (register // 2), 2 * tig + register % 2


def table(operand: str) -> tuple[np.ndarray, np.ndarray]:
    """(rows, cols): int arrays of shape (32, registers), ``element`` for every lane and register,
    so that ``matrix[rows, cols] = fragments`` places a warp's (32, registers) fragments."""
    if operand not in OPERANDS:
        raise ValueError(f"operand must be one of {sorted(OPERANDS)}, got {operand!r}")
    registers = OPERANDS[operand][1]
    places = np.array([[element(operand, lane, r) for r in range(registers)] for lane in range(WARP)])
    return places[..., 0], places[..., 1]


def draw(operand: str) -> str:
    """The operand's matrix with each element named by the lane and register holding it
    ("T5:a2": lane 5's a2), one text line per row, as the PTX ISA's figures show it."""
    if operand not in OPERANDS:
        raise ValueError(f"operand must be one of {sorted(OPERANDS)}, got {operand!r}")
    (rows, cols), _ = OPERANDS[operand]
    names = np.empty((rows, cols), dtype=object)
    lane_rows, lane_cols = table(operand)
    for lane in range(WARP):
        for register, (row, col) in enumerate(zip(lane_rows[lane], lane_cols[lane])):
            names[row, col] = f"T{lane}:{operand}{register}"
    header = "     " + "".join(f"{col:>7}" for col in range(cols))
    lines = [header] + [f"{row:>4} " + "".join(f"{name:>7}" for name in names[row]) for row in range(rows)]
    return "\n".join(line.rstrip() for line in lines)
