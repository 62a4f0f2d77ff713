"""fl.profile: a dry run records exactly the launches a real run makes, on the same streams, with
FLOP and byte formulas that equal what the kernels really touch (counted element by element on
the simulator), and the dependencies that streams and events impose."""

import json

import numpy as np
import pytest
from numba import cuda

import fastlstm_lib as fl
from fastlstm_lib.kernels import gemm as gemm_module, persistent, pointwise as pw
from fastlstm_lib.kernels.pointwise.base import CELL_FLOP
from fastlstm_lib.course.profile.dryrun import dry_run
from fastlstm_lib.course.profile.graph import dependencies
from conftest import problem

#: Odd sizes: no multiple of the simulator's tiles (8 x 8 x 4) or of a warp.
SMALL = fl.LSTMConfig(batch=3, seq_len=2, input_size=5, hidden=7, layers=2)
#: Three layers and four steps: the wavefront's middle layer both waits and is waited for, in several chunks.
SMALL3 = fl.LSTMConfig(batch=3, seq_len=4, input_size=5, hidden=7, layers=3)
CASES = [(name, SMALL, {}) for name in fl.steps.names()] + [
    ("combined_inputs", SMALL3, {"chunk": 2}),
    ("wavefront", SMALL3, {}),
    ("wavefront", SMALL3, {"chunk": 2}),
]
IDS = [f"{name}-{cfg.layers}layers-{options}" for name, cfg, options in CASES]
ARTICLE_LAUNCHES = {"baseline": 10004, "combined_gemms": 7604, "streams": 7604, "fused_pointwise": 1204,
                    "pretransposed": 1204, "combined_inputs": 4 * (200 + 50 + 1), "wavefront": 4 * 201 + 1 + 3 * 50, "persistent": 8}


@pytest.fixture(scope="module")
def real_runs():
    """Per case: what count_launches counted, and every launch measured element by element, in a
    real simulated forward pass; and the dry run's profile of the same pass."""
    from instrumented import instrumented

    if not fl.is_simulator():
        pytest.skip("instrumented arrays need the simulator")
    runs = {}
    for case_id, (name, cfg, options) in zip(IDS, CASES):
        x, params = problem(cfg, seed=2)
        with fl.count_launches() as counted, instrumented() as measured:
            y = fl.steps.get(name).forward(x, params, **options)
        assert fl.relative_error(y, fl.reference_forward(x, params)) <= 1e-5  # instrumenting changed nothing
        runs[case_id] = (counted, measured, fl.profile(name, cfg, **options))
    return runs


@pytest.mark.parametrize("case_id", IDS)
def test_profile_records_the_launches_a_real_run_makes(case_id, real_runs):
    counted, measured, profile = real_runs[case_id]
    assert profile.kernels() == dict(counted)
    assert profile.totals["launches"] == sum(counted.values()) == len(measured)
    assert [launch.kernel for launch in profile.launches] == [m.kernel for m in measured]
    assert [(launch.grid, launch.block) for launch in profile.launches] == [(m.grid, m.block) for m in measured]
    assert profile.setup_launches == 0


def first_seen_labels(streams):
    """Streams renamed by order of first use, so that two runs' numberings compare."""
    labels = {}
    return [labels.setdefault(stream, len(labels)) for stream in streams]


@pytest.mark.parametrize("case_id", IDS)
def test_profile_puts_each_launch_on_the_stream_a_real_run_uses(case_id, real_runs):
    _, measured, profile = real_runs[case_id]
    real = [0 if m.stream == 0 else id(m.stream) for m in measured]
    assert first_seen_labels([launch.stream for launch in profile.launches]) == first_seen_labels(real)


@pytest.mark.parametrize("case_id", IDS)
def test_formulas_equal_the_instrumented_counts(case_id, real_runs):
    _, measured, profile = real_runs[case_id]
    fields = ("loads", "stores", "footprint_read", "footprint_written", "footprint", "footprint_in")
    for launch, m in zip(profile.launches, measured):
        assert {f: getattr(launch, f) for f in fields} == {f: getattr(m, f) for f in fields}, (launch.index, launch.kernel)
        assert launch.bytes_read == 4 * sum(m.loads.values()) and launch.bytes_written == 4 * sum(m.stores.values())


