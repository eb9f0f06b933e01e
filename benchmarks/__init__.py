"""embedselect's benchmarks (not part of the installed package).

- Speed and memory: ``bench_*.py``, ``gpu.py`` / ``gpu_scale.py`` (``gpu_session/`` carries them to a lent GPU
  machine); commands and current numbers in docs/benchmarks.md.
- The validity harness: ``validity_data.py`` (builds and reads the cached pools), ``sets/`` (the datasets, by name
  in ``sets/registry.py``), ``candidates.py`` (the pools' candidates; their passes in ``model_passes.py``,
  derivations in ``vectors.py``), ``bench_io.py`` (the cache and atomic writes),
  ``validity.py`` (model preparation and the first three-dataset check), ``validity_pools.py`` (signals and the
  ground truth per view; the named pools in ``named_pools.py``, the cached truth and signals in ``signal_cache.py``,
  the measures in ``scoring.py``), ``validity_default.py`` (leave-one-dataset-out choice of the defaults; the grid
  and the package's default as a setting in ``default_grid.py``, the views read from the caches in
  ``cached_views.py``, the choice (also the one of ``validity_pools.py``'s report) and its held-out
  reading in ``lodo.py``),
  ``seed_stability.py``, ``per_view.py``, ``truth_noise.py``, ``validity_retrieval.py`` (the retrieval views; their
  folders in ``retrieval_pools.py``, the search default's choice in ``retrieval_default.py``); method and current
  numbers in docs/validity.md.

Run each from the checkout's root as ``python -m benchmarks.NAME``. Tests: ``benchmarks/tests/`` (``make test``
runs them). Imports: embedselect and testkit, never tests/ or lab/ (``tests/test_layers.py``).
"""
