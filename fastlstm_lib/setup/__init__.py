"""Setting the course up: ``requirements`` (what must be installed, checked before NumPy or Numba
are imported), ``doctor`` (``python -m fastlstm_lib doctor``: will the course run here?) and
``colab`` (the set-up cell of a Colab tab). Nothing here imports NumPy or Numba at import time.
"""
