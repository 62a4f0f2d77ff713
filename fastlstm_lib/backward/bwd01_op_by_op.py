"""Backward step 1, op by op: the chain rule written out one kernel per operation.

Layers from the top one down, each one's steps from the last one back (its dx is the dh of the
layer below), everything on one stream. Per layer-step:
- 14 element-wise kernels for the cell: dh = dy_t + dh_rec; tanh(c_t); the output gate's
  gradient (2); dc through tanh(c_t), plus dc from step t+1 (3); the input gate's, the
  candidate's and the forget gate's gradients (2 each); dc for step t-1 (1);
- per gate g (4 x 5 GEMMs, the baseline's way of treating each gate separately): dh_rec =
  dz_g U_g^T (a sum over the 4 gates, needed by step t-1), dx_t = dz_g W_g^T, dW_g += x_t^T dz_g,
  dU_g += h_{t-1}^T dz_g and db_g += 1^T dz_g (a GEMM with a row of ones: one kernel family).
  Step 0 skips dh_rec and dU (there is no step -1, and h_{-1} = 0).
Before each layer, 5 fills zero the accumulators (dh_rec, dc and the three gradients).

What it defines: ``run_backward`` (the layers), ``backward_layer`` (the steps), and the three
methods later steps replace: ``cell_backward``, ``step_products`` and ``layer_products``.

State added: ``tmp_back``, four (B, H) temporaries of the element-wise chain.
"""

from __future__ import annotations

from ..kernels import pointwise as pw
from ..kernels import pointwise_backward as pwb
from ..kernels.gemm import gemm
from ..steps.resources import scratch
from ..steps.step02_baseline import gate_columns
from .base import BackwardStep


class BackwardOpByOp(BackwardStep):
    name = "bwd_op_by_op"
    title = "backward op by op: 14 element-wise kernels and 20 per-gate GEMMs per layer-step"

    def setup(self, params, cfg, **options):
        state = super().setup(params, cfg, **options)
        state.tmp_back = scratch((cfg.batch, cfg.hidden), 4)
        return state

    def run_backward(self, state, x, out):
        inputs = [x] + state.hidden_seq  # what each layer read...
        outputs = state.hidden_seq + [out]  # ...and wrote, in the forward pass
        dh_out = state.dy
        for layer in reversed(range(len(state.layers))):
            dx = state.dx if layer == 0 else state.dh_seq[layer - 1]  # the layer below's dh
            self.backward_layer(state, layer, inputs[layer], outputs[layer], dh_out, dx)
            dh_out = dx

    def backward_layer(self, state, layer, xs, hs, dh_out, dx):
        """One layer, its steps in reverse: dh_out (T, B, H) in; dx (T, B, in) and its gradients out."""
        self.zero_accumulators(state, layer, state.stream)
        for t in reversed(range(xs.shape[0])):
            self.cell_backward(state, state.lanes[layer], t, dh_out[t], state.stream)
            self.step_products(state, layer, t, xs, hs, dx, state.stream)
        self.layer_products(state, layer, xs, hs, dx, state.stream)

    def zero_accumulators(self, state, layer, stream):
        lane, grads = state.lanes[layer], state.grads[layer]
        for array in (lane.dh_rec, lane.dc, grads.kernel, grads.recurrent, grads.bias):
            pw.fill(array, 0.0, stream=stream)

    def cell_backward(self, state, lane, t, dh_t, stream):
        """dz_t (into lane.dz_seq[t]) and dc for step t-1 (lane.dc), one operation per kernel."""
        i, f, g, o = (gate_columns(lane.gates[t], gate) for gate in range(4))
        dz_i, dz_f, dz_g, dz_o = (gate_columns(lane.dz_seq[t], gate) for gate in range(4))
        c_prev = lane.cs[t - 1] if t > 0 else state.c_zero
        dh, tanh_c, dc, tmp = state.tmp_back
        pw.add(dh_t, lane.dh_rec, dh, stream=stream)  # dh = dy_t + dz_{t+1} U^T
        pw.tanh(lane.cs[t], tanh_c, stream=stream)
        pw.mul(dh, tanh_c, tmp, stream=stream)  # d o = dh * tanh(c)
        pwb.sigmoid_backward(tmp, o, dz_o, stream=stream)
        pw.mul(dh, o, tmp, stream=stream)  # d tanh(c) = dh * o
        pwb.tanh_backward(tmp, tanh_c, tmp, stream=stream)
        pw.add(tmp, lane.dc, dc, stream=stream)  # dc_t, with what step t+1 sent back
        pw.mul(dc, g, tmp, stream=stream)  # d i = dc * g
        pwb.sigmoid_backward(tmp, i, dz_i, stream=stream)
        pw.mul(dc, i, tmp, stream=stream)  # d g = dc * i
        pwb.tanh_backward(tmp, g, dz_g, stream=stream)
        pw.mul(dc, c_prev, tmp, stream=stream)  # d f = dc * c_{t-1}
        pwb.sigmoid_backward(tmp, f, dz_f, stream=stream)
        pw.mul(dc, f, lane.dc, stream=stream)  # what step t-1 receives through c

    def step_products(self, state, layer, t, xs, hs, dx, stream):
        """Step t's GEMMs, gate by gate: dh_rec for step t-1, dx_t and the weight gradients."""
        lane, weights, grads = state.lanes[layer], state.layers[layer], state.grads[layer]
        ones = state.ones[:, :xs.shape[1]]  # (1, B)
        for g in range(4):
            dz = gate_columns(lane.dz_seq[t], g)
            if t > 0:
                gemm(dz, gate_columns(weights.recurrent, g), lane.dh_rec, accumulate=g > 0, transpose_b=True,
                     stream=stream)
            gemm(dz, gate_columns(weights.kernel, g), dx[t], accumulate=g > 0, transpose_b=True, stream=stream)
            gemm(xs[t], dz, gate_columns(grads.kernel, g), accumulate=True, transpose_a=True, stream=stream)
            if t > 0:
                gemm(hs[t - 1], dz, gate_columns(grads.recurrent, g), accumulate=True, transpose_a=True,
                     stream=stream)
            gemm(ones, dz, gate_columns(grads.bias, g), accumulate=True, stream=stream)

    def layer_products(self, state, layer, xs, hs, dx, stream):
        """GEMMs once per layer, after its steps: none yet (see bwd04_combined_weights)."""


STEP = BackwardOpByOp()
