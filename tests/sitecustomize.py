"""Switches the fake GPU (``fakegpu``, beside this file) on in every Python started with tests/ on
PYTHONPATH and ``FASTLSTM_FAKE_GPU`` set: test processes, nbval's notebook kernels, the GPU run's
rehearsal, the doctor's CUDA probe. Python imports ``sitecustomize`` at startup from the path.

The fake driver must be loaded after ``fastlstm_lib`` starts (``fakegpu`` reads the package's GPU
table) and before ``fastlstm_lib.runtime.simulator`` probes for a driver, so this only installs an
import hook that activates it when that module is first imported. The package itself never
imports from ``tests/``.
"""

import os
import sys

if os.environ.get("FASTLSTM_FAKE_GPU", "").strip():
    class _ActivateFakeGPU:
        """A meta-path finder that finds nothing: it activates the fake GPU, once, at the probe's import."""

        @classmethod
        def find_spec(cls, name, path=None, target=None):
            if name == "fastlstm_lib.runtime.simulator":
                sys.meta_path.remove(cls)
                import fakegpu

                fakegpu.activate_from_environment()
            return None

    sys.meta_path.insert(0, _ActivateFakeGPU)
    if sys.argv[0].endswith("cuda_probe.py"):  # the doctor's CUDA probe imports no fastlstm_lib: load the fake now
        import fastlstm_lib  # noqa: F401
