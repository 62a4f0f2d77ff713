"""The cuDNN 5 ladder (notebooks 03-08): every step right at odd sizes, and the launch counts
each optimization promises."""

import numpy as np
import pytest

import fastlstm_lib as fl
from conftest import MINI, ODD, problem

#: The cuDNN 5 steps, in the article's order (data/article_cudnn5.csv): the ladder starts with them.
LADDER = [row["step"] for row in fl.article_numbers()]

#: Three layers, so that the wavefront has a middle layer that both waits and is waited for; five
#: steps, so that chunks of 2 leave a partial one. No size is a multiple of any tile.
ODD3 = fl.LSTMConfig(batch=3, seq_len=5, input_size=5, hidden=7, layers=3)


#: A second odd size beside conftest's ODD, which every ladder notebook's check already runs
#: (lesson.ODD, compared by nbval): the ladder is held to both.
ODD_SMALL = fl.LSTMConfig(batch=3, seq_len=3, input_size=5, hidden=7, layers=2)


@pytest.fixture(scope="module")
def small_problem():
    x, params = problem(ODD_SMALL, seed=1)
    return x, params, fl.reference_forward(x, params)


@pytest.fixture(scope="module")
def ladder_outputs(small_problem):
    x, params, _ = small_problem
    return {name: fl.steps.get(name).forward(x, params) for name in LADDER}


@pytest.fixture(scope="module")
def keras_output(small_problem, keras_available):
    x, params, _ = small_problem
    return fl.keras_forward(x, params).astype(np.float64)


def test_ladder_order():
    assert fl.steps.names()[: len(LADDER)] == LADDER


@pytest.mark.parametrize("name", LADDER)
def test_step_equals_reference(name, small_problem, ladder_outputs):
    _, _, ref = small_problem
    y = ladder_outputs[name]
    assert y.dtype == np.float32 and y.shape == ref.shape
    assert fl.relative_error(y, ref) <= 1e-5


@pytest.mark.parametrize("name", LADDER)
def test_step_equals_keras(name, ladder_outputs, keras_output):
    assert fl.relative_error(ladder_outputs[name], keras_output) <= 1e-5


@pytest.mark.parametrize("name, options", [
    ("combined_inputs", {"chunk": 2}),
    ("wavefront", {}),
    ("wavefront", {"chunk": 2}),
    ("wavefront", {"chunk": 5}),
])
def test_multi_layer_chunked_steps(name, options):
    x, params = problem(ODD3, seed=3)
    y = fl.steps.get(name).forward(x, params, **options)
    assert fl.relative_error(y, fl.reference_forward(x, params)) <= 1e-5


def launches_per_forward(name, cfg, **options):
    x, params = problem(cfg)
    with fl.count_launches() as launches:
        fl.steps.get(name).forward(x, params, **options)
    return sum(launches.values())


@pytest.mark.parametrize("name, per_layer_step, per_layer", [
    ("baseline", 25, 1),  # 8 GEMMs + 17 point-wise; one fill of c per layer
    ("combined_gemms", 19, 1),  # 2 GEMMs + 17
    ("streams", 19, 1),  # the same launches, on two streams
    ("fused_pointwise", 3, 1),  # 2 GEMMs + 1 cell kernel
    ("pretransposed", 3, 1),
    ("combined_inputs", 2, 3),  # 1 recurrent GEMM + 1 cell kernel; 1 input GEMM per 2 steps (3 steps: 2) and a fill
])
def test_launch_counts(name, per_layer_step, per_layer):
    cfg = fl.LSTMConfig(batch=1, seq_len=3, input_size=3, hidden=5, layers=2)
    assert launches_per_forward(name, cfg) == cfg.layers * (cfg.seq_len * per_layer_step + per_layer)


def test_combined_inputs_runs_the_articles_chunk_by_default():
    """The article's program (LSTM.cu) combines RECUR_BATCH_SIZE = 2 steps per input GEMM: the
    step's default; a chunk of the whole sequence (or more) is one input GEMM per layer."""
    from fastlstm_lib.steps.step07_combined_inputs import ARTICLE_CHUNK

    cfg = fl.LSTMConfig(batch=1, seq_len=5, input_size=3, hidden=5, layers=2)
    assert ARTICLE_CHUNK == 2
    assert launches_per_forward("combined_inputs", cfg) == launches_per_forward("combined_inputs", cfg, chunk=2)
    assert launches_per_forward("combined_inputs", cfg) == cfg.layers * (cfg.seq_len * 2 + 3 + 1)  # chunks of 2, 2, 1
    assert launches_per_forward("combined_inputs", cfg, chunk=5) == cfg.layers * (cfg.seq_len * 2 + 1 + 1)
    assert launches_per_forward("combined_inputs", cfg, chunk=9) == cfg.layers * (cfg.seq_len * 2 + 1 + 1)


def test_wavefront_launches_one_input_gemm_per_chunk():
    cfg = fl.LSTMConfig(batch=1, seq_len=4, input_size=3, hidden=5, layers=2)
    # layer 0: 1 input GEMM; layer 1: 2 chunks -> 2; per layer-step 2; a fill per layer.
    assert launches_per_forward("wavefront", cfg, chunk=2) == 1 + 2 + 2 * 4 * 2 + 2


@pytest.mark.parametrize("name", ["streams", "combined_inputs", "wavefront"])
def test_multi_stream_steps_survive_back_to_back_runs(name):
    result = fl.bench(name, MINI, warmup=2, repeats=2)
    assert result["relative_error"]["after"] <= 1e-5


@pytest.mark.parametrize("chunk", [0, -1, 1.5, True, "5"])
def test_chunk_must_be_a_positive_int(chunk):
    x, params = problem(MINI)
    with pytest.raises(ValueError, match="chunk must be a positive int"):
        fl.steps.get("wavefront").forward(x, params, chunk=chunk)


@pytest.mark.parametrize("name", ["baseline", "fused_pointwise"])
def test_steps_without_options_reject_them(name):
    x, params = problem(MINI)
    with pytest.raises(TypeError, match="takes no options"):
        fl.steps.get(name).forward(x, params, chunk=2)


@pytest.mark.parametrize("name, method", [
    ("combined_gemms", "def gate_products"),
    ("streams", "def run_layer"),
    ("fused_pointwise", "def cell_update"),
    ("pretransposed", "def upload_weights"),
    ("combined_inputs", "def run_layer"),
    ("wavefront", "def run_chunk"),
])
def test_changes_show_what_each_step_overrides(name, method):
    assert method in fl.steps.changes(name)
    assert fl.steps.previous(name).name == LADDER[LADDER.index(name) - 1]
