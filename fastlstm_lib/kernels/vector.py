"""Vector loads from global memory: ``load_vector(width)``, the one instruction Numba cannot say.

A CUDA C kernel reads four neighbouring floats with one 128-bit load (``float4``, ``LDG.E.128``):
one instruction and one address computation where scalar code needs four of each. Numba has no
``float4`` for array elements, and NVVM merges neighbouring scalar loads only where it can prove
the address aligned, which it never can for an array argument (its data pointer's alignment is
unknown at compile time). ``load_vector(width)`` is a device function that loads ``width``
neighbouring elements ``array[row, col:col + width]`` of a 2-D float32 array as one vector load
and returns them as a tuple.

Its contract, checked by the launcher before the launch (``aligned``), never in the kernel: the
row's elements are contiguous and ``array[row, col]`` sits at a multiple of ``4 * width`` bytes. A
misaligned vector load is an error on a GPU ("misaligned address"), not a slow load.

On Numba's simulator it is a plain device function doing ``width`` scalar loads: the same values.
"""

from __future__ import annotations

import functools

from ..runtime.device import DEVICE

WIDTHS = (1, 2, 4)


def aligned(array, width: int) -> bool:
    """Whether every row of the 2-D device ``array`` may be read in ``width``-element vectors from
    any column that is a multiple of ``width``: contiguous rows, row stride and data pointer
    multiples of ``4 * width`` bytes (float32)."""
    if width not in WIDTHS:
        raise ValueError(f"width must be one of {WIDTHS}, got {width!r}")
    strides = tuple(array.strides)
    if len(strides) != 2 or strides[1] != 4:
        return False
    interface = getattr(array, "__cuda_array_interface__", None)
    if interface is not None:
        pointer = interface["data"][0]
    else:  # the simulator's array: the NumPy array it wraps
        inner = getattr(array, "_ary", array)
        pointer = inner.__array_interface__["data"][0]
    return strides[0] % (4 * width) == 0 and pointer % (4 * width) == 0


@functools.lru_cache(maxsize=None)
def load_vector(width: int, ndim: int = 2):
    """A device function ``load(array, row, col) -> (array[row, col], ..., array[row, col + width - 1])``
    (``ndim`` 1: ``load(array, i)``, the elements ``array[i:i + width]``), one ``width * 32``-bit load
    on a GPU (see the module docstring for its alignment contract)."""
    if width not in WIDTHS:
        raise ValueError(f"width must be one of {WIDTHS}, got {width!r}")
    if ndim not in (1, 2):
        raise ValueError(f"ndim must be 1 or 2, got {ndim!r}")
    from numba import cuda

    if not DEVICE.compiled:  # the simulator: no intrinsics, plain loads
        if ndim == 1:
            @cuda.jit(device=True)
            def load_flat(array, i):
                return tuple(array[i + v] for v in range(width))

            return load_flat

        @cuda.jit(device=True)
        def load(array, row, col):
            return tuple(array[row, col + v] for v in range(width))

        return load
    return _vector_intrinsic(width, ndim)


def _vector_intrinsic(width: int, ndim: int):
    from llvmlite import ir
    from numba import types
    from numba.cuda import cgutils
    from numba.cuda.extending import intrinsic

    def typed(array, indices):
        if not (isinstance(array, types.Array) and array.ndim == ndim and array.dtype == types.float32
                and all(isinstance(index, types.Integer) for index in indices)):
            return None
        return types.UniTuple(types.float32, width)(array, *indices)

    def codegen(context, builder, sig, args):
        array_type, data = sig.args[0], args[0]
        struct = context.make_array(array_type)(context, builder, value=data)
        index = [context.cast(builder, value, kind, types.intp) for value, kind in zip(args[1:], sig.args[1:])]
        first = cgutils.get_item_pointer(context, builder, array_type, struct, index, wraparound=False)
        vector_type = ir.VectorType(ir.FloatType(), width)
        vector = builder.load(builder.bitcast(first, vector_type.as_pointer()), align=4 * width)
        items = [builder.extract_element(vector, ir.Constant(ir.IntType(32), v)) for v in range(width)]
        return context.make_tuple(builder, sig.return_type, items)

    if ndim == 1:
        @intrinsic
        def load_flat(typingctx, array, i):
            signature = typed(array, (i,))
            return None if signature is None else (signature, codegen)

        return load_flat

    @intrinsic
    def load(typingctx, array, row, col):
        signature = typed(array, (row, col))
        return None if signature is None else (signature, codegen)

    return load
