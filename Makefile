# attnlab: `make results` runs the main job, `make test` the checks.
BUILD ?= build
JOBS ?= $(shell nproc)
SEED ?= 20250311
PACKAGES := cmake g++ make libeigen3-dev libspectra-dev libboost-math-dev doctest-dev libfmt-dev libcli11-dev libopenblas-dev python3 gnuplot-nox python3-numpy python3-scipy zlib1g-dev dataset-fashion-mnist \
  pybind11-dev python3-pybind11 python3-dev python3-pytest
# Only `make fuzz` needs these (libFuzzer ships in Debian's compiler-rt package).
FUZZ_PACKAGES := clang libclang-rt-14-dev
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 600
SANITIZE_BUILD ?= build-sanitize

.PHONY: all build python test results report quick bench deps check-deps check-fuzz-deps fuzz test-sanitize clean slurm test-slurm

all: build

# Missing packages ($(1)) are installed when running as root; otherwise we stop with the command.
define check_packages
	@missing=""; for p in $(1); do dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then echo "installing:$$missing"; apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null || exit 1; \
	  else echo "missing Debian packages; run: sudo apt-get install -y$$missing"; exit 1; fi; \
	fi
endef

check-deps:
	$(call check_packages,$(PACKAGES))

check-fuzz-deps:
	$(call check_packages,$(FUZZ_PACKAGES))

deps:
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y $(PACKAGES)

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release

build: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

# The Python module alone (docs/python.md): import it with PYTHONPATH=$(BUILD)/python. Configured again first, so that
# pybind11 installed since the build directory was made (make deps) is found.
python: $(BUILD)/CMakeCache.txt
	cmake -S . -B $(BUILD) >/dev/null
	cmake --build $(BUILD) -j $(JOBS) --target python

test: check-deps
	@$(MAKE) --no-print-directory build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# `make results`: every experiment through tools/run_sharded.sh (docs/cluster.md), one task at a time with
# all cores, or with `make results JOBS=N` (JOBS on the command line) N tasks at a time, each experiment's
# sweep cut into SHARDS tasks (default JOBS); then merged, judged, reported and published into results/.
# The tables and ledger are those of the one-process run byte for byte (timings aside). The training sweep
# (hours) is cut into TRAINING_TASKS tasks (at least SHARDS) of about equal counted FLOPs. Interrupted
# (Ctrl-C, a failed task, a crash, a reboot), the same command resumes: it keeps every task whose stamp
# proves it finished and runs the rest, saying how many of each in one line. It refuses to mix in a run
# of another build, seed or mode: FRESH=1 starts afresh (so does any run after a published one).
RESULTS_RUN ?= $(BUILD)/results-run
TRAINING_TASKS ?= 8
RESULTS_JOBS := $(if $(filter command line,$(origin JOBS)),$(JOBS),1)
RESULTS_SHARDS := $(or $(SHARDS),$(if $(filter command line,$(origin JOBS)),$(JOBS),1))
RESULTS_TRAINING := $(shell echo $$(( $(TRAINING_TASKS) > $(RESULTS_SHARDS) ? $(TRAINING_TASKS) : $(RESULTS_SHARDS) )))
results: check-deps
	@$(MAKE) --no-print-directory build
	tools/run_sharded.sh --shards $(RESULTS_SHARDS) --jobs $(RESULTS_JOBS) --split exp_vit_training=$(RESULTS_TRAINING) \
	  --seed $(SEED) --bin $(BUILD)/bin --out $(RESULTS_RUN) --publish results $(if $(filter 1,$(FRESH)),--fresh)

# Slurm (docs/cluster.md): `make slurm SHARDS=N [PARTITION=p] [SLURM_FLAGS=--quick]` builds, then submits one
# job array per experiment (N tasks; the training sweep in TRAINING_TASKS tasks, at least N) and the
# merge-judge-report job after them, and prints the job ids; the run lands in SLURM_RUN (RUN/merged when
# done). SLURM_FLAGS passes more of slurm/submit.sh's options (--split EXP=K, --flags EXP=FLAGS). It needs
# only cmake, the compilers and sbatch on the login node (no Debian package check: clusters run other
# distributions).
SLURM_RUN ?= $(BUILD)/slurm-runs/$(shell date +%Y%m%d-%H%M%S)
slurm: $(BUILD)/CMakeCache.txt
	@test -n "$(SHARDS)" || { echo "make slurm: give SHARDS=N (tasks per experiment), e.g. make slurm SHARDS=4 PARTITION=short"; exit 2; }
	cmake --build $(BUILD) -j $(JOBS)
	slurm/submit.sh --shards $(SHARDS) --split exp_vit_training=$$(( $(TRAINING_TASKS) > $(SHARDS) ? $(TRAINING_TASKS) : $(SHARDS) )) \
	  $(if $(PARTITION),--partition $(PARTITION)) --seed $(SEED) --bin $(BUILD)/bin $(SLURM_FLAGS) --out $(SLURM_RUN)

