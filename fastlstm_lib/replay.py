"""A forward pass issued once through the step's own code, then replayed: each launch then costs
the host what numba-cuda's own dispatch costs, and nothing of ours.

The steps' ``run`` methods are written to be read. Before each launch they make views (``hs[t]``,
one gate's columns of a stacked matrix), check shapes, choose a blocking and look up the compiled
kernel; all of that is Python the host repeats every pass, on top of numba-cuda's own dispatch
(typing the arguments, packing them, calling the driver). On a GPU that finishes a layer-step's
GEMM in tens of microseconds, the host's Python is what sets the pace (issue 23;
``PYTHONPATH=tests python -m fakegpu host-times`` measures both through numba-cuda's real dispatch).

``record(run)`` runs one pass for real and writes down, in issue order, every
``kernel[configuration](*args)`` and every event ``record``/``wait`` it queued. ``Replay()``
issues exactly that list again: the same kernels, configurations, arrays and streams, with no
view made, nothing allocated, checked or chosen. It is a CUDA Graph done on the host: the GPU
gets the same work, only the Python between launches is gone.

A pass can be replayed only if it is nothing but launches and stream ordering, as a step's
``run`` must be (``steps/base.py``): the same arrays every time, nothing copied between host and
device, nothing waited for. A pass that copies or synchronises is not recorded (``record``
returns None) and the runner runs the step's code every time, as before.

Replay looks the kernel class's ``__getitem__`` up at every launch, so whatever intercepts
launches then (``fl.count_launches``, through ``launches.intercept``) still sees replayed
launches, and the simulator (whose kernels configure themselves in place) replays correctly.
"""

from __future__ import annotations

from numba import cuda

from .launches import intercept, patched

#: Host-device operations that make a pass unreplayable: (where, attribute name).
_HOST_DEVICE = ("to_device", "synchronize")
_ARRAY_COPIES = ("copy_to_device", "copy_to_host")


class Replay:
    """A recorded pass. ``replay()`` issues it again; ``launches``: how many kernels it queues."""

    def __init__(self, ops: list):
        self.ops = ops  # ("launch", kernel, configuration, args) | ("record" | "wait", event, stream)
        self.launches = sum(op[0] == "launch" for op in ops)

    def __call__(self) -> None:
        for kind, target, how, args in self.ops:
            if kind == "launch":
                type(target).__getitem__(target, how)(*args)
            elif kind == "record":
                target.record(how)
            else:
                target.wait(how)

    def __repr__(self) -> str:
        return f"<replay of {self.launches} launches, {len(self.ops) - self.launches} event operations>"


def _event_class():
    return type(cuda.event())  # the driver's Event, or the simulator's


def _array_class():
    return type(cuda.device_array(1, dtype="float32"))


def record(run) -> Replay | None:
    """Run ``run()`` (one pass) for real, recording what it queues; the Replay, or None if the pass
    copied between host and device or synchronised (then it cannot be replayed)."""
    ops: list = []
    refused: list = []
    events, arrays = _event_class(), _array_class()
    event_record, event_wait = events.record, events.wait

    def recording_launch(kernel, configuration, configure):
        configured = configure(kernel, configuration)

        def launch(*args):
            ops.append(("launch", kernel, configuration, args))
            return configured(*args)

        return launch

    def recording_record(event, stream=0):
        ops.append(("record", event, stream, None))
        return event_record(event, stream)

    def recording_wait(event, stream=0):
        ops.append(("wait", event, stream, None))
        return event_wait(event, stream)

    def refusing(target, name):
        original = getattr(target, name)

        def call(*args, **kwargs):
            refused.append(name)
            return original(*args, **kwargs)

        return call

    patches = [(events, "record", recording_record), (events, "wait", recording_wait)]
    patches += [(cuda, name, refusing(cuda, name)) for name in _HOST_DEVICE]
    patches += [(arrays, name, refusing(arrays, name)) for name in _ARRAY_COPIES]
    with intercept(recording_launch), patched(patches):
        run()
    return None if refused else Replay(ops)
