"""The tensor-core instructions as Numba intrinsics, for a GPU (and the fake GPU, which compiles for
one): ``to_tf32(x)``, PTX ``cvt.rna.tf32.f32``, and ``mma_tf32_m16n8k8(a0..a3, b0, b1, c0..c3)``,
PTX ``mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32``, both written as inline PTX through
llvmlite's ``ir.InlineAsm`` (as numba-cuda's own ``cache_hints.py`` writes its loads).

numba-cuda 0.30.4 has no wmma/mma API of its own; ``numba.cuda.extending.intrinsic`` lets a device
function emit LLVM IR directly, and an inline-asm call is IR. A TF32 value travels in a .b32
register: here it is a float32 whose low 13 mantissa bits are zero, bit-cast to i32 on the way in.

``make()`` builds them (imported lazily: the simulator has no ``numba.cuda.extending``).
"""

from __future__ import annotations

#: The PTX of one warp-wide m16n8k8 TF32 multiply-accumulate: D (4 f32) = A (4 .b32) x B (2 .b32) + C (4 f32).
MMA_PTX = ("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
           "{$0, $1, $2, $3}, {$4, $5, $6, $7}, {$8, $9}, {$10, $11, $12, $13};")
#: The TF32 conversion. ptxas expands it (sm_80, sm_90) to: add 0x1000 to the bits unless |x| is
#: infinite or NaN (FSETP + add: round to nearest, ties away from zero), then clear the low 13 bits
#: (LOP3), a step it drops where only an ``mma`` reads the result: the tensor core ignores those bits.
CVT_PTX = "cvt.rna.tf32.f32 $0, $1;"


def make():
    """(to_tf32, mma_tf32_m16n8k8) as Numba intrinsics (device code only)."""
    from llvmlite import ir
    from numba import types
    from numba.cuda.extending import intrinsic

    f32, i32 = ir.FloatType(), ir.IntType(32)

    def real(kind) -> bool:
        return isinstance(kind, (types.Float, types.Integer))

    def as_f32(context, builder, value, kind):
        return context.cast(builder, value, kind, types.float32)

    @intrinsic
    def to_tf32(typingctx, x):
        """x rounded to TF32 (10 mantissa bits, to nearest, ties away from zero), as a float32."""
        if not real(x):
            return None

        def codegen(context, builder, sig, args):
            value = as_f32(context, builder, args[0], sig.args[0])
            convert = ir.InlineAsm(ir.FunctionType(i32, [f32]), CVT_PTX, "=r,f", side_effect=False)
            bits = builder.call(convert, [value])
            return builder.bitcast(bits, f32)

        return types.float32(x), codegen

    @intrinsic
    def mma_tf32_m16n8k8(typingctx, a0, a1, a2, a3, b0, b1, c0, c1, c2, c3):
        """This lane's 4 accumulators of D = A x B + C for one warp's 16 x 8 x 8 TF32 tile."""
        operands = (a0, a1, a2, a3, b0, b1, c0, c1, c2, c3)
        if not all(real(kind) for kind in operands):
            return None

        def codegen(context, builder, sig, args):
            values = [as_f32(context, builder, value, kind) for value, kind in zip(args, sig.args)]
            inputs = [builder.bitcast(value, i32) for value in values[:6]] + values[6:]
            result = ir.LiteralStructType([f32] * 4)
            asm = ir.InlineAsm(ir.FunctionType(result, [i32] * 6 + [f32] * 4), MMA_PTX,
                               "=f,=f,=f,=f,r,r,r,r,r,r,f,f,f,f", side_effect=True)
            out = builder.call(asm, inputs, attrs=("convergent",))
            items = [builder.extract_value(out, i) for i in range(4)]
            return context.make_tuple(builder, sig.return_type, items)

        return types.UniTuple(types.float32, 4)(*operands), codegen

    return to_tf32, mma_tf32_m16n8k8
