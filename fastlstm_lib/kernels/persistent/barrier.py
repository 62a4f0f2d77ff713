"""The persistent kernels' light grid barrier (issue 67, item 2): arrive with a release, poll with an
acquire, and the host-side facts that make spinning on it safe.

Between two time steps every block must see every other block's h_t. Version 2's barrier is
``threadfence(); atomic add; while atomic add(0) < target; threadfence()``: on sm_90 two
``MEMBAR.SC.GPU`` (sequentially consistent fences, the heaviest there are) and an atomic
read-modify-write at every poll. What the barrier needs is weaker (PTX ISA, memory consistency
model: release and acquire patterns):

- ``arrive(counter)``: PTX ``red.release.gpu.global.add.u32 [counter], 1``: the block's stores
  (ordered before it by the ``bar.sync`` that precedes it) happen before anyone who reads the
  counter with an acquire sees the add. ptxas makes it ``MEMBAR.ALL.GPU`` + ``REDG.E.ADD.STRONG.GPU``
  on sm_90 (a release fence, not ``.SC``), and an add with no return value (``RED``, not ``ATOM``).
- ``poll(counter)``: PTX ``ld.acquire.gpu.global.u32``: a plain strong load (``LDG.E.STRONG.GPU``,
  no atomic), whose acquire orders every later load of the thread after it. The spin loop re-reads
  it each trip: the inline asm has side effects and clobbers memory, so the compiler can neither
  hoist it out of the loop nor keep the value in a register (``cuda.ldcv`` polling, a plain
  volatile load with no clobber, was hoisted by the compiler and would hang: issue 67).

Both are Numba intrinsics emitting inline PTX through llvmlite's ``ir.InlineAsm``. ``.release``
and ``.acquire`` exist from sm_70; the kernel is compiled for sm_52 too (the compile matrix), so
the intrinsics ask NVVM for the architecture (``__nvvm_reflect("__CUDA_ARCH")``, folded at compile
time) and below sm_70 emit the older pattern (``membar.gl`` + ``red.global.add``, ``ld.volatile``
then ``membar.gl``). No GPU below sm_70 here can launch the kernel cooperatively anyway (the M40).

On the simulator blocks run one after another, so no barrier can be spun on; the kernels use the
device runtime's ``cuda.cg.this_grid().sync()`` there instead, and these names are stand-ins that
do the same arithmetic in Python (for a single block's tests).

Host side (``require_cooperative``, ``Counters``): a spinning barrier is safe only if every block
is resident at once, which only a cooperative launch guarantees (the driver refuses one that is
not, rather than letting it spin): the kernel's one ``grid.sync()`` at its start is what makes
Numba launch it cooperatively, so the launch checks the compiled kernel says so. And each launch
that may run at the same time as another needs a counter of its own (``Counters``).
"""

from __future__ import annotations

import weakref

import numpy as np

from ...runtime.device import DEVICE

#: Below this architecture (x 10, as ``__CUDA_ARCH``), no ``.release``/``.acquire`` qualifiers.
ACQUIRE_RELEASE_ARCH = 700
ARRIVE_PTX = "red.release.gpu.global.add.u32 [$0], $1;"
POLL_PTX = "ld.acquire.gpu.global.u32 $0, [$1];"
#: sm_60 and older: a fence, then the add; a volatile load, then a fence.
ARRIVE_PTX_OLD = "membar.gl;\n\tred.global.add.u32 [$0], $1;"
POLL_PTX_OLD = "ld.volatile.global.u32 $0, [$1];\n\tmembar.gl;"