# A real Slurm on this machine (as root): installs slurm-wlm and munge if missing, starts munged, slurmctld
# and slurmd in a scratch directory, runs the quick sweep as job arrays (one task cancelled and rerun on
# the way) and checks the merged results against an unsharded quick run; stops the daemons by pid.
test-slurm: check-deps
	@$(MAKE) --no-print-directory build
	slurm/test_single_node.sh $(BUILD)/bin

# Rewrites results/REPORT.md and results/figures/ from the results already there (no experiment is rerun).
report: check-deps
	python3 tools/make_report.py --results results --seed $(SEED)

# The benchmark (docs/performance.md): our kernels, then the PyTorch peer on the same configurations (skipped with a
# message when Debian's python3-torch is missing), then the table and figures (results/bench_attention.md).
# BENCH_FLAGS=--quick for a smoke run.
BENCH_THREADS ?= 2
BENCH_FLAGS ?=
# A quick benchmark never lands in the committed results (quick and full runs refuse each other's directory).
BENCH_OUT ?= $(if $(findstring --quick,$(BENCH_FLAGS)),quick-results,results)
PYTHON ?= /usr/bin/python3
# Both sides run with glibc's heap kept between runs (no trimming; blocks below 32 MiB from the heap):
# otherwise every timed run pays page faults for the memory the previous run gave back to the kernel,
# which costs small configurations up to 5x (measured on linear attention, batch 32, heads 4, n 128).
BENCH_ENV ?= GLIBC_TUNABLES=glibc.malloc.trim_threshold=1073741824:glibc.malloc.mmap_threshold=33554432
# bench_inspect: attnlab_inspect on LLaMA-shaped checkpoints up to a 7B model's attention (2 GiB written once under
# $(BUILD)/bench-inspect), judged and tabled in bench_inspect.md by tools/bench_inspect_report.py.
# bench_python: the Python module against the same kernel in C++ and attnlab.inspect against attnlab_inspect (bench_inspect's
# largest checkpoint), into bench_python.csv, judged in bench_attention.md.
# bench_vit: ViT training throughput of every attention method against the sgemm rate; its PyTorch peer trains the
# same models at the same batches (bench_vit.csv's rows; --quick: one timed step each) into bench_vit_torch.csv.
VIT_TORCH_FLAGS = $(if $(findstring --quick,$(BENCH_FLAGS)),--steps 1,)
bench: check-deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS) --target bench_attention bench_r7 bench_vit bench_inspect attnlab_inspect
	$(BENCH_ENV) $(BUILD)/bin/bench_attention --out $(BENCH_OUT) --threads $(BENCH_THREADS) $(BENCH_FLAGS)
	@if $(PYTHON) -c 'import torch' 2>/dev/null; then \
	  $(BENCH_ENV) $(PYTHON) bench/bench_attention_torch.py --csv $(BENCH_OUT)/bench_attention.csv --threads $(BENCH_THREADS); \
	else echo "PyTorch not found ($(PYTHON) cannot import torch; Debian package python3-torch): the torch peer is skipped"; fi
	$(BENCH_ENV) $(BUILD)/bin/bench_vit --out $(BENCH_OUT) --threads $(BENCH_THREADS) $(BENCH_FLAGS)
	@if $(PYTHON) -c 'import torch' 2>/dev/null; then \
	  $(BENCH_ENV) $(PYTHON) bench/bench_vit_torch.py --like $(BENCH_OUT)/bench_vit.csv --csv $(BENCH_OUT)/bench_vit_torch.csv \
	    --threads $(BENCH_THREADS) $(VIT_TORCH_FLAGS); \
	else rm -f $(BENCH_OUT)/bench_vit_torch.csv; echo "PyTorch not found ($(PYTHON) cannot import torch; Debian package python3-torch): the ViT torch peer is skipped"; fi
	$(BENCH_ENV) $(BUILD)/bin/bench_r7 --out $(BENCH_OUT) --threads $(BENCH_THREADS) $(BENCH_FLAGS)
	$(BENCH_ENV) $(BUILD)/bin/bench_inspect --out $(BENCH_OUT) --threads $(BENCH_THREADS) $(BENCH_FLAGS)
	$(PYTHON) tools/bench_inspect_report.py --results $(BENCH_OUT)
	@if cmake --build $(BUILD) -j $(JOBS) --target python; then \
	  $(BENCH_ENV) $(PYTHON) bench/bench_python.py --build $(BUILD) --out $(BENCH_OUT) --threads $(BENCH_THREADS) $(if $(findstring --quick,$(BENCH_FLAGS)),--quick) \
	    --inspect-dir $(BUILD)/bench-inspect/$(if $(findstring --quick,$(BENCH_FLAGS)),quick/quick-c,full/llama-7b); \
	else rm -f $(BENCH_OUT)/bench_python.csv; echo "the Python module is not built (pybind11 missing): its rows are skipped"; fi
	$(PYTHON) tools/bench_report.py --results $(BENCH_OUT)

