"""The tensor-core instructions on Numba's CUDA simulator: ``to_tf32`` and ``mma_tf32_m16n8k8``
with the intrinsics' signatures, computing what the hardware computes, so a kernel that uses them
runs and is checked on any laptop.

``to_tf32`` is ``tf32.round_tf32`` on one value (bit for bit what ptxas makes of ``cvt.rna``).

``mma_tf32_m16n8k8`` is one instruction for a whole warp, but on the simulator every CUDA thread
is a Python thread that calls it with its own 10 registers. So the call is a rendezvous: each lane
leaves its fragments in its warp's slot (one per block and warp; blocks are told apart by the
simulator's block manager) and waits; the 32nd lane to arrive places the fragments in A (16 x 8),
B (8 x 8) and C (16 x 8) by the PTX ISA's layout (``layout.table``), computes D = A x B + C, and
wakes the others, each of which takes its 4 elements of D by the same layout. A warp's rendezvous
needs none of the other warps: warps may call it different numbers of times, between
``cuda.syncthreads()`` or not.

What the hardware does is followed where the PTX ISA says: A and B are read as TF32 (the 13 low
bits ignored, ``tf32.truncate_tf32``); C and D are float32. The products of TF32 values are exact;
the stand-in adds them and C in float64 and rounds D once to float32, where the tensor core adds
in about float32 precision in its own order: the two agree to a few float32 ulps of sum |a||b|
(the tests' tolerance says how many), not bit for bit.

Misuse that hangs or corrupts a GPU is an error here, said plainly: a block whose thread count is
no multiple of 32 (a partial warp), a call from outside a kernel, and a warp whose 32 lanes do not
all reach the call (a divergent ``mma``: ``.sync.aligned`` forbids it), found when every thread
of the block is waiting (in ``syncthreads`` or an ``mma``) and this warp's rendezvous cannot
complete. When another thread fails, the simulator's abort flag ends the waits.
"""

from __future__ import annotations

import threading
import time
import weakref

import numpy as np

from .layout import WARP, M, N, K, table
from .tf32 import round_tf32, truncate_tf32

#: How often (seconds) a waiting lane looks for an abort or a rendezvous that cannot complete, and
#: how long a missing lane may stay unseen (not started yet, or exited) before it counts as exited.
POLL_S = 0.2
GRACE_S = 5.0  # generous: a loaded machine (CI runs tests two at a time) may start a thread late

_A, _B, _C = table("a"), table("b"), table("c")


def to_tf32(x):
    """``x`` rounded to TF32 as ``cvt.rna.tf32.f32`` does, as a np.float32."""
    return round_tf32(np.float32(x))


class _Warp:
    """One warp's rendezvous: the fragments of the lanes that have arrived, and D once complete."""

    def __init__(self):
        self.generation = 0
        self.arrived = 0
        self.lanes = set()  # the threadIdx tuples of the lanes that have arrived
        self.a = np.zeros((WARP, 4), np.float32)
        self.b = np.zeros((WARP, 2), np.float32)
        self.c = np.zeros((WARP, 4), np.float32)
        self.d = np.zeros((WARP, 4), np.float32)

    def complete(self):
        """D = A x B + C from the 32 lanes' fragments, each lane's 4 elements of D in ``d``."""
        a, b, c = np.zeros((M, K)), np.zeros((K, N)), np.zeros((M, N))
        a[_A] = truncate_tf32(self.a)
        b[_B] = truncate_tf32(self.b)
        c[_C] = self.c
        with np.errstate(invalid="ignore", over="ignore"):  # inf x 0 is NaN, as on the GPU
            self.d = (a @ b + c).astype(np.float32)[_C]
        self.arrived = 0
        self.lanes = set()
        self.generation += 1


#: block manager -> {warp: _Warp}; thread -> (its _Warp, the generation it waits to complete); one
#: lock for all of them. A woken lane leaves ``_waiting`` only once it has the lock again, so a
#: thread is waiting only while its generation is the warp's current one.
_warps: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_waiting: dict = {}
_condition = threading.Condition()


