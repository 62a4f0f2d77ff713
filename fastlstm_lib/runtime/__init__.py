"""Where the LSTM runs: a GPU through Numba's CUDA driver, or Numba's CUDA simulator (``simulator``
decides at import, ``device`` describes it), and the Numba, Keras, CUDA Graph and NVTX glue around
it; each module says its job. These modules import no other part of the library; this file imports
nothing, so that ``simulator`` can be imported before numba is.
"""
