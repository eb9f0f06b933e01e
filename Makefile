# Two commands for a fresh machine:
#   make demo   install, then rank three embedders on the bundled sample (offline)
#   make test   install with test extras, then run the test suite
.PHONY: demo test bench
demo:
	scripts/setup.sh models
	.venv/bin/embedselect demo

test:
	scripts/setup.sh dev
	.venv/bin/python -m pytest -q

bench:
	scripts/setup.sh dev,bench
	.venv/bin/python benchmarks/run_all.py
