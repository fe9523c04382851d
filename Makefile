# kora: the two commands a new user needs.
#   make demo   set up, build, and run kora on the built-in example models
#   make test   set up, build, and run the whole test suite
BUILD ?= build
JOBS ?= $(shell nproc)

.PHONY: demo test build setup clean format

setup:
	@bash scripts/setup.sh

build: setup
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DKORA_TESTS=ON >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

demo: build
	@bash scripts/demo.sh $(BUILD)

test: build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

format:
	@clang-format -i $$(git ls-files '*.h' '*.cc')

clean:
	rm -rf $(BUILD)
