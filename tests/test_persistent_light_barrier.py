"""Persistent version 3 (issue 67, items 2-4): version 2 with a release/acquire grid barrier, its
cooperative launch asserted, a barrier counter per launch that graph capture handles, the 32-bit
index range checked. Right on the simulator at odd sizes (one block and several); the range check
before any launch; on the fake GPU, the refusal of a launch that would not be cooperative and two
captured graphs replayed on two streams with two counters."""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from numba import cuda

import fastlstm_lib as fl
from fastlstm_lib.kernels.persistent import barrier, v2_registers as v2, v3_light_barrier as v3
from conftest import needs_compile_matrix, needs_fake_gpu, persistent_layer_case, persistent_layer_error

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("hidden, batch", [(7, 3), (37, 5), (40, 9)])
def test_light_barrier_equals_float64(hidden, batch):
    """One thread per unit (hidden 7), three (37: k padded, a ragged last chunk of rows), h staged
    128 bits at a time (40); every element of hs written (poisoned with NaN first)."""
    assert persistent_layer_error(v3.plan(hidden, batch), hidden, batch, steps=4) <= 1e-5


def test_light_barrier_equals_keras(keras_available):
    assert persistent_layer_error(v3.plan(37, 5), 37, 5, steps=4, against="keras") <= 1e-5


def test_the_single_block_counts_itself_through_every_barrier():
    """On the simulator's single block the barrier is the intrinsics' stand-ins: one arrival per
    step after the first, on the counter the launch returns (the default stream's)."""
    _, _, arrays = persistent_layer_case(7, 3, steps=5)
    hs = cuda.to_device(np.full((5, 3, 7), np.nan, np.float32))
    counter = v3.plan(7, 3).launch(*arrays, hs)
    assert counter is barrier.COUNTERS.for_launch(0)
    assert counter.copy_to_host()[0] == 4


@pytest.mark.parametrize("hidden, batch, row_chunk, rows, double_h", [
    (7, 1, 1, 1, True), (7, 5, 1, 1, True), (13, 9, 1, 1, True), (37, 2, 1, 1, True), (37, 7, 3, 1, True),
    (37, 9, 2, 2, True), (40, 6, 3, 1, True), (40, 9, 2, 2, True), (37, 9, 2, 2, False)])
def test_double_buffered_chunks_equal_float64(hidden, batch, row_chunk, rows, double_h):
    """Chunks forced small, so that the batch takes 2 to 9 of them (the last padded where row_chunk
    does not divide the batch): chunk m + 1 staged into the other buffer while chunk m is multiplied,
    h a float (hidden 7, 13, 37) or 128 bits (40) at a time; batch 1 (one chunk) and the last case
    (double_h False: where the second buffer does not fit) stage in one. hs poisoned with NaN first."""
    plan = v3.LightBarrierPlan(hidden, batch, hidden, 1, row_chunk, rows, vector_h=hidden % 4 == 0, double_h=double_h)
    assert plan.buffers == (2 if double_h and batch > row_chunk else 1)
    assert persistent_layer_error(plan, hidden, batch, steps=4) <= 1e-5


