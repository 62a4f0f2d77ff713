"""Where the LSTM runs: a GPU through Numba's CUDA driver, or Numba's CUDA simulator.

``simulator`` decides which at import (before numba is imported) and says so once (how long a
simulated step may take is the steps' ``simulator_budget``); ``device`` describes the device;
``numba_compat`` and ``numba_settings`` smooth over Numba versions and warnings; ``graphs``
captures a pass as a CUDA Graph; ``target`` is the GPU a pass is laid out for (this device, or
a dry run's named chip); ``nvtx`` names ranges for Nsight Systems; ``keras_backend``
loads Keras on the backend and with the float settings the comparisons need. These modules
import no other part of the library; this file imports nothing, so that ``simulator`` can be
imported before numba is.
"""
