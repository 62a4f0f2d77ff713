"""Exercise (notebook 06): ``upload_weights`` in the layout the GEMM reads without its 'T' flag; the
solution is ``Pretransposed``. Layout mistakes give right numbers, so the upload itself is inspected."""

from __future__ import annotations

from ...config import LSTMConfig
from ...copies import fresh
from .trace import device_layout
from .base import Mistake
from .step_runs import StepExercise

FIELDS = ("kernel", "recurrent", "bias", "transposed")


def layout(evidence) -> dict:
    """What is off about the namespace ``upload_weights`` returns for layer 0, {problem: sentence}; {} where
    it raises or lacks a field (the traced run says so)."""
    try:
        weights = evidence.step.upload_weights(fresh(evidence.params[0]))
    except Exception:
        return {}
    if not all(hasattr(weights, f) for f in FIELDS):
        return {}
    host = [f for f in ("kernel", "recurrent", "bias") if device_layout(getattr(weights, f)) is None]
    if host:
        kinds = ", ".join(f"{f} is {type(getattr(weights, f)).__name__}" for f in host)
        return {"host": f"{kinds}: host memory, which a kernel cannot read; every field but transposed must be a "
                        "device array"}
    layer = evidence.params[0]
    found = {}
    for field, wanted in (("kernel", layer.kernel), ("recurrent", layer.recurrent_kernel)):
        array = getattr(weights, field)
        if tuple(array.shape) == wanted.shape[::-1]:
            found.setdefault("shape", f"{field} has shape {tuple(array.shape)}: one row per gate unit, the layout the "
                                       f"GEMM reads transposed; pre-transposed it is {wanted.shape}")
        elif tuple(array.shape) == wanted.shape and not array.is_c_contiguous():
            found.setdefault("order", f"{field} has the right shape {wanted.shape} but is stored column by column "
                                       f"(strides {tuple(array.strides)} bytes): in memory that is the transposed "
                                       "layout again")
    if weights.transposed and "shape" in found:
        found["previous"] = found.pop("shape") + ", and transposed=True: the previous step's upload"
    elif weights.transposed:
        found["flag"] = "kernel and recurrent are pre-transposed, but transposed=True asks the GEMM to transpose again"
    return found


def layout_problem(kind: str):
    """One kind of problem ``layout`` finds; the upload is done once per candidate."""

    def detect(evidence):
        if "layout" not in evidence.__dict__:
            evidence.__dict__["layout"] = layout(evidence)
        return evidence.__dict__["layout"].get(kind)

    return detect


EXERCISE = StepExercise(
    name="upload", notebook="06", difficulty="easy",
    title=("upload_weights(self, layer) in a subclass of FusedPointwise: the layer's weights on the device once, "
           "in the layout the GEMM reads without its 'T' flag, with the fields the baseline's upload has"),
    hints=(
        ("The baseline transposed Keras' matrices on upload. Which layout does the GEMM read "
         "without its 'T' flag?"),
        ("Compare the shapes of Keras' kernel and recurrent_kernel with the B operand of "
         'x @ W and h @ U: what, if anything, must upload do to them? And the steps decide '
         "whether to pass the GEMM its 'T' flag from what the uploaded weights say about their "
         'layout: look at what the baseline\'s upload_weights returns.'),
        ('SimpleNamespace(kernel=cuda.to_device(layer.kernel), '
         'recurrent=cuda.to_device(layer.recurrent_kernel), bias=cuda.to_device(layer.bias), '
         'transposed=False)'),
    ),
    step="pretransposed", methods=("upload_weights",),
    cfg=LSTMConfig(batch=3, seq_len=3, input_size=5, hidden=7, layers=2),
    catalog=(
        Mistake("host_arrays", "the weights stay in host memory",
                "upload means copying to the GPU: cuda.to_device(array) returns a device array; a NumPy array (or a "
                "list) stays on the host",
                layout_problem("host")),
        Mistake("still_transposed", "the weights are uploaded the way the previous step did",
                "that is the baseline's upload: W^T (4H x in) read with the 'T' flag; upload layer.kernel itself",
                layout_problem("previous")),
        Mistake("transposed_flag_kept", "transposed=True is kept",
                "the arrays are W and U in the GEMM's layout: transposed=False, or the GEMM reads them transposed again",
                layout_problem("flag")),
        Mistake("uploads_w", "W^T is uploaded instead of W",
                "layer.kernel is already W (Keras' layout, in x 4H); layer.kernel.T is W^T, the baseline's layout",
                layout_problem("shape")),
        Mistake("column_major", "W is uploaded column by column",
                "the shape is only half of the layout: np.asfortranarray (or a .T of a transposed array) keeps the "
                "shape and stores it column-major, which in memory is W^T again; upload C-contiguous arrays",
                layout_problem("order")),
    ),
)
