"""``fl.profile``: one forward pass of a ladder step, recorded launch by launch, nothing executed
(``dryrun.py``), each launch with its FLOPs and traffic (``formulas.py``) and dependencies
(``graph.py``). ``bytes_*`` count every load and store issued; ``footprint_*`` distinct bytes;
``footprint_in`` the distinct bytes read before written.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import inspect
from collections import Counter

import numpy as np
from numba import cuda

from ...runtime.device import DEVICE
from ...checks import check_str
from ...config import LSTMConfig
from ...gpus import chip as chip_limits, find_gpu
from ..kept import kept
from ...kernels.versions import family_of
from ...kernels.views import distinct_bytes
from ...params import LayerParams
from ...steps import LSTMStep, get as get_step, names as ladder_names
from .dryrun import default_stream_kind, dry_run
from .formulas import array_count, byte_counts, kernel_description, traffic
from .graph import dependencies, longest_path



@dataclasses.dataclass(frozen=True)
class Launch:
    """One recorded launch: what it runs, where, what it computes and moves, what it waits for."""

    index: int
    kernel: str
    grid: tuple
    block: tuple
    stream: int
    shared_bytes: int
    flop: int
    bytes_read: int
    bytes_written: int
    footprint_read: int
    footprint_written: int
    footprint: int
    footprint_in: int
    array_args: int  # array arguments: what a launch from Python pays for, one by one
    loads: dict  # element loads per argument name
    stores: dict
    deps: dict  # {earlier launch index: "stream" | "event" | "default-stream"}
    transpose_b: bool = False  # a GEMM that reads B with the 'T' flag (its kernel's compile-time layout)
    #: (view number, bytes) of each view it reads before writing (its inputs) and of each it writes,
    #: views numbered in the pass in order of first appearance (the same view, the same number): what
    #: the timeline model's L2 reuse follows (``timeline/reuse.py``)
    input_views: tuple = ()
    output_views: tuple = ()


@dataclasses.dataclass(frozen=True)
class Profile:
    """A recorded forward pass (``fl.profile``). ``to_dict()`` gives it as JSON-able data."""

    step: str
    config: dict
    options: dict
    chip: str  # whose launch geometry was recorded: a GPU's name, or "simulator"
    default_stream: str  # "legacy" or "per-thread"
    streams: int
    launches: tuple
    stream_ops: tuple  # ({"op": "record" | "wait", "event", "stream", "after": launches issued before}, ...)
    setup_launches: int = 0

    @property
    def totals(self) -> dict:
        return {
            "launches": len(self.launches),
            "flop": sum(launch.flop for launch in self.launches),
            "gemm_flop": sum(launch.flop for launch in self.launches if family_of(launch.kernel) == "gemm"),
            "bytes_read": sum(launch.bytes_read for launch in self.launches),
            "bytes_written": sum(launch.bytes_written for launch in self.launches),
            "footprint": sum(launch.footprint for launch in self.launches),
            "streams": self.streams,
            "events": len({op["event"] for op in self.stream_ops}),
        }

    def kernels(self) -> dict:
        """Launches per kernel name (what ``fl.count_launches`` counts)."""
        return dict(Counter(launch.kernel for launch in self.launches))

    @property
    def persistent(self) -> bool:
        """Whether it launches a kernel of the persistent family (its spec's): then its grid was
        planned for one chip (``chip``), and needs a GPU with a grid barrier."""
        return any(family_of(launch.kernel) == "persistent" for launch in self.launches)

    def critical_path(self) -> dict:
        """The longest chain of dependent launches, by count."""
        _, path = longest_path([launch.deps for launch in self.launches])
        on_path = [self.launches[i] for i in path]
        return {
            "launches": len(path),
            "flop": sum(launch.flop for launch in on_path),
            "indices": path,
        }

    def to_dict(self) -> dict:
        return {"step": self.step, "config": self.config, "options": self.options, "chip": self.chip,
                "default_stream": self.default_stream, "totals": self.totals, "kernels": self.kernels(),
                "critical_path": self.critical_path(), "setup_launches": self.setup_launches,
                "launches": [dict(dataclasses.asdict(launch), deps=sorted(map(list, launch.deps.items())))
                             for launch in self.launches], "stream_ops": list(self.stream_ops)}


def ladder_step(step) -> LSTMStep:
    """A ladder step by name or object; Keras' LSTM (cuDNN's own kernels) can't be recorded."""
    if not isinstance(step, (str, LSTMStep)):
        raise TypeError(f"step must be a ladder step's name ({', '.join(ladder_names())}) or its step object, "
                        f"got {type(step).__name__} {step!r}")
    given = step
    step = get_step(step) if isinstance(step, str) else step
    if not isinstance(step, LSTMStep) or step.name not in ladder_names():
        raise ValueError(f"step must be one of the ladder's steps ({', '.join(ladder_names())}): only they can be "
                         f"recorded, got {given!r}")
    return step


def zero_params(cfg: LSTMConfig) -> list[LayerParams]:
    """Weights of the right shapes whose values nobody reads (np.zeros costs no memory until touched)."""
    four_h = 4 * cfg.hidden
    return [LayerParams(np.zeros((cfg.input_size if layer == 0 else cfg.hidden, four_h), np.float32),
                        np.zeros((cfg.hidden, four_h), np.float32), np.zeros(four_h, np.float32))
            for layer in range(cfg.layers)]


