# dplr build, test and benchmark entry points. See README.md.
SHELL := /bin/bash
GO ?= go
BACKEND ?= gonum
BIN := bin
# PLUGIN_MAINS: the one list of plugin main packages every target builds.
PLUGIN_MAINS := ./plugins/pca/cmd/dplr-pca ./plugins/rgrad/cmd/dplr-rgrad ./plugins/fedrep/cmd/dplr-fedrep ./plugins/orbit/cmd/dplr-orbit ./examples/meanplugin/cmd/dplr-example
# STATICCHECK: pinned linter, fetched through the Go module proxy on first use.
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
# RACE_PKGS: the packages with concurrent code paths, run again under -race.
RACE_PKGS := ./engine/ledger/... ./engine/host/... ./engine/privacy/... ./engine/sdk/...

ifeq ($(BACKEND),openblas)
  TAGS := -tags openblas
  PLUGIN_DIR := $(BIN)/plugins-openblas
else
  TAGS :=
  PLUGIN_DIR := $(BIN)/plugins
endif

.PHONY: loc beam-build beam-test beam-bench all build proto proto-check lint race test test-gonum test-openblas fuzz demo bench bench-full vet fmt clean deps-check

all: build

proto:
	PATH="$$PATH:$$($(GO) env GOPATH)/bin" protoc -I engine/transport \
	  --plugin=protoc-gen-go="$$($(GO) tool -n protoc-gen-go)" \
	  --plugin=protoc-gen-go-grpc="$$($(GO) tool -n protoc-gen-go-grpc)" \
	  --go_out=engine/transport/internal/dplrpb --go_opt=paths=source_relative \
	  --go-grpc_out=engine/transport/internal/dplrpb --go-grpc_opt=paths=source_relative \
	  engine/transport/dplr.proto