quick: build
	tools/run_experiments.sh $(BUILD)/bin $(BUILD)/quick-results --seed $(SEED) --quick

# The readers of untrusted files under libFuzzer with ASan and UBSan, FUZZ_SECONDS each: the .npy reader,
# the IDX reader (raw and gzip), the safetensors reader, the JSON reader they share with manifests and
# stamps, a checkpoint's manifest.json, and the stamps a run leaves beside its tables (shard, merged and run
# stamps, one reader). Any crash, sanitizer report or exception other than the reader's own error stops a
# target with the input in $(FUZZ_BUILD)/artifacts/ and fails `make fuzz`. New inputs accumulate in
# $(FUZZ_BUILD)/corpus-<target>; the committed seeds (fuzz/corpus-<name>, made by fuzz/make_corpus.py; the
# .npy reader's are fuzz/corpus) stay as they are. Built by CMake (-DATTNLAB_FUZZ=ON, clang) against the
# library's own layer targets: no hand-picked sources. `make fuzz FUZZ_TARGETS=json_fuzz` runs one.
FUZZ_TARGETS ?= npy_fuzz idx_fuzz safetensors_fuzz json_fuzz checkpoint_manifest_fuzz shard_stamp_fuzz
npy_fuzz_FLAGS := -max_len=4096 -dict=fuzz/npy.dict
idx_fuzz_FLAGS := -max_len=4096
safetensors_fuzz_FLAGS := -max_len=4096 -dict=fuzz/safetensors.dict
json_fuzz_FLAGS := -max_len=4096 -dict=fuzz/json.dict
checkpoint_manifest_fuzz_FLAGS := -max_len=8192 -dict=fuzz/manifest.dict
shard_stamp_fuzz_FLAGS := -max_len=8192 -dict=fuzz/stamp.dict
fuzz_seeds = $(if $(filter npy_fuzz,$(1)),fuzz/corpus,fuzz/corpus-$(1:_fuzz=))
fuzz_run = mkdir -p $(FUZZ_BUILD)/corpus-$(1) && echo "== $(1) ($(FUZZ_SECONDS) s, seeds $(call fuzz_seeds,$(1)))" && \
  $(FUZZ_BUILD)/bin/$(1) -max_total_time=$(FUZZ_SECONDS) $($(1)_FLAGS) -print_final_stats=1 \
    -artifact_prefix=$(FUZZ_BUILD)/artifacts/$(1)- $(FUZZ_BUILD)/corpus-$(1) $(call fuzz_seeds,$(1))

fuzz: check-deps check-fuzz-deps
	cmake -S . -B $(FUZZ_BUILD) -DCMAKE_CXX_COMPILER=clang++ -DATTNLAB_FUZZ=ON -DATTNLAB_PCH=OFF \
	  -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g"
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target $(FUZZ_TARGETS)
	@mkdir -p $(FUZZ_BUILD)/artifacts
	@$(foreach t,$(FUZZ_TARGETS),$(call fuzz_run,$(t)) && ) true

# The whole build and ctest with AddressSanitizer and UndefinedBehaviorSanitizer (any UB aborts the test).
# CTEST_ARGS narrows the run, e.g. CTEST_ARGS="-R test_npy".
test-sanitize: check-deps
	cmake -S . -B $(SANITIZE_BUILD) -DCMAKE_BUILD_TYPE=Release -DATTNLAB_SANITIZE=address,undefined
	cmake --build $(SANITIZE_BUILD) -j $(JOBS)
	cd $(SANITIZE_BUILD) && UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure -j $(JOBS) $(CTEST_ARGS)

clean:
	rm -rf $(BUILD) $(FUZZ_BUILD) $(SANITIZE_BUILD)