def _intrinsics():
    """(arrive(counter, index), poll(counter, index) -> uint32) as Numba intrinsics: ``counter`` a
    uint32 array in global memory, ``index`` an integer."""
    from llvmlite import ir
    from numba import types
    from numba.cuda import cgutils, nvvmutils
    from numba.cuda.extending import intrinsic

    i32, i64 = ir.IntType(32), ir.IntType(64)

    def fits(counter, index):
        return (isinstance(counter, types.Array) and counter.dtype == types.uint32 and counter.ndim == 1
                and isinstance(index, types.Integer))

    def address(context, builder, sig, args):
        """The element's address as a global-space u64: generic and global addresses coincide on every
        CUDA GPU, and ``cvta.to.global`` costs nothing (ptxas folds it)."""
        array_type, struct = sig.args[0], context.make_array(sig.args[0])(context, builder, value=args[0])
        index = context.cast(builder, args[1], sig.args[1], types.intp)
        pointer = cgutils.get_item_pointer(context, builder, array_type, struct, [index], wraparound=False)
        generic = builder.ptrtoint(pointer, i64)
        to_global = ir.InlineAsm(ir.FunctionType(i64, [i64]), "cvta.to.global.u64 $0, $1;", "=l,l")
        return builder.call(to_global, [generic])

    def new_enough(builder):
        """An i1, folded by NVVM when it compiles for an architecture: sm_70 or newer."""
        module = builder.basic_block.function.module
        reflect = cgutils.get_or_insert_function(module, ir.FunctionType(i32, [ir.PointerType(ir.IntType(8))]),
                                                 "__nvvm_reflect")
        arch = builder.call(reflect, [nvvmutils.declare_string(builder, "__CUDA_ARCH")])
        return builder.icmp_signed(">=", arch, ir.Constant(i32, ACQUIRE_RELEASE_ARCH))

    def counter_op(new_text: str, old_text: str, returns: bool):
        """An intrinsic running ``new_text`` (sm_70 on) or ``old_text`` on counter[index]: with a
        uint32 result (``$0``, the address ``$1``) if ``returns``, else with the address ``$0`` and 1
        as ``$1``. Side effects and a memory clobber: never hoisted, never cached in a register."""
        result = i32 if returns else ir.VoidType()

        @intrinsic
        def op(typingctx, counter, index):
            if not fits(counter, index):
                return None

            def codegen(context, builder, sig, args):
                at = address(context, builder, sig, args)
                operands = [at] if returns else [at, ir.Constant(i32, 1)]
                constraints = "=r,l,~{memory}" if returns else "l,r,~{memory}"
                seen = []
                with builder.if_else(new_enough(builder)) as (new, old):
                    for block, text in ((new, new_text), (old, old_text)):
                        with block:
                            asm = ir.InlineAsm(ir.FunctionType(result, [x.type for x in operands]), text, constraints,
                                               side_effect=True)
                            seen.append((builder.call(asm, operands), builder.basic_block))
                if not returns:
                    return context.get_dummy_value()
                value = builder.phi(i32)
                for got, block in seen:
                    value.add_incoming(got, block)
                return value

            return (types.uint32 if returns else types.void)(counter, index), codegen

        return op

    # arrive: counter[index] += 1, release at GPU scope; poll: counter[index], acquire, read afresh.
    return counter_op(ARRIVE_PTX, ARRIVE_PTX_OLD, returns=False), counter_op(POLL_PTX, POLL_PTX_OLD, returns=True)


if DEVICE.compiled:  # a GPU or the fake GPU: the instructions themselves
    arrive, poll = _intrinsics()
else:  # the simulator: plain Python stand-ins (its kernels call grid.sync() instead of spinning)
    from numba import cuda

    @cuda.jit(device=True)
    def arrive(counter, index):
        cuda.atomic.add(counter, index, 1)

    @cuda.jit(device=True)
    def poll(counter, index):
        return counter[index]


# ---------------------------------------------------------------------------------- host side

class NotCooperativeError(RuntimeError):
    """A persistent kernel would be launched without the cooperative attribute: its grid barrier
    could spin forever (a block waiting for blocks that are not resident)."""


def require_cooperative(compiled_kernel, name: str) -> None:
    """NotCooperativeError unless Numba will launch ``compiled_kernel`` cooperatively.

    Numba launches a kernel cooperatively (``cuLaunchKernelEx`` with CU_LAUNCH_ATTRIBUTE_COOPERATIVE)
    exactly when its code library uses the device runtime's grid group (``cuda.cg.this_grid()``):
    the kernel's ``_Kernel.cooperative``, set from ``lib.use_cooperative`` when it is compiled. The
    persistent kernels call ``grid.sync()`` once, at their start, for that reason alone; a kernel
    that lost the call (or a Numba that stops setting the flag) would launch as an ordinary grid,
    where a block may wait at the barrier for blocks that cannot become resident until it exits."""
    cooperative = getattr(compiled_kernel, "cooperative", None)
    if cooperative is not True:
        raise NotCooperativeError(
            f"{name}: the compiled kernel would not be launched cooperatively (Numba's _Kernel.cooperative is "
            f"{cooperative!r}); its grid barrier spins until every block has arrived, which is safe only when the "
            f"driver guarantees every block resident at once (a cooperative launch). The kernel must call "
            f"cuda.cg.this_grid().sync() (it does so once, at its start) for Numba to launch it cooperatively; "
            f"launching anyway could hang the GPU, so nothing was launched.")