GOFILES_CHECK = $(shell git ls-files '*.go' | grep -v '\.pb\.go$$')
HAVE_OPENBLAS := $(shell test -e /usr/include/lapacke.h && (test -e /usr/lib/x86_64-linux-gnu/libopenblas.so || ls /usr/lib/*/libopenblas.so >/dev/null 2>&1) && echo yes)

# build: the host in bin/ and every plugin in bin/plugins (gonum) or
# bin/plugins-openblas (BACKEND=openblas), so both can sit side by side.
# Without cgo (only OpenBLAS needs it) the binaries are static: no dynamic
# loader at each start, about 1 ms per process (bench/results/host.md).
build:
	@mkdir -p $(BIN) $(PLUGIN_DIR)
	CGO_ENABLED=0 $(GO) build -o $(BIN)/dplr ./cmd/dplr
	$(if $(TAGS),,CGO_ENABLED=0 )$(GO) build $(TAGS) -o $(PLUGIN_DIR)/ $(PLUGIN_MAINS)

deps-check:
	@test "$(HAVE_OPENBLAS)" = yes || { echo "OpenBLAS/LAPACKE missing: apt-get install libopenblas-dev liblapacke-dev"; exit 1; }

vet:
	@out=$$(gofmt -l $(GOFILES_CHECK)); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

# lint: the pinned staticcheck over the whole module (both backends when
# OpenBLAS is present).
lint:
	$(GO) run $(STATICCHECK) ./...
ifeq ($(HAVE_OPENBLAS),yes)
	$(GO) run $(STATICCHECK) -tags openblas ./backend/...
endif

# proto-check: the committed generated code is what `make proto` produces.
proto-check:
	@command -v protoc >/dev/null || { echo "proto-check: protoc missing: apt-get install protobuf-compiler"; exit 1; }
	$(MAKE) proto
	@git diff --exit-code -- engine/transport/dplr.proto engine/transport/internal/dplrpb || { echo "proto-check: generated code is stale: run make proto and commit"; exit 1; }

# race: the concurrent packages again under the race detector.
race:
	$(GO) test -count=1 -race $(RACE_PKGS)

# loc: non-test Go lines (generated protobuf code excluded, beam module
# included), the figure the issues track.
loc:
	@git ls-files '*.go' | grep -v '_test\.go$$' | grep -v '\.pb\.go$$' | xargs cat | wc -l | sed 's/^/non-test Go lines (excluding generated): /'
	@git ls-files '*.go' | grep -v '_test\.go$$' | xargs cat | wc -l | sed 's/^/non-test Go lines (including generated): /'
	@git ls-files '*_test.go' | xargs cat | wc -l | sed 's/^/test Go lines: /'

fmt:
	gofmt -w $(GOFILES_CHECK)

# test: vet, the whole suite on the pure-Go backend, the backend-dependent
# packages again on OpenBLAS when its libraries are present, and short runs
# of every fuzz target.
test: vet lint proto-check
	CGO_ENABLED=0 $(GO) build ./...
	$(GO) test -count=1 ./...
ifeq ($(HAVE_OPENBLAS),yes)
	$(GO) vet -tags openblas ./backend/...
	$(GO) test -count=1 -tags openblas ./backend/... ./plugins/...
else
	@echo "test: OpenBLAS/LAPACKE not installed; skipping the openblas backend suite"
endif
	$(MAKE) race
	$(MAKE) fuzz FUZZTIME=20000x
	$(MAKE) python-test
	$(MAKE) beam-test

# python-test: the Python package's tests and the documentation's examples
# (docs/python.md as doctests, every runnable shell block of README.md and
# docs/: python/tests/test_docs.py), with Debian's python3 (python3-numpy,
# python3-pytest) against the binaries in bin/.
PYTHON ?= $(shell test -x /usr/bin/python3 && echo /usr/bin/python3 || echo python3)
.PHONY: python-test
python-test: build
	DPLR_BIN=$(CURDIR)/$(BIN)/dplr DPLR_TEST_PLUGIN_DIR=$(CURDIR)/$(PLUGIN_DIR) $(PYTHON) -m pytest -q -p no:cacheprovider python/tests

# docs-test: only the documentation's examples (part of python-test).
.PHONY: docs-test
docs-test: build
	DPLR_BIN=$(CURDIR)/$(BIN)/dplr DPLR_TEST_PLUGIN_DIR=$(CURDIR)/$(PLUGIN_DIR) $(PYTHON) -m pytest -q -p no:cacheprovider python/tests/test_docs.py

# beam-build: the Beam statistics path (a separate module, beam/, so that the
# core never links Apache Beam): bin/dplr-beam, which `dplr fit --engine
# beam` finds beside bin/dplr.
beam-build:
	@mkdir -p $(BIN)
	cd beam && $(GO) build -o ../$(BIN)/dplr-beam ./cmd/dplr-beam

# beam-test: vet and test the beam module; its pipelines run on the embedded
# prism runner, in-process and offline. Beam's loopback runner leaves an
# empty beamloopbackworker-* file in the temporary directory for every
# pipeline (a few hundred per run), so the tests get a temporary directory
# of their own, removed afterwards, as `dplr fit --engine beam` gives each
# dplr-beam run.
beam-test:
	cd beam && $(GO) vet ./... && t=$$(mktemp -d) && { TMPDIR=$$t $(GO) test -count=1 ./...; s=$$?; rm -rf $$t; exit $$s; }

# beam-bench: rows/s and peak memory of the prism pipeline against the
# single-machine path (bench/results/beam.md); its temporary directory as
# for beam-test.
beam-bench:
	cd beam && t=$$(mktemp -d) && { TMPDIR=$$t $(GO) run ./cmd/beam-bench; s=$$?; rm -rf $$t; exit $$s; }

# make test fuzzes by execution count (20000x), not time: Go 1.26's fuzz
# coordinator can report a spurious "context deadline exceeded" when a
# duration -fuzztime expires on a loaded machine (go.dev/issue/75804, fixed
# in Go 1.27); a count has no deadline to race.
FUZZTIME ?= 30s
fuzz:
	@for t in $$($(GO) test -list '^Fuzz' ./engine/dataio | grep '^Fuzz'); do \
	  echo "fuzz $$t ($(FUZZTIME))"; \
	  $(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) ./engine/dataio || exit 1; \
	done

clean:
	rm -rf $(BIN)

# demo: build (and the OpenBLAS plugins when the libraries are present:
# dplr then uses bin/plugins-openblas first, without a flag), then generate
# spiked-covariance data and compare the DP PCA estimators with the truth
# at several ε (offline, about 10 s). It says which backend ran.
demo: build
ifeq ($(HAVE_OPENBLAS),yes)
	$(MAKE) build BACKEND=openblas
	@echo "demo: backend openblas (bin/plugins-openblas, found first in the plugin search path)"
else
	@echo "demo: backend gonum (pure Go; apt-get install libopenblas-dev liblapacke-dev and rerun for the fast build)"
endif
	$(BIN)/dplr demo --out dplr-out/demo

# bench: the quick subset (≤ 5 min) — a smoke test that scenarios run through
# the host and the report builds; output in bench/quick/ (not committed).
bench: build
	$(GO) build -o $(BIN)/bench ./bench/cmd/bench
	$(BIN)/bench run --quick
	$(BIN)/bench report --quick --out bench/quick --results bench/quick/RESULTS.md

# bench-full: every scenario (both backends where OpenBLAS is present), then
# bench/RESULTS.md and bench/plots/. Finished cells are kept and skipped.
bench-full: build
	$(GO) build -o $(BIN)/bench ./bench/cmd/bench
ifeq ($(HAVE_OPENBLAS),yes)
	$(MAKE) build BACKEND=openblas
endif
	$(BIN)/bench run
	$(BIN)/bench report
