"""The float64 reference LSTM with one typical mistake planted: which mistake a wrong output is.

``VARIANTS`` names the mistakes learners make in the cell and the recurrence; ``match`` returns
the one a candidate's output equals, if any.
"""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np

from ...params import GATES
from ...numerics import relative_error, sigmoid64

MATCH_RTOL = 1e-4  # a candidate "is" a variant this close to it...
DISTINCT_RTOL = 1e-3  # ...that is this far from the right answer


@dataclasses.dataclass(frozen=True)
class Variant:
    """The reference LSTM, with knobs. The defaults are the right LSTM."""

    gate_blocks: tuple = (0, 1, 2, 3)  # which stored block of 4H is read as gate i, f, c, o
    bias: float = 1.0  # times the bias is added
    carry_c: bool = True  # c_{t-1} enters the cell update
    recurrent: bool = True  # h_{t-1} @ U enters the gates
    candidate: str = "tanh"  # the c gate's activation
    h_of: str = "tanh(c_t)"  # h = o * this: "tanh(c_t)", "c_t" or "tanh(c_{t-1})"


def cell(z: np.ndarray, c_prev: np.ndarray, variant: Variant = Variant()) -> tuple[np.ndarray, np.ndarray]:
    """One cell update from pre-activations z (rows, 4H) with the bias already in: (c, h)."""
    hidden = z.shape[-1] // 4
    blocks = [z[..., b * hidden:(b + 1) * hidden] for b in variant.gate_blocks]
    i, f, o = sigmoid64(blocks[0]), sigmoid64(blocks[1]), sigmoid64(blocks[3])
    g = np.tanh(blocks[2]) if variant.candidate == "tanh" else sigmoid64(blocks[2])
    c = (f * c_prev if variant.carry_c else 0.0) + i * g
    shown = {"tanh(c_t)": np.tanh(c), "c_t": c, "tanh(c_{t-1})": np.tanh(c_prev)}[variant.h_of]
    return c, o * shown


def layer(input_part: np.ndarray, U: np.ndarray, b: np.ndarray, variant: Variant = Variant()) -> np.ndarray:
    """One layer's recurrence from its input products x_t @ W, (batch, T, 4H): h, (batch, T, H)."""
    batch, steps, _ = input_part.shape
    hs = np.zeros((steps, batch, U.shape[0]))
    c = np.zeros((batch, U.shape[0]))
    for t in range(steps):
        z = input_part[:, t] + variant.bias * b
        if variant.recurrent and t > 0:
            z = z + hs[t - 1] @ U
        c, hs[t] = cell(z, c, variant)
    return hs.transpose(1, 0, 2)


def _gate_name(blocks) -> str:
    return ", ".join(f"{GATES[block]}" for block in blocks)


#: name -> (the variant, what that mistake is, in words).
VARIANTS = {
    "bias_missing": (Variant(bias=0.0), "the bias is never added"),
    "bias_twice": (Variant(bias=2.0), "the bias is added twice"),
    "c_not_carried": (Variant(carry_c=False), "c_{t-1} is not carried into the cell update (c = i*g)"),
    "recurrent_missing": (Variant(recurrent=False), "the recurrent term h_{t-1} @ U is missing (h is not carried)"),
    "candidate_sigmoid": (Variant(candidate="sigmoid"), "the c gate goes through a sigmoid instead of tanh"),
    "h_without_tanh": (Variant(h_of="c_t"), "h = o * c, without the tanh"),
    "h_from_old_c": (Variant(h_of="tanh(c_{t-1})"), "h uses the old c_{t-1} instead of the new c_t"),
}
VARIANTS.update({
    f"gate_order {_gate_name(order)}": (Variant(gate_blocks=order),
                                        f"the gate blocks are read in the order ({_gate_name(order)}) as if "
                                        "they were (i, f, c, o)")
    for order in itertools.permutations(range(4)) if order != (0, 1, 2, 3)
})


def match(y: np.ndarray, compute) -> str | None:
    """The name of the variant ``y`` equals, or None. ``compute(variant)`` gives its output."""
    right = compute(Variant())
    best, best_error = None, MATCH_RTOL
    for name, (variant, _) in VARIANTS.items():
        wrong = compute(variant)
        if relative_error(wrong, right) <= DISTINCT_RTOL:
            continue  # indistinguishable from the right answer on this problem
        error = relative_error(y, wrong)
        if error < best_error:  # the first of equals: the simplest explanation
            best, best_error = name, error
    return best


def describe(name: str) -> str:
    return VARIANTS[name][1]
