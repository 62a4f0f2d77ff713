"""Step 02, the baseline: the LSTM op by op, as the NVIDIA blog's starting point computes it.

Per layer and time step:
- 8 GEMMs: for each gate g in (i, f, c, o), x_t @ W_g and h_{t-1} @ U_g, each (batch x H);
- 17 small element-wise kernels: add the two products, add the bias, apply the gate's
  activation (4 gates x 3), then c = f*c + i*g (3) and h = o*tanh(c) (2).
25 launches per layer-step, every intermediate going through global memory. Layers run one
after the other, time-major, everything on the default stream.

The course writes the gates as Keras does, z = x W + h U + b, with W (in x 4H) and U (H x 4H):
Keras' ``kernel`` and ``recurrent_kernel``. The baseline stores their transposes, W^T (4H x in) and
U^T (4H x H), one row per gate unit, as PyTorch and cuDNN keep them; the products x_t @ W and
h_{t-1} @ U then read the stored matrices with BLAS's 'T' flag. Notebook 06 changes that.

Option ``gemms``: the GEMM policy of the whole pass, "2016" (default), "fast" or "tf32" (tensor
cores, compute capability 8.0+: ``gemm_policy.py``); every step takes it.

State (what ``setup`` returns):
- ``stream``: where everything is launched (0, the default stream);
- ``layers``: per layer, the uploaded ``kernel``, ``recurrent``, ``bias``, whether the GEMM
  reads them ``transposed``, and the pass's GEMM policy ``gemms``;
- ``hidden_seq``: two (T, B, H) buffers, the outputs of the layers below the top, ping-ponged;
- ``h_zero``: h before step 0; ``c``: the cell state (B, H);
- ``x_gates``, ``h_gates``: the two products (B, 4H); ``z``, ``act``: pre-activations and
  activations (B, 4H); ``tmp``: two (B, H) temporaries of the cell update.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from numba import cuda

from ..kernels import pointwise as pw
from ..kernels.gemm import gemm
from .base import LSTMStep, reject_options
from .gemm_policy import offered_policy
from .resources import scratch

#: Which activation each gate gets, in Keras' gate order i, f, c, o.
GATE_ACTIVATIONS = (pw.sigmoid, pw.sigmoid, pw.tanh, pw.sigmoid)


def gate_rows(matrix, g):
    """Gate g's rows of a stacked (4H, k) weight matrix (W^T or U^T): (H, k)."""
    hidden = matrix.shape[0] // 4
    return matrix[g * hidden:(g + 1) * hidden]


def gate_columns(matrix, g):
    """Gate g's columns of a (B, 4H) matrix of gate values: (B, H), a strided view."""
    hidden = matrix.shape[1] // 4
    return matrix[:, g * hidden:(g + 1) * hidden]


class Baseline(LSTMStep):
    name = "baseline"
    title = "op by op: 8 GEMMs and 17 point-wise kernels per layer-step"

    def setup(self, params, cfg, gemms=None, **options):
        reject_options(self, options)
        B, H, T = cfg.batch, cfg.hidden, cfg.seq_len
        policy = offered_policy(gemms)
        layers = [self.upload_weights(layer) for layer in params]
        for weights in layers:
            weights.gemms = policy  # how this pass's GEMMs run (gemm_policy.py)
        return SimpleNamespace(
            stream=0,  # everything on the default stream, one launch after the other
            layers=layers,
            # Outputs of the layers below the top one, ping-ponged (layer l reads l-1's).
            hidden_seq=scratch((T, B, H), 2) if cfg.layers > 1 else [],
            h_zero=cuda.to_device(np.zeros((B, H), dtype=np.float32)),  # h before step 0
            c=scratch((B, H)),
            x_gates=scratch((B, 4 * H)),  # x_t @ W: the 4 gates side by side
            h_gates=scratch((B, 4 * H)),  # h_{t-1} @ U
            z=scratch((B, 4 * H)),
            act=scratch((B, 4 * H)),
            tmp=scratch((B, H), 2),
        )

    def upload_weights(self, layer):
        """W^T (4H x in) and U^T (4H x H), one row per gate unit: Keras' matrices transposed."""
        return SimpleNamespace(
            kernel=cuda.to_device(np.ascontiguousarray(layer.kernel.T)),
            recurrent=cuda.to_device(np.ascontiguousarray(layer.recurrent_kernel.T)),
            bias=cuda.to_device(layer.bias),
            transposed=True,  # the GEMM reads them with BLAS's 'T' flag
        )

    def run(self, state, x, out):
        layer_input = x
        last = len(state.layers) - 1
        for index, weights in enumerate(state.layers):
            layer_output = out if index == last else state.hidden_seq[index % 2]
            self.run_layer(state, weights, layer_input, layer_output)
            layer_input = layer_output

    def run_layer(self, state, weights, xs, hs):
        """One layer over the whole sequence: xs (T, B, in) -> hs (T, B, H)."""
        pw.fill(state.c, 0.0, stream=state.stream)
        h_prev = state.h_zero
        for t in range(xs.shape[0]):
            self.gate_products(state, weights, xs[t], h_prev)
            self.cell_update(state, weights, state.x_gates, state.h_gates, hs[t])
            h_prev = hs[t]

    def gate_products(self, state, weights, x_t, h_prev):
        """x_t @ W into state.x_gates and h_prev @ U into state.h_gates: one GEMM per gate and operand,
        each reading its gate's rows of the stored W^T or U^T with the 'T' flag."""
        for g in range(4):
            gemm(x_t, gate_rows(weights.kernel, g), gate_columns(state.x_gates, g),
                 transpose_b=True, stream=state.stream)
            gemm(h_prev, gate_rows(weights.recurrent, g), gate_columns(state.h_gates, g),
                 transpose_b=True, stream=state.stream)

    def cell_update(self, state, weights, x_gates, h_gates, h_t):
        """Bias, activations, c and h: 17 separate kernels, each a round trip through memory."""
        stream = state.stream
        for g in range(4):
            z, act = gate_columns(state.z, g), gate_columns(state.act, g)
            pw.add(gate_columns(x_gates, g), gate_columns(h_gates, g), z, stream=stream)
            pw.add_bias(z, weights.bias[g * z.shape[1]:(g + 1) * z.shape[1]], z, stream=stream)
            GATE_ACTIVATIONS[g](z, act, stream=stream)
        i, f, g, o = (gate_columns(state.act, gate) for gate in range(4))
        c, tmp = state.c, state.tmp
        pw.mul(f, c, tmp[0], stream=stream)  # f * c
        pw.mul(i, g, tmp[1], stream=stream)  # i * g
        pw.add(tmp[0], tmp[1], c, stream=stream)  # c = f*c + i*g
        pw.tanh(c, tmp[0], stream=stream)  # tanh(c)
        pw.mul(o, tmp[0], h_t, stream=stream)  # h = o * tanh(c)


STEP = Baseline()