@pytest.mark.parametrize("units, double_h", [(5, False), (5, True), (1, True)])
def test_many_blocks_index_the_right_units(units, double_h):
    """Blocks of 5 units (the last partial) or 1 (one thread: 13 pieces a row, staged in two groups
    over a chunk's one multiplication), one row a chunk, in one buffer or two.
    The simulator runs blocks in turn (grid.sync() between steps there), so every h_{t-1} is
    pre-filled with the reference's and the last step poisoned."""
    hidden, batch, steps = 13, 3, 4
    x, params, arrays = persistent_layer_case(hidden, batch, steps, seed=9)
    ref = fl.reference_forward(x, params)
    hs = np.ascontiguousarray(ref.transpose(1, 0, 2)).astype(np.float32)
    hs[-1] = np.nan
    grid = v3.LightBarrierPlan(hidden, batch, units=units, blocks=-(-hidden // units), row_chunk=1, rows=1, double_h=double_h)
    hs_device = cuda.to_device(hs)
    grid.launch(*arrays, hs_device)
    assert fl.relative_error(hs_device.copy_to_host().transpose(1, 0, 2), ref) <= 1e-5


@pytest.mark.parametrize("batch", [1, 4, 64])
def test_its_h100_plans_are_version_2s_with_a_second_buffer_at_two_chunks(batch):
    """Batch 64 takes 2 chunks of 32 rows: a second staged buffer (64 KiB more) within the H100's 227 KiB."""
    p3, p2 = v3.plan(512, batch, chip="H100", single_block=False), v2.plan(512, batch, chip="H100", single_block=False)
    assert isinstance(p3, v3.LightBarrierPlan)
    assert p3.kernel_key == p2.kernel_key + (True, batch == 64) and p3.blocks == p2.blocks == 128
    assert p3.shared_bytes == p2.shared_bytes + (batch == 64) * 32 * 512 * 4 <= fl.gpus.chip("H100").shared_bytes_per_block


def test_where_the_second_buffer_does_not_fit_it_stages_in_one():
    """An A100 at batch 64: 5 units a block stage 32 rows of 512 (64 KiB) with 84 KiB of sums; a second
    buffer would pass its 163 KiB a block."""
    p3, p2 = v3.plan(512, 64, chip="A100", single_block=False), v2.plan(512, 64, chip="A100", single_block=False)
    assert (p3.chunks, p3.buffers, p3.double_h) == (2, 1, False)
    assert p3.kernel_key == p2.kernel_key + (True, False) and p3.shared_bytes == p2.shared_bytes
    assert p3.shared_bytes + 32 * 512 * 4 > fl.gpus.chip("A100").shared_bytes_per_block


# --- the 32-bit range --------------------------------------------------------------------------

def test_the_index_range_is_checked_at_its_edge():
    v3.check_index_range(32767, 64, 512)  # x_gates: 32767 x 64 x 2048 = 2^32 - 2^17 elements
    with pytest.raises(ValueError, match=r"32768 x 64 x 2048 = 4,294,967,296"):
        v3.check_index_range(32768, 64, 512)
    with pytest.raises(ValueError, match=r"recurrent has hidden x 4 hidden = 32768 x 131072"):
        v3.check_index_range(1, 1, 32768)


def test_sizes_past_the_32_bit_range_are_refused_before_any_launch():
    """Arrays of the shapes only (broadcast: no memory): the launch names the sizes and launches nothing."""
    steps, batch, hidden = 40_000, 64, 512
    shaped = [np.broadcast_to(np.float32(0), shape) for shape in
              ((steps, batch, 4 * hidden), (hidden, 4 * hidden), (4 * hidden,), (steps, batch, hidden))]
    with fl.count_launches() as launches, pytest.raises(ValueError) as refused:
        v3.LightBarrierPlan(hidden, batch, 4, 128, 32, 2).launch(*shaped)
    assert "40000 x 64 x 2048" in str(refused.value) and "2^32" in str(refused.value)
    assert not dict(launches)


# --- the counters --------------------------------------------------------------------------------

def test_launches_on_one_stream_share_its_counter_and_another_stream_gets_its_own():
    counters = barrier.Counters()
    stream = cuda.stream()
    assert counters.for_launch(0) is counters.for_launch(None)
    assert counters.for_launch(stream) is counters.for_launch(stream)
    assert counters.for_launch(stream) is not counters.for_launch(0)
    assert counters.for_launch(cuda.stream()) is not counters.for_launch(stream)  # a new stream object, a new counter


def test_a_launch_that_is_not_cooperative_is_refused_by_name():
    class Compiled:
        cooperative = False

    with pytest.raises(barrier.NotCooperativeError, match="would not be launched cooperatively"):
        barrier.require_cooperative(Compiled(), "persistent_light_barrier")


# --- on the fake GPU -----------------------------------------------------------------------------

FAKE_GPU_SCRIPT = textwrap.dedent("""
    import dataclasses, json
    import fastlstm_lib as fl
    import numpy as np
    from numba import cuda
    import fakegpu
    from numba.cuda.cudadrv.driver import binding, driver
    from fastlstm_lib.runtime.graphs import _capture_stream
    from fastlstm_lib.kernels.persistent import barrier, v3_light_barrier as v3

    state = fakegpu.state()
    out = {}
    hidden, batch, steps = 37, 5, 4
    p = v3.plan(hidden, batch)
    arrays = [cuda.device_array(s, np.float32) for s in ((steps, batch, 4 * hidden), (hidden, 4 * hidden), (4 * hidden,))]
    hs = cuda.device_array((steps, batch, hidden), np.float32)

    ordinary = p.launch(*arrays, hs)
    out["ordinary"] = [dict(call.details) for call in state.launches()][-1]

    before = len(state.launches())
    try:
        dataclasses.replace(p, start_sync=False).launch(*arrays, hs)
        out["refused"] = None
    except barrier.NotCooperativeError as error:
        out["refused"] = str(error)
    out["launched_after_refusal"] = len(state.launches()) - before

    def capture(stream):
        mark = len(state.calls)
        driver.cuStreamBeginCapture(stream.handle, binding.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_GLOBAL)
        try:
            counter = p.launch(*arrays, hs, stream=stream)
        finally:
            graph = driver.cuStreamEndCapture(stream.handle)
        allocated = [call.api for call in state.calls[mark:] if call.api == "alloc"]
        return driver.cuGraphInstantiate(graph, 0), counter, allocated

    streams = [_capture_stream(), _capture_stream()]
    graphs = [capture(stream) for stream in streams]
    again = capture(streams[0])  # the same stream captured again: another graph, another counter
    mark = len(state.calls)
    for (graph, _, _), stream in zip(graphs, streams):
        driver.cuGraphLaunch(graph, stream.handle)
    replays = [dict(call.details) for call in state.calls[mark:]]
    pointer = lambda counter: int(counter.device_ctypes_pointer.value)
    out["counters"] = [pointer(c) for c in (ordinary, graphs[0][1], graphs[1][1], again[1])]
    out["stream_counters"] = [pointer(barrier.COUNTERS.for_launch(s)) for s in streams]
    out["allocated_in_capture"] = [g[2] for g in graphs] + [again[2]]
    out["replays"] = [(r["kernel"], r["cooperative"], r["api"]) for r in replays if "kernel" in r]
    out["graph_launch_streams"] = len({call.details["stream"] for call in state.calls[mark:] if call.api == "graph_launch"})

    barrier.COUNTERS._spare.clear()
    try:
        capture(_capture_stream())
        out["empty_reserve"] = None
    except RuntimeError as error:
        out["empty_reserve"] = str(error)
    print(json.dumps(out))
""")


@pytest.fixture(scope="module")
def on_the_fake_h100():
    import fakegpu

    done = subprocess.run([sys.executable, "-c", FAKE_GPU_SCRIPT], capture_output=True, text=True, timeout=900,
                          env=fakegpu.child_environment("H100"), cwd=ROOT)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@needs_fake_gpu
@pytest.mark.tools
def test_the_fake_gpu_launches_it_cooperatively_and_refuses_a_kernel_that_is_not(on_the_fake_h100):
    found = on_the_fake_h100
    assert found["ordinary"]["kernel"] == "persistent_light_barrier" and found["ordinary"]["cooperative"] is True
    assert "would not be launched cooperatively" in found["refused"] and "nothing was launched" in found["refused"]
    assert found["launched_after_refusal"] == 0


@needs_fake_gpu
@pytest.mark.tools
def test_captured_graphs_replayed_on_two_streams_use_two_counters(on_the_fake_h100):
    """Two streams' captures of the same plan's launch: each its own counter (neither the default
    stream's nor either stream's own), none allocated during a capture; both graphs launched at once
    on two streams, each running its cooperative kernel. A second capture on a stream: a third counter."""
    found = on_the_fake_h100
    ordinary, first, second, again = found["counters"]
    assert len({ordinary, first, second, again}) == 4
    assert not {first, second, again} & set(found["stream_counters"])
    assert found["allocated_in_capture"] == [[], [], []]
    assert found["replays"] == [["persistent_light_barrier", True, "cuGraphLaunch"]] * 2
    assert found["graph_launch_streams"] == 2
    assert "reserve" in found["empty_reserve"]


# --- what the compiler made of it (the compile matrix's table and a fresh sm_90 build) ------------

#: Version 3's rows beside version 2's: the same loop and staging, registers within the cap, no spills.
SAME_AS_VERSION_2 = ("loop_instructions", "loop_ffma", "loop_shared_loads", "loop_integer", "staged_loads",
                     "staging_instructions_per_float", "int64_multiplies_divides")


#: At batch 64 (two chunks, double-buffered) the main loop also stages: the same FFMAs and shared loads.
SAME_MULTIPLICATION = ("loop_ffma", "loop_shared_loads", "staged_loads", "int64_multiplies_divides")


@needs_compile_matrix
@pytest.mark.tools
def test_its_rows_keep_version_2s_loop_and_staging():
    """At batch 4 (one chunk: version 2's loop and staging) and 64 (their main loop is the dot
    product) on every disassembled architecture. At batch 64 the loop also stages 2 of the next
    chunk's 128-bit pieces (2 global loads): at most 2.5 instructions more per float it stages, in
    the loop and in staging_instructions_per_float (version 2's: 1.75-2.0; the copy interleaved with
    the dot product counted without its FFMAs and shared loads). Registers within the cap, no spills.
    (load_use_distance is not compared: the barrier's poll, a strong load compared at once, is now a
    global load of the step loop, where version 2's was an atomic.)"""
    import compile_matrix as cm

    table = {(row["kernel"], row["arch"]): row for row in cm.committed_rows()}
    for arch in ("sm_75", "sm_80", "sm_89", "sm_90"):
        for batch in (4, 64):
            new, old = table[(f"persistent_light_barrier_b{batch}", arch)], table[(f"persistent_registers_b{batch}", arch)]
            same = SAME_AS_VERSION_2 if batch == 4 else SAME_MULTIPLICATION
            assert {c: new[c] for c in same} == {c: old[c] for c in same}, (new, old)
            if batch == 64:
                assert new["loop_global_loads"] == 2, new
                assert new["loop_instructions"] - old["loop_instructions"] <= 2.5 * 4 * 2, (new, old)
                assert new["staging_instructions_per_float"] <= old["staging_instructions_per_float"] + 2.5, (new, old)
            limit = old["registers"] if batch == 4 else v3.MAX_REGISTERS
            assert new["registers"] <= min(limit, v3.MAX_REGISTERS), (new, old)
            assert (new["spill_stores"], new["spill_loads"], new["stack_frame"], new["loop_local"]) == (0, 0, 0, 0), new


def _loops(code):
    """Each backward branch's loop body, as a list of opcodes."""
    return [[i.opcode for i in code if branch.target <= i.address <= branch.address]
            for branch in code if branch.target is not None and branch.target <= branch.address]


@needs_compile_matrix
@pytest.mark.tools
def test_the_barrier_is_a_release_and_an_acquire_poll_on_sm_90(tmp_path):
    """Version 2's barrier: two MEMBAR.SC.GPU and atomics, one polling. Version 3's: one release
    (MEMBAR.ALL.GPU, then REDG: an add with no return), and a poll loop of a strong load (LDG.E.STRONG.GPU,
    its L1 invalidated after it), no atomic, no fence: re-read at every trip, not hoisted."""
    import compile_matrix as cm
    from compile_matrix.sass import disassembly, parse_nvdisasm

    names = ["persistent_registers_b4", "persistent_light_barrier_b4"]
    cm.build_arch((9, 0), tmp_path, names)
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    code = {name: parse_nvdisasm(disassembly(tmp_path / f"{name}.cubin", (9, 0)), manifest[name]["entry"]) for name in names}
    old, new = ([i.opcode for i in code[name]] for name in names)
    assert sum(op.startswith("MEMBAR.SC") for op in old) == 2 and sum(op.startswith("ATOMG") for op in old) == 3
    assert not [op for op in new if op.startswith(("MEMBAR.SC", "ATOM"))], new
    assert new.count("REDG.E.ADD.STRONG.GPU") == 1 and new.count("MEMBAR.ALL.GPU") == 1
    poll = min((body for body in _loops(code[names[1]]) if "LDG.E.STRONG.GPU" in body), key=len)  # the innermost
    assert len(poll) <= 6 and not [op for op in poll if op.startswith(("ATOM", "RED", "MEMBAR"))], poll
