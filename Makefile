# attnlab: `make results` runs the main job, `make test` the checks.
BUILD ?= build
JOBS ?= $(shell nproc)
SEED ?= 20250311
PACKAGES := cmake g++ make libeigen3-dev libspectra-dev libboost-math-dev doctest-dev libfmt-dev libcli11-dev python3 gnuplot-nox python3-numpy python3-scipy

.PHONY: all build test results report quick deps check-deps clean

all: build

# Missing packages are installed when running as root; otherwise we stop with the command.
check-deps:
	@missing=""; for p in $(PACKAGES); do dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then echo "installing:$$missing"; apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null || exit 1; \
	  else echo "missing Debian packages; run: sudo apt-get install -y$$missing"; exit 1; fi; \
	fi

deps:
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y $(PACKAGES)

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release

build: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

test: check-deps
	@$(MAKE) --no-print-directory build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

results: check-deps
	@$(MAKE) --no-print-directory build
	REPORT=1 tools/run_experiments.sh $(BUILD)/bin results --seed $(SEED)

# Rewrites results/REPORT.md and results/figures/ from the results already there (no experiment is rerun).
report: check-deps
	python3 tools/make_report.py --results results --seed $(SEED)

quick: build
	tools/run_experiments.sh $(BUILD)/bin $(BUILD)/quick-results --seed $(SEED) --quick

clean:
	rm -rf $(BUILD)
