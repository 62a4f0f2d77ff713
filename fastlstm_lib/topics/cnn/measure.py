"""Measuring both layouts at the article's sizes, their files under data/results/, and the GPU command (``main``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ...checks import check_bool, check_choice, check_int, check_path, check_str, check_str_list
from ...runtime.keras_backend import backend_name, environment, set_tf32
from ...progress import progress_bar
from ...results import RESULTS, load_results, save_results
from .compare import compare_layouts, format_results, verdict
from .images import load_images
from .models import BUILDERS, FULL_SIZE, check_model_name
from .training import PRECISIONS, time_layouts

#: The command that measures the article's two models on a GPU (torch: a GPU machine may lack TensorFlow).
MEASURE_COMMAND = "KERAS_BACKEND=torch python -m fastlstm_lib.topics.cnn --out data/results/cnn-layouts-$(date +%Y%m%d).json"
RESULTS_PATTERN = "cnn-layouts-*.json"
MODELS = ("cnn10", "wide_resnet")
#: "full": the article's models (WRN-28-10 on 10,000 images per epoch, to keep it short); "tiny": a quick check.
SIZES = {
    "full": {"image_size": 32, "images": {"cnn10": 50_000, "wide_resnet": 10_000}, "test_images": 10_000, "batch": 128, "rounds": 5,
             "options": {model: dict(FULL_SIZE[model]) for model in MODELS}},
    "tiny": {"image_size": 8, "images": {"cnn10": 32, "wide_resnet": 32}, "test_images": 16, "batch": 16, "rounds": 1,
             "options": {"cnn10": {"width": 2}, "wide_resnet": {"depth": 10, "width_factor": 1}}},
}


def variant_plan(models=MODELS, precisions=PRECISIONS, xla=(False, True), *, backend: str | None = None):
    """([(model, precision, jit_compile), ...], [why a variant was left out, ...]): XLA is left
    out on a backend other than TensorFlow."""
    models = check_str_list("models", models, choices=BUILDERS)
    check_str_list("precisions", precisions, choices=PRECISIONS)
    if not isinstance(xla, (list, tuple)) or not xla:
        raise TypeError(f"xla must be a non-empty tuple of True/False (jit_compile off/on), got {type(xla).__name__} {xla!r}")
    xla = tuple(check_bool(f"xla[{i}]", jit) for i, jit in enumerate(xla))
    backend = backend_name() if backend is None else check_str("backend", backend, example="tensorflow")
    skipped = []
    if True in xla and backend != "tensorflow":
        xla = tuple(jit for jit in xla if not jit)
        skipped.append(f"XLA variants: jit_compile=True means XLA on the TensorFlow backend only (Keras runs on {backend})")
    plan = [(model, precision, jit) for model in models for precision in precisions for jit in xla]
    return plan, skipped


def run_plan(plan, data_for, *, options_for: dict, batch_size: int, rounds: int, env: dict | None = None,
             progress: bool = True) -> list[dict]:
    """``time_layouts`` (errors recorded) for every (model, precision, jit_compile) of ``plan``, on
    ``data_for[model]`` with ``options_for[model]``."""
    if not isinstance(plan, (list, tuple)) or not plan:
        raise TypeError(f"plan must be a non-empty list of (model, precision, jit_compile) from variant_plan, got {plan!r}")
    for name, table in (("data_for", data_for), ("options_for", options_for)):
        if not isinstance(table, dict):
            raise TypeError(f"{name} must be a dict {{model: ...}}, got {type(table).__name__}")
    for index, entry in enumerate(plan):
        if not isinstance(entry, (list, tuple)) or len(entry) != 3:
            raise TypeError(f"plan[{index}] must be a (model, precision, jit_compile) tuple, got {entry!r}")
        model, precision, jit = entry
        check_model_name(model)
        check_choice(f"plan[{index}] precision", precision, PRECISIONS)
        check_bool(f"plan[{index}] jit_compile", jit)
        for name, table in (("data_for", data_for), ("options_for", options_for)):
            if model not in table:
                raise ValueError(f"{name} has no entry for model {model!r} (plan[{index}])")
    batch_size, rounds = check_int("batch_size", batch_size), check_int("rounds", rounds)
    check_bool("progress", progress)
    if env is not None and not isinstance(env, dict):
        raise TypeError(f"env must be a dict from keras_backend.environment() or None, got {type(env).__name__}")
    env = env or environment()
    results = []
    for model, precision, jit in progress_bar(plan, "variants", "variant", enabled=progress):
        results += time_layouts(model, data_for[model], precision=precision, jit_compile=jit, batch_size=batch_size,
                                rounds=rounds, env=env, on_error="record", **options_for[model])
    return results


def _inside(path: Path, folder: Path) -> bool:
    return folder.resolve() in path.resolve().parents


def committed_layout_results(directory=RESULTS) -> list[dict]:
    """Every time_layouts result in ``directory``/cnn-layouts-*.json, each with the ``file`` it came from."""
    directory = check_path("directory", directory)
    if directory.exists() and not directory.is_dir():
        raise ValueError(f"directory must be a folder of {RESULTS_PATTERN} files, got the file {str(directory)!r}")
    return [dict(result, file=path.name) for path in sorted(directory.glob(RESULTS_PATTERN))
            for result in load_results(path) if result.get("kind") == "cnn-layouts"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m fastlstm_lib.topics.cnn", description=(
        "Time the article's two CNNs (the 10-layer CNN and WRN-28-10) in both layouts and write the results as JSON. "
        f"On a GPU: {MEASURE_COMMAND}"))
    parser.add_argument("--out", required=True, metavar="FILE", help="where to write the results (JSON)")
    parser.add_argument("--models", nargs="+", choices=MODELS, default=list(MODELS))
    parser.add_argument("--precisions", nargs="+", choices=PRECISIONS, default=list(PRECISIONS))
    parser.add_argument("--xla", nargs="+", choices=("off", "on"), default=["off", "on"],
                        help="jit_compile off and/or on (TensorFlow backend only)")
    parser.add_argument("--size", choices=tuple(SIZES), default="full",
                        help="full: the article's models, 32x32 images; tiny: a quick check that the command works")
    parser.add_argument("--tf32", choices=("default", "off"), default="default",
                        help="off: true float32 convolutions on Ampere and newer GPUs, like the article's Turing GPU")
    return parser


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    from .tf_settings import enable_memory_growth

    print(enable_memory_growth())  # first: before anything touches a GPU
    if args.tf32 == "off":
        set_tf32(False)
    env = environment()  # recorded in every result, TF32 setting included
    if _inside(Path(args.out), RESULTS) and not env["gpus"]:  # say it now, not after the measurement
        print(f"error: no GPU here ({env['device']}); data/results/ holds GPU measurements only", file=sys.stderr)
        return 2
    size = SIZES[args.size]
    plan, skipped = variant_plan(args.models, args.precisions, tuple(x == "on" for x in args.xla))
    for reason in skipped:
        print("left out:", reason)
    most = max(size["images"][model] for model in args.models)
    data = load_images(most, size["test_images"], image_size=size["image_size"])  # FASTLSTM_DOWNLOAD=1 downloads
    print(data.description)
    try:
        results = run_plan(plan, {model: data.head(size["images"][model]) for model in args.models},
                           options_for=size["options"], batch_size=size["batch"], rounds=size["rounds"], env=env)
        path = save_results(results, args.out)
    except (TypeError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(format_results(results))
    for row in compare_layouts(results):
        print(" -", verdict(row))
    print(f"wrote {path}")
    return 0
