# The two set-up commands of the README.
.PHONY: demo test bench fuzz sanitize docs

demo:
	scripts/setup.sh
	.venv/bin/python examples/demo.py

# TensorFlow's tests run in a process of their own: TensorFlow's bundled LLVM and Mesa's (under
# lavapipe, the Vulkan device of the other tests) crash each other in one process.
test:
	scripts/setup.sh test
	cd tests && ../.venv/bin/python -m pytest -q -p no:cacheprovider --ignore=tensorflow
	cd tests && ../.venv/bin/python -m pytest -q -p no:cacheprovider tensorflow

bench:
	scripts/setup.sh bench
	for b in benchmarks/bench_*.py; do .venv/bin/python $$b || exit 1; done

# Coverage-guided fuzzing of every loader of untrusted bytes (fuzz/): FUZZ_SECONDS each.
FUZZ_SECONDS ?= 300
fuzz:
	scripts/setup.sh fuzz
	FUZZ_SECONDS=$(FUZZ_SECONDS) fuzz/run_all.sh

# The test suite under AddressSanitizer and UndefinedBehaviorSanitizer (README: Developers).
sanitize:
	scripts/setup.sh test
	scripts/sanitize.sh

# The documentation site (mkdocs.yml, docs/) built into site/ from the installed package's docstrings:
# run from docs/ so that `python -m` puts no source-tree mnnpy (which lacks the compiled core) first.
docs:
	scripts/setup.sh docs
	cd docs && ../.venv/bin/python -m mkdocs build --strict -f ../mkdocs.yml
