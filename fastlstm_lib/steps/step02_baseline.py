"""Step 02, the baseline: the LSTM op by op, as the NVIDIA blog's starting point computes it.

Per layer and time step:
- 8 GEMMs: for each gate g in (i, f, c, o), x_t @ W_g and h_{t-1} @ U_g, each (batch x H);
- 17 small element-wise kernels: add the two products, add the bias, apply the gate's
  activation (4 gates x 3), then c = f*c + i*g (3) and h = o*tanh(c) (2).
25 launches per layer-step, every intermediate going through global memory. Layers run one
after the other, time-major, everything on the default stream.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from numba import cuda

from ..kernels import pointwise as pw
from ..kernels.gemm import gemm
from ._base import LSTMStep

#: Which activation each gate gets, in Keras' gate order i, f, c, o.
GATE_ACTIVATIONS = (pw.sigmoid, pw.sigmoid, pw.tanh, pw.sigmoid)


def upload_gate_weights(layer, hidden):
    """The layer's weights on the device, and one view per gate: gate g owns columns g*H:(g+1)*H."""
    kernel = cuda.to_device(layer.kernel)
    recurrent = cuda.to_device(layer.recurrent_kernel)
    bias = cuda.to_device(layer.bias)
    gate = [slice(g * hidden, (g + 1) * hidden) for g in range(4)]
    return SimpleNamespace(
        kernel=[kernel[:, s] for s in gate],  # 4 x (in, H), strided views
        recurrent=[recurrent[:, s] for s in gate],  # 4 x (H, H)
        bias=[bias[s] for s in gate],  # 4 x (H,)
    )


def scratch(shape, count=None):
    """Uninitialised device buffers: every kernel writes them fully before anybody reads them."""
    if count is None:
        return cuda.device_array(shape, dtype="float32")
    return [cuda.device_array(shape, dtype="float32") for _ in range(count)]


class Baseline(LSTMStep):
    name = "baseline"
    title = "op by op: 8 GEMMs and 17 point-wise kernels per layer-step"

    def setup(self, params, cfg, **options):
        if options:
            raise TypeError(f"{self.name} takes no options, got {sorted(options)}")
        B, H, T = cfg.batch, cfg.hidden, cfg.seq_len
        return SimpleNamespace(
            layers=[upload_gate_weights(layer, H) for layer in params],
            # Outputs of the layers below the top one, ping-ponged (layer l reads l-1's).
            hidden_seq=scratch((T, B, H), 2) if cfg.layers > 1 else [],
            h_zero=cuda.to_device(np.zeros((B, H), dtype=np.float32)),  # h before step 0
            c=scratch((B, H)),
            x_part=scratch((B, H), 4),
            h_part=scratch((B, H), 4),
            z=scratch((B, H), 4),
            gate=scratch((B, H), 4),
            tmp=scratch((B, H), 2),
        )

    def run(self, state, x, out):
        layer_input = x
        last = len(state.layers) - 1
        for index, weights in enumerate(state.layers):
            layer_output = out if index == last else state.hidden_seq[index % 2]
            self.run_layer(state, weights, layer_input, layer_output)
            layer_input = layer_output

    def run_layer(self, state, weights, xs, hs):
        pw.fill(state.c, 0.0)
        h_prev = state.h_zero
        for t in range(xs.shape[0]):
            self.cell_step(state, weights, xs[t], h_prev, hs[t])
            h_prev = hs[t]

    def cell_step(self, s, w, x_t, h_prev, h_t):
        for g in range(4):
            gemm(x_t, w.kernel[g], s.x_part[g])
            gemm(h_prev, w.recurrent[g], s.h_part[g])
            pw.add(s.x_part[g], s.h_part[g], s.z[g])
            pw.add_bias(s.z[g], w.bias[g], s.z[g])
            GATE_ACTIVATIONS[g](s.z[g], s.gate[g])
        i, f, g, o = s.gate
        pw.mul(f, s.c, s.tmp[0])  # f * c
        pw.mul(i, g, s.tmp[1])  # i * g
        pw.add(s.tmp[0], s.tmp[1], s.c)  # c = f*c + i*g
        pw.tanh(s.c, s.tmp[0])  # tanh(c)
        pw.mul(o, s.tmp[0], h_t)  # h = o * tanh(c)


STEP = Baseline()
