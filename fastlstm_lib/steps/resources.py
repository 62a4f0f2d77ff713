"""What steps allocate in ``setup``: device buffers, views of them, and stream-ordering events."""

from __future__ import annotations

from numba import cuda

from ..runtime.device import DEVICE


def scratch(shape, count=None):
    """Uninitialised float32 device buffers (one, or a list of ``count``): every kernel writes
    them fully before anybody reads them."""
    if count is None:
        return cuda.device_array(shape, dtype="float32")
    return [cuda.device_array(shape, dtype="float32") for _ in range(count)]


def rows(sequence):
    """A contiguous (steps, B, F) block of a sequence as the (steps*B, F) matrix a GEMM takes."""
    steps, batch, features = sequence.shape
    return sequence.reshape(steps * batch, features)


def ordering_event():
    """A CUDA event used only to order streams, not to time them (cheaper on a GPU: no timestamp).

    The simulator's events take no arguments; its streams run synchronously anyway.
    """
    return cuda.event(timing=False) if DEVICE.compiled else cuda.event()
