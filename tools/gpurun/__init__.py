"""The first GPU run: one staged command that fits a borrowed GPU's minutes and loses nothing.

``bash tools/gpu_run.sh OUT_DIR [BUDGET_S]`` on the GPU machine: ``prepare.py`` (standard library
only) fills in from ``.gpu-bundle/`` what the machine lacks, then ``python3 -m gpurun`` runs the
stages of ``stages.py`` in one process (each kernel compiles once) within the budget
(``runner.py``), a fresh one after a stage hung or crashed (``supervisor.py``), and the wrapper
packs ``OUT_DIR`` into one archive beside ``summary.txt``.
``bundle.py`` builds the bundle here (``bash tools/gpu_bundle.sh``). With ``FASTLSTM_FAKE_GPU=H100``
the same command rehearses every stage on this machine on the fake GPU (``tests/fakegpu``, which
``gpu_env.sh`` then puts on PYTHONPATH; nothing is computed on a GPU, and the files say so);
``tests/test_gpu_run.py`` runs that rehearsal at small sizes in ``make test-tools``.
"""
