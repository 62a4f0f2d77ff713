"""Reading the compile matrix's table and SASS listings (fastlstm_lib/course/sass.py, notebook 12): any machine, no compiler."""

import pytest

from fastlstm_lib.course import sass
from fastlstm_lib.course.sass import LISTED, read_table


def test_every_listed_main_loop_is_committed_and_agrees_with_the_table():
    assert set(sass.available()) == LISTED
    table = {(row["kernel"], row["arch"]): row for row in read_table()}
    for kernel, arch in LISTED:
        counts = sass.purposes(kernel, arch)
        row = table[(kernel, arch)]
        assert sum(counts.values()) == int(row["loop_instructions"]), (kernel, arch)
        assert counts["FFMA (the work)"] == int(row["loop_ffma"])
        assert counts["shared-memory loads"] == int(row["loop_shared_loads"])
        assert counts["global loads"] == int(row["loop_global_loads"])
        assert counts["barriers"] == int(row["loop_barriers"])


@pytest.mark.parametrize("line, purpose", [
    ("/*28a0*/ FFMA R21, R34.reuse, R35, R21 ;", "FFMA (the work)"),
    ("/*27c0*/ LDS R34, [R13+UR4] ;", "shared-memory loads"),
    ("/*17b0*/ LD.E R55, desc[UR10][R58.64] ;", "global loads"),
    ("/*1900*/ STS [R3], R55 ;", "shared-memory stores"),
    ("/*2750*/ UIMAD UR4, UR4, 0x110, URZ ;", "index and address arithmetic"),
    ("/*29a0*/ @P0 BRA `(.L_x_23) ;", "compares and branches"),
    ("/*2760*/ UISETP.NE.U32.AND UP0, UPT, UR19, URZ, UPT ;", "compares and branches"),
    ("/*4360*/ BAR.SYNC.DEFER_BLOCKING 0x0 ;", "barriers"),
    ("MOV R1, c[0x0][0x28]", "other"),
])
def test_each_instruction_gets_its_purpose(line, purpose):
    assert sass.purpose(line) == purpose


def test_bad_arguments_name_what_was_expected():
    with pytest.raises(ValueError, match="no SASS listing of kernel 'tiled_gemm' on 'sm_90'.*blocked_gemm"):
        sass.listing("tiled_gemm", "sm_90")
    with pytest.raises(TypeError, match="kernel and arch must be str"):
        sass.listing("blocked_gemm", 90)
    with pytest.raises(TypeError, match="instruction must be a str"):
        sass.purpose(None)
    with pytest.raises(ValueError, match="has no opcode"):
        sass.purpose("/*0010*/ ")