# ---- the article's size: seconds, nothing executed ------------------------------------------------


@pytest.fixture(scope="module")
def article_profiles():
    with fl.count_launches() as launched:
        profiles = {name: fl.profile(name, chip="H100" if name == "persistent" else None) for name in fl.steps.names()}
    assert sum(launched.values()) == 0  # the dry run launched nothing
    return profiles


def test_article_size_launch_counts(article_profiles):
    assert {name: p.totals["launches"] for name, p in article_profiles.items()} == ARTICLE_LAUNCHES


def test_gemm_flops_are_the_articles(article_profiles):
    cfg = fl.LSTMConfig.article()
    for name, p in article_profiles.items():
        if name != "persistent":
            assert p.totals["gemm_flop"] == fl.flops(cfg), name
    # The persistent kernel does the recurrent products itself, and skips step 0's (h_{-1} = 0).
    per_layer_step = 8 * cfg.batch * cfg.hidden * cfg.hidden
    plan = persistent.plan(cfg.hidden, cfg.batch, chip="H100")
    shares = 4 * plan.splits if plan.splits > 1 else 0  # the leader sums each gate's split shares
    layers = article_profiles["persistent"].launches[1::2]
    assert [launch.kernel for launch in layers] == ["persistent_layer"] * cfg.layers
    dots = [launch.flop - cfg.seq_len * cfg.batch * cfg.hidden * (CELL_FLOP + shares) for launch in layers]
    assert dots == [per_layer_step * (cfg.seq_len - 1)] * cfg.layers
    assert article_profiles["persistent"].totals["gemm_flop"] + sum(dots) == fl.flops(cfg) - per_layer_step * cfg.layers


def test_critical_paths(article_profiles):
    baseline, streams, wavefront = (article_profiles[n] for n in ("baseline", "streams", "wavefront"))
    assert baseline.critical_path()["launches"] == 10004  # one stream: everything in a row
    assert streams.critical_path()["launches"] == 4 * (100 * 18 + 1)  # the input GEMMs run beside the chain
    chain = wavefront.critical_path()
    assert chain["launches"] < 2 * 100 * 4  # layers overlap: far fewer than every layer-step in a row


def test_to_dict_is_json(article_profiles):
    record = json.loads(json.dumps(article_profiles["wavefront"].to_dict()))
    assert record["totals"]["launches"] == len(record["launches"]) == ARTICLE_LAUNCHES["wavefront"]
    assert set(record["launches"][1]) >= {"kernel", "grid", "block", "stream", "flop", "bytes_read", "bytes_written",
                                          "footprint", "deps"}


# ---- dependencies ----------------------------------------------------------------------------------


def test_streams_input_gemms_wait_only_for_their_layer():
    p = fl.profile("streams", SMALL)
    side = {launch.stream for launch in p.launches if launch.kernel == "blocked_gemm"} - {p.launches[0].stream}
    assert len(side) == 1
    for launch in p.launches:
        if launch.stream in side:  # input GEMMs: after the previous one on their stream, or the layer's start
            assert set(launch.deps.values()) <= {"stream", "event"}
    first_add = next(launch for launch in p.launches if launch.kernel == "_add")
    assert any(kind == "event" and p.launches[j].stream in side for j, kind in first_add.deps.items())


def test_wavefront_upper_layer_waits_for_the_chunk_below():
    p = fl.profile("wavefront", SMALL3, chunk=2)
    lanes = sorted({launch.stream for launch in p.launches})
    upper_inputs = [launch for launch in p.launches if launch.stream == lanes[1] and launch.kernel == "blocked_gemm"
                    and any(kind == "event" for kind in launch.deps.values())]
    assert upper_inputs and all(p.launches[j].stream == lanes[0]
                                for launch in upper_inputs for j, kind in launch.deps.items() if kind == "event")


