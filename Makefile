# kora: the two commands a new user needs.
#   make demo   set up, build, and run kora on the built-in example models
#   make test   set up, build, and run the whole test suite
BUILD ?= build
JOBS ?= $(shell nproc)

.PHONY: demo test test-sanitize build setup clean format zoo test-zoo bench fuzz

setup:
	@bash scripts/setup.sh

build: setup
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DKORA_TESTS=ON >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

demo: build
	@bash scripts/demo.sh $(BUILD)

test: build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS)
	@$(MAKE) --no-print-directory test-sanitize

# The readers, the importer, the runtime and the hostile-input tests again, in a build
# instrumented with AddressSanitizer and UBSan (-DKORA_SANITIZE=ON, -O1, in build-asan/;
# about 7 minutes the first time on 2 cores, incremental after): any report fails them.
SANITIZE_BUILD ?= build-asan
SANITIZE_TESTS = BadInputTest.*:ConstantFoldTest.*:ControlFlowTest.*:*ShapeTest.*:ImportTest.*:$\
  HostileArtifact.*:PrimJson.*:Session.*:Compare.*:NpyReader.*:NpyTest.*:TensorTest.*:$\
  FuzzReplay.*:Artifact.*:MemoryPlan.*:ProfileDbTest.*:CudaJob.*:$\
  MeasureOnDemand.ThePlansCostsPriceOtherPlansAfterTheLoop
# A report exits 86 (AddressSanitizer) or 87 (UBSan), never the 1 of kora's own errors.
SANITIZE_ASAN = detect_leaks=1:exitcode=86
SANITIZE_UBSAN = print_stacktrace=1:exitcode=87
test-sanitize: setup
	@cmake -S . -B $(SANITIZE_BUILD) -DCMAKE_BUILD_TYPE=Release -DKORA_SANITIZE=ON -DKORA_CUDA=OFF \
	  -DKORA_PYTHON=OFF -DKORA_TESTS=ON >/dev/null
	@cmake --build $(SANITIZE_BUILD) -j $(JOBS) --target kora kora_tests
	@echo "kora test-sanitize: GoogleTest suites under AddressSanitizer and UBSan"
	@ASAN_OPTIONS=$(SANITIZE_ASAN) UBSAN_OPTIONS=$(SANITIZE_UBSAN) \
	  $(SANITIZE_BUILD)/tests/kora_tests --gtest_brief=1 --gtest_filter='$(SANITIZE_TESTS)'
	@echo "kora test-sanitize: hostile input through the instrumented kora program"
	@ASAN_OPTIONS=$(SANITIZE_ASAN) UBSAN_OPTIONS=$(SANITIZE_UBSAN) \
	  python3 tests/cli/test_hostile.py $(SANITIZE_BUILD)/kora

# The model zoo (models/export.py): real models with random weights, exported with
# the libraries in a virtual environment of their own. Not part of `make test`.
ZOO_VENV ?= .venv-zoo
ZOO_MODELS = resnet50 mobilenet_v2 vit_b_16 bert_base segformer_b0 efficientvit_b0 yolov8n candy \
             resnet18_int8 llama_tiny swinv2_tiny raft_small bilstm_text

$(ZOO_VENV)/.installed: models/requirements-zoo.txt
	@bash scripts/setup_zoo.sh $(ZOO_VENV)

# Exports the models not yet in models/zoo/ (delete a file to export it again).
zoo: $(ZOO_VENV)/.installed
	@missing="$(filter-out $(patsubst models/zoo/%.onnx,%,$(wildcard models/zoo/*.onnx)),$(ZOO_MODELS))"; \
	  if [ -n "$$missing" ]; then $(ZOO_VENV)/bin/python models/export.py models/zoo $$missing; fi
	@echo "kora zoo: $$(ls models/zoo/*.onnx | wc -l) models in models/zoo/"

test-zoo: build zoo
	@$(ZOO_VENV)/bin/python tests/zoo/test_zoo.py $(BUILD)/kora models/zoo

# kora against onnxruntime, TVM, PyTorch eager and torch.compile on the zoo
# (bench/peers.py): `make bench`, or `make bench BENCH_ARGS="--quick"` / "--models a,b".
# On a GPU: `make bench BENCH_TARGET=cuda` (bench/gpu_zoo.sh: kora's CUDA artifacts against
# PyTorch eager and torch.compile). Results in bench/results/; not part of `make test`.
BENCH_ARGS ?=
BENCH_TARGET ?= cpu
$(ZOO_VENV)/.bench-installed: $(ZOO_VENV)/.installed bench/requirements.txt
	@echo "kora bench: installing bench/requirements.txt into $(ZOO_VENV)"
	@$(ZOO_VENV)/bin/python -m pip install -q --disable-pip-version-check -r bench/requirements.txt
	@touch $@

bench: build zoo $(ZOO_VENV)/.bench-installed
ifeq ($(BENCH_TARGET),cuda)
	@PYTHON=$(ZOO_VENV)/bin/python bash bench/gpu_zoo.sh $(BUILD)/kora models/zoo $(BENCH_ARGS)
else
	@$(ZOO_VENV)/bin/python bench/peers.py $(BUILD)/kora models/zoo $(BENCH_ARGS)
endif

# libFuzzer (clang) on the ONNX importer, the .npy reader, the manifest reader, the CUDA
# job and results reader and the profile database (fuzz/targets.h), each for FUZZ_SECONDS
# from its seed corpus (fuzz/corpus/READER/), in a build of its own instrumented with
# AddressSanitizer and UBSan. A crasher is written to
# fuzz/crashers/READER/; committed there, tests/fuzz/replay_test.cc replays it in `make test`.
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 60
fuzz: setup
	@cmake -S . -B $(FUZZ_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang \
	  -DCMAKE_CXX_COMPILER=clang++ -DKORA_FUZZ=ON -DKORA_CUDA=OFF >/dev/null
	@cmake --build $(FUZZ_BUILD) -j $(JOBS) --target fuzz_onnx_import fuzz_npy fuzz_manifest \
	  fuzz_cuda_job fuzz_profile_db
	@for r in onnx_import npy manifest cuda_job profile_db; do \
	  mkdir -p fuzz/crashers/$$r $(FUZZ_BUILD)/corpus/$$r; \
	  echo "kora fuzz: $$r for $(FUZZ_SECONDS) s"; \
	  $(FUZZ_BUILD)/fuzz_$$r $(FUZZ_BUILD)/corpus/$$r fuzz/corpus/$$r -max_total_time=$(FUZZ_SECONDS) \
	    -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix=fuzz/crashers/$$r/ \
	    || exit 1; \
	done

format:
	@clang-format -i $$(git ls-files '*.h' '*.cc')

clean:
	rm -rf $(BUILD)