def _is_capturing(stream) -> bool:
    """Whether ``stream`` (a Numba stream, a handle or 0) is being captured into a CUDA Graph."""
    handle = _handle(stream)
    if handle in (None, 0, 1, 2):  # the default stream is never captured (capture may not begin there)
        return False
    from numba.cuda.cudadrv.driver import binding, driver

    status = driver.cuStreamIsCapturing(binding.CUstream(handle))
    return int(getattr(status, "value", status)) != 0


def _stream_key(stream):
    """The default stream (0, None, or a Stream object of handle 0, 1 or 2) as "default", any other
    stream object as itself (held weakly), a bare handle as its number. (The simulator's streams
    have no handle: each object is itself.)"""
    if stream is None or isinstance(stream, (int, np.integer)):
        return "default" if int(stream or 0) in (0, 1, 2) else int(stream)
    if hasattr(stream, "handle") and _handle(stream) in (0, 1, 2):
        return "default"
    return stream


def _handle(stream) -> int | None:
    """A Numba stream's driver handle as a number (a ctypes pointer, a cuda.bindings CUstream), or
    None where it has none (the simulator's)."""
    handle = getattr(stream, "handle", stream)
    handle = getattr(handle, "value", handle)
    try:
        return int(handle or 0)
    except TypeError:
        return None


class Counters:
    """The grid barriers' counters: which launches may share one.

    A launch zeroes its counter before its blocks count themselves in (block 0, before the kernel's
    one ``grid.sync()``), so two launches may share a counter exactly when they never run at the
    same time:

    - launches issued now, on one stream, run one after another: one counter per stream, held
      as long as the stream object lives (a Numba ``Stream``: a later stream given the same driver
      handle gets a new counter; the default stream has one for the process);
    - a launch captured into a CUDA Graph keeps its counter's address in the graph, and a graph
      may be instantiated twice and launched on two streams at once: each captured launch gets a
      counter of its own, never handed out again (it lives as long as this process: 4 bytes a
      capture). Nothing may be allocated during a capture (the driver refuses ``cuMemAlloc`` while
      a stream is captured in global mode), so those counters come from a reserve allocated
      outside it, ``RESERVE`` at a time, topped up at the next launch outside a capture (or by
      ``reserve(n)`` before a capture of many launches).
    A launch of one instantiated graph waits for its previous launch (CUDA runs one instance of a
    graph exec at a time), so one captured counter serves all its replays."""

    RESERVE = 16

    def __init__(self):
        self._streams: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._handles: dict = {}
        self._spare: list = []
        self._captured: list = []  # kept alive: their graphs may be launched at any time

    def reserve(self, count: int = RESERVE) -> None:
        """At least ``count`` counters ready for captured launches (call it outside a capture)."""
        from numba import cuda

        if len(self._spare) < count:
            block = cuda.device_array(count - len(self._spare), np.uint32)
            self._spare.extend(block[i:i + 1] for i in range(block.size))

    def for_launch(self, stream):
        """The counter a launch on ``stream`` is to use (see the class's docstring)."""
        from numba import cuda

        if DEVICE.compiled and _is_capturing(stream):
            if not self._spare:
                raise RuntimeError(
                    "the persistent kernel's grid barrier needs a counter of its own for each launch captured into a "
                    "CUDA Graph, and none is left in reserve (nothing may be allocated during a capture): call "
                    "fastlstm_lib.kernels.persistent.barrier.COUNTERS.reserve(n) before the capture, n at least the "
                    "persistent launches it captures")
            counter = self._spare.pop()
            self._captured.append(counter)
            return counter
        if DEVICE.compiled and len(self._spare) < self.RESERVE // 2:
            self.reserve()
        key = _stream_key(stream)
        table = self._streams if not isinstance(key, (str, int)) else self._handles
        counter = table.get(key)
        if counter is None:
            counter = table[key] = cuda.device_array(1, np.uint32)
        return counter

    @property
    def captured(self) -> int:
        """How many counters captured launches hold."""
        return len(self._captured)


#: The process's counters, shared by every persistent version that uses them.
COUNTERS = Counters()