def test_legacy_default_stream_orders_everything():
    a = cuda.device_array((2, 3), dtype=np.float32)
    with dry_run() as recording:
        side = cuda.stream()
        pw.fill(a, 0.0, stream=side)
        pw.fill(a, 1.0)  # the legacy default stream waits for the blocking stream...
        pw.fill(a, 2.0, stream=side)  # ...and the blocking stream for it
    streams = [call.stream for call in recording.launches]
    assert dependencies(recording.ops, streams, "legacy") == [{}, {0: "default-stream"}, {1: "default-stream", 0: "stream"}]
    assert dependencies(recording.ops, streams, "per-thread") == [{}, {}, {0: "stream"}]


def test_waiting_for_an_event_never_recorded_waits_for_nothing():
    a = cuda.device_array((2, 3), dtype=np.float32)
    with dry_run() as recording:
        s1, s2, event = cuda.stream(), cuda.stream(), cuda.event()
        pw.fill(a, 0.0, stream=s1)
        event.wait(s2)
        pw.fill(a, 1.0, stream=s2)
        event.record(s1)
        event.wait(s2)
        pw.fill(a, 2.0, stream=s2)
    deps = dependencies(recording.ops, [call.stream for call in recording.launches])
    assert deps == [{}, {}, {1: "stream", 0: "event"}]


def test_chip_gives_a_gpus_geometry():
    p = fl.profile("fused_pointwise", chip="H100")
    recurrent = p.launches[2]  # fill, input GEMM (side stream), recurrent GEMM
    assert recurrent.kernel == "exact_gemm" and recurrent.block == (256, 1, 1)  # version 3: the tile divides the shape
    assert recurrent.grid == (2048 // 32, 64 // 32, 1)  # 32 x 32 patches: 64 x 64 ones would leave SMs idle
    assert fl.profile("fused_pointwise", chip="M40").launches[2].grid == (2048 // 64, 1, 1)  # 32 blocks fill 24 SMs
    assert p.launches[3].kernel == "_lstm_cell" and p.launches[3].block == (256, 1, 1)
    # The dry run patched nothing for good: this machine's choice is its own again.
    assert gemm_module.choose_blocking(64, 2048, 512) == (gemm_module.SIMULATOR_BLOCKING if fl.is_simulator()
                                                     else gemm_module.gpu_blocking(64, 2048, 512, fl.device_info()["multiprocessors"]))


def test_a_dry_run_sets_one_target_and_replaces_no_kernel_module_attribute():
    """The chip a dry run lays a pass out for is one value (``runtime.target``): inside it, the
    launchers read a GPU's geometry and compile nothing; no kernel module's names change."""
    from fastlstm_lib.gpus import chip
    from fastlstm_lib.kernels import geometry, reduce
    from fastlstm_lib.runtime.target import laid_out_for, target

    modules = [m for name, m in sorted(__import__("sys").modules.items()) if name.startswith("fastlstm_lib.kernels")]
    before = [dict(vars(m)) for m in modules]
    own = target()
    h100 = chip("H100")
    with dry_run(h100):
        assert target().sms == h100.sms and not target().compiles
        assert geometry.pointwise_threads() == geometry.GPU_POINTWISE_THREADS
        assert reduce.v1_column_sum.row_threads() == reduce.GPU_ROW_THREADS
    assert target() == own and [dict(vars(m)) for m in modules] == before
    with pytest.raises(ValueError, match="sms must be a positive int"):
        with laid_out_for(0):
            pass


@pytest.mark.parametrize("step, cfg, options, error", [
    ("keras_cudnn", None, {}, ValueError),
    ("baseline", "article", {}, TypeError),
    ("baseline", None, {"chip": "GTX 480"}, ValueError),
    ("baseline", None, {"chunk": 2}, TypeError),
])
def test_bad_input(step, cfg, options, error):
    with pytest.raises(error):
        fl.profile(step, cfg, **options)


def test_persistent_on_the_simulator_needs_a_chip():
    if not fl.is_simulator():
        pytest.skip("the single-block limit is the simulator's")
    with pytest.raises(ValueError, match="chip='H100'"):
        fl.profile("persistent")
    assert fl.profile("persistent", chip="H100").chip == "H100"