def profile(step, cfg: LSTMConfig | None = None, *, chip: str | None = None, **options) -> Profile:
    """Record one forward pass of ladder step ``step`` at ``cfg`` (default: the article's size)
    without executing a kernel. ``chip``: the launch geometry of a GPU of data/gpus.csv (default:
    this device's); ``options`` go to the step (``chunk=``). Recordings of a named step are cached
    per process and, with a ``chip``, on disk (``kept.py``); each call returns its own copy."""
    found = shared_profile(step, cfg, chip=chip, **options)
    return copy.deepcopy(found) if _cacheable(step, cfg, chip, options) else found


def shared_profile(step, cfg: LSTMConfig | None = None, *, chip: str | None = None, **options) -> Profile:
    """``profile``'s cached recording itself, not a copy, for read-only uses. Never modify it."""
    if chip is not None:
        check_str("chip", chip, example="H100")
    if _cacheable(step, cfg, chip, options):
        return _recorded(step, cfg, chip, tuple(sorted(options.items())))
    return _record(step, cfg, chip, options)


def _cacheable(step, cfg, chip, options: dict) -> bool:
    return (isinstance(step, str) and isinstance(cfg, (LSTMConfig, type(None))) and isinstance(chip, (str, type(None)))
            and all(isinstance(value, (int, str, type(None))) for value in options.values()))


@functools.lru_cache(maxsize=128)
def _recorded(step: str, cfg, chip, options: tuple) -> Profile:
    if chip is None:  # this device's geometry: not kept on disk
        return _record(step, cfg, chip, dict(options))
    key = ("profile", step, (LSTMConfig.article() if cfg is None else cfg).as_dict(), chip, options)
    return kept(key, lambda: _record(step, cfg, chip, dict(options)), Profile)


def _record(step, cfg, chip, options: dict) -> Profile:
    step = ladder_step(step)
    cfg = LSTMConfig.article() if cfg is None else cfg
    if not isinstance(cfg, LSTMConfig):
        raise TypeError(f"cfg must be an LSTMConfig or None (the article's size), got {type(cfg).__name__} {cfg!r}")
    limits = None if chip is None else chip_limits(chip)
    recording, setup_launches = record_pass(step, cfg, limits, options)
    kind = default_stream_kind()
    deps = dependencies(recording.ops, [call.stream for call in recording.launches], kind)
    numbering: dict = {}
    launches = tuple(_launch_record(i, call, deps[i], numbering) for i, call in enumerate(recording.launches))
    stream_ops, issued = [], 0
    for op in recording.ops:
        if op.kind == "launch":
            issued += 1
        else:
            stream_ops.append({"op": op.kind, "event": op.index, "stream": op.stream, "after": issued})
    return Profile(step=step.name, config=cfg.as_dict(), options=dict(options), chip=_chip_name(limits),
                   default_stream=kind, streams=recording.streams, launches=launches,
                   stream_ops=tuple(stream_ops), setup_launches=setup_launches)


def record_pass(step, cfg: LSTMConfig, limits=None, options: dict | None = None):
    """(the dry run's ``Recording`` of one pass of ``step`` at ``cfg``, the launches its ``setup``
    made): setup first on zero weights, left out, then one pass recorded with ``limits``' geometry
    (a ``gpus.Chip``; None: this device's)."""
    setup_options = dict(options or {})
    if limits is not None and "chip" in inspect.signature(step.setup).parameters:
        setup_options["chip"] = limits
    with dry_run(limits) as recording:
        try:
            state = step.setup(zero_params(cfg), cfg, **setup_options)
        except ValueError as error:
            if DEVICE.small and limits is None and "does not fit" in str(error):
                raise type(error)(f"{error} On the simulator, name the GPU to plan for: "
                                  f"fl.profile({step.name!r}, cfg, chip='H100').") from error
            raise
        setup_launches = len(recording.launches)
        recording.launches.clear()
        recording.ops.clear()
        x = cuda.device_array((cfg.seq_len, cfg.batch, cfg.input_size), dtype=np.float32)
        out = cuda.device_array((cfg.seq_len, cfg.batch, cfg.hidden), dtype=np.float32)
        step.run(state, x, out)
    return recording, setup_launches


def _chip_name(limits) -> str:
    """The chip a profile's geometry is for, named as data/gpus.csv names it when it can be."""
    if limits is not None:
        return limits.name
    if DEVICE.small:
        return "simulator"
    device_name = chip_limits().name
    row = find_gpu(device_name)
    return row["name"] if row else device_name


def _launch_record(index: int, call, deps: dict, numbering: dict | None = None) -> Launch:
    t, named = traffic(call.kernel, call.grid, call.block, call.args)
    return Launch(
        index=index, kernel=kernel_description(call.kernel)[0], grid=call.grid, block=call.block, stream=call.stream,
        shared_bytes=call.shared_bytes, flop=t.flop,
        bytes_read=byte_counts(t.loads, named), bytes_written=byte_counts(t.stores, named),
        footprint_read=distinct_bytes(t.reads), footprint_written=distinct_bytes(t.writes),
        footprint=distinct_bytes(t.reads + t.writes), footprint_in=distinct_bytes(t.inputs),
        array_args=array_count(call.args), loads=dict(t.loads), stores=dict(t.stores), deps=dict(deps),
        transpose_b=bool(kernel_description(call.kernel)[2].get("transpose_b", False)),
        input_views=_numbered(t.inputs, numbering), output_views=_numbered(t.writes, numbering),
    )


def _numbered(views, numbering: dict | None) -> tuple:
    """(number, bytes) of each distinct view: its number in ``numbering`` (where and how it lies in
    memory -> order of first appearance), added there if new."""
    numbering = {} if numbering is None else numbering
    return tuple(dict.fromkeys((numbering.setdefault(v, len(numbering)), v.nbytes) for v in views if v.elements))