def _where_am_i():
    """(this thread, its block manager, warp, lane, the threadIdx tuples of its warp's 32 lanes),
    checking that the block has whole warps."""
    thread = threading.current_thread()
    manager = getattr(thread, "_manager", None)
    if manager is None or not hasattr(thread, "threadIdx"):
        raise RuntimeError("mma_tf32_m16n8k8 is a device function: call it from a kernel's threads")
    x, y, z = (tuple(manager._block_dim) + (1, 1))[:3]
    idx = thread.threadIdx
    tid = idx.x + x * (idx.y + y * idx.z)
    if (x * y * z) % WARP:
        raise ValueError(f"mma_tf32_m16n8k8 needs whole warps: the block has {x * y * z} threads, "
                         f"not a multiple of {WARP}")
    first = tid - tid % WARP
    warp_lanes = {(i % x, i // x % y, i // (x * y)) for i in range(first, first + WARP)}
    return thread, manager, tid // WARP, tid % WARP, warp_lanes


def _in_mma(thread) -> bool:
    """Whether ``thread`` waits in an mma whose warp has not completed it yet."""
    warp, generation = _waiting.get(thread, (None, None))
    return warp is not None and warp.generation == generation


def _stuck(manager, missing: set) -> str | None:
    """Why this warp's rendezvous can never complete, or None (called under the lock). It cannot
    when no thread of the block can move, each alive one waiting in syncthreads or in an mma (mma
    waits change only under the lock, and the simulator releases syncthreads only when every alive
    thread is in it, never while one waits here), and the ``missing`` lanes (threadIdx tuples) are
    among them, or have exited. A missing lane that is in no list has exited or is not started
    yet (the simulator starts a block's threads one by one): the caller waits ``GRACE_S`` before
    taking it for exited."""
    block = {tuple(t.threadIdx): t for t in threading.enumerate()
             if getattr(t, "_manager", None) is manager and t.is_alive()}
    if not all(_in_mma(t) or getattr(t, "syncthreads_blocked", False) for t in block.values()):
        return None
    absent = sorted(missing - set(block))
    return f"lanes at threadIdx {absent} exited without it" if absent else "the missing lanes wait elsewhere"


def mma_tf32_m16n8k8(a0, a1, a2, a3, b0, b1, c0, c1, c2, c3):
    """This lane's (d0, d1, d2, d3) of D = A x B + C, the warp's 16 x 8 x 8 TF32 product (see the
    module docstring and ``layout`` for which lane holds what)."""
    thread, manager, warp_id, lane, warp_lanes = _where_am_i()
    with _condition:
        warp = _warps.setdefault(manager, {}).setdefault(warp_id, _Warp())
        generation = warp.generation
        warp.a[lane] = (a0, a1, a2, a3)
        warp.b[lane] = (b0, b1)
        warp.c[lane] = (c0, c1, c2, c3)
        warp.arrived += 1
        warp.lanes.add(tuple(thread.threadIdx))
        if warp.arrived == WARP:
            warp.complete()
            _condition.notify_all()
        else:
            _waiting[thread] = (warp, generation)
            unseen_since = None
            try:
                while warp.generation == generation:
                    _condition.wait(POLL_S)
                    if getattr(thread, "abort", False):
                        raise RuntimeError("abort flag set while waiting in mma_tf32_m16n8k8 (another thread failed)")
                    why = None if warp.generation != generation else _stuck(manager, warp_lanes - warp.lanes)
                    if why is None:
                        unseen_since = None
                        continue
                    if "exited" in why:  # or not started yet: give the simulator time to start it
                        unseen_since = unseen_since or time.monotonic()
                        if time.monotonic() - unseen_since < GRACE_S:
                            continue
                    raise RuntimeError(
                        f"mma_tf32_m16n8k8: only {warp.arrived} of the {WARP} lanes of warp {warp_id} reached it "
                        f"and every thread of the block is waiting ({why}): mma.sync.aligned needs the whole "
                        f"warp to execute the same mma together (no divergence, no lane that has exited)")
            finally:
                _waiting.pop(thread, None)
        return tuple(warp.d[lane])
