# shardnet — run `make help` for the targets.
SHELL := /usr/bin/env bash
.DEFAULT_GOAL := help

GO            ?= go
TOOLS         := $(GO) tool -modfile=$(CURDIR)/hack/tools/go.mod
MODULE        := github.com/shardnet/shardnet
BIN           ?= $(CURDIR)/bin
# The real servers the end-to-end tests run are built into this cache once.
export SHARDNET_TESTBIN ?= $(HOME)/.cache/shardnet/testbin
# Test flags; CI and `make test` run everything under the race detector.
TESTFLAGS     ?= -race -count=1 -timeout=40m
FUZZTIME      ?= 10000x

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z_-]+:.*##/ {printf "  \033[36m%-12s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

# What `shardnet version` and shardnet_build_info report; a binary built
# without these -X flags says dev/unknown.
VERSION       ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT        ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
BUILD_DATE    ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
VERSION_PKG   := $(MODULE)/cmd/shardnet/app
LDFLAGS        = -X $(VERSION_PKG).Version=$(VERSION) -X $(VERSION_PKG).Commit=$(COMMIT) -X $(VERSION_PKG).BuildDate=$(BUILD_DATE)

.PHONY: build
build: ## Build the shardnet binary into bin/, stamped with the git version and commit.
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN)/shardnet ./cmd/shardnet

IMAGE            ?= shardnet:$(VERSION)
CONTAINER_ENGINE ?= $(shell command -v docker 2>/dev/null || command -v podman 2>/dev/null)

.PHONY: image
image: ## Build the container image (IMAGE, default shardnet:<git version>) with docker or podman.
	@if [ -z "$(CONTAINER_ENGINE)" ]; then \
		echo "make image: neither docker nor podman is installed; install one, or set CONTAINER_ENGINE to a compatible command" >&2; \
		exit 1; \
	fi
	$(CONTAINER_ENGINE) build --build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT) --build-arg BUILD_DATE=$(BUILD_DATE) -t $(IMAGE) .

.PHONY: generate
generate: ## Regenerate deepcopy, CRDs, typed clients and NB models.
	hack/generate.sh

.PHONY: verify
verify: ## gofmt, go vet, go mod tidy and generate leave no diff.
	hack/verify.sh

.PHONY: deps
deps: ## Install the Debian packages the tests need (ovn-central, openvswitch-common, prometheus) when missing.
	hack/deps.sh

.PHONY: testbin
testbin: ## Build etcd, kube-apiserver and kwok for the tests (cached in $SHARDNET_TESTBIN).
	hack/testbin.sh

.PHONY: test
test: deps testbin ## Install what the tests need, then run every test (unit, fuzz seeds, end-to-end) under -race.
	$(GO) test $(TESTFLAGS) ./...
	cd third_party/rpc2 && $(GO) test $(TESTFLAGS) ./...
	cd third_party/libovsdb && $(GO) test $(TESTFLAGS) ./cache/ ./ovsdb/ ./mapper/
	hack/fuzz.sh $(FUZZTIME)

.PHONY: test-e2e
test-e2e: deps testbin ## Run only the end-to-end suites under test/.
	$(GO) test $(TESTFLAGS) ./test/...

# Where the fault suite writes its report table (printed after the run).
FAULTS_REPORT ?= $(or $(TMPDIR),/tmp)/shardnet-faults-report.md

.PHONY: test-faults
test-faults: deps testbin ## The whole fault suite under load (twelve cases: replica, leader, Northbound, API server and etcd faults, split brain, an expired watch, scaling; ~17 min); prints its report table.
	@rm -f $(FAULTS_REPORT)
	SHARDNET_FAULTS=1 SHARDNET_FAULTS_REPORT=$(FAULTS_REPORT) $(GO) test -race -count=1 -timeout=90m ./test/faults/; \
		status=$$?; cat $(FAULTS_REPORT) 2>/dev/null; exit $$status

# The cases CI runs: the split brains (follower and leader), a leader kill,
# an API server restart and a Northbound restart (~15 min).
FAULTS_CI ?= split-brain|split-brain-leader|kill-leader|apiserver-restart|nb-restart|watch-gap

.PHONY: test-faults-ci
test-faults-ci: deps testbin ## The checker's self-test and the fault suite's CI cases ($(FAULTS_CI)); prints its report table.
	@rm -f $(FAULTS_REPORT)
	SHARDNET_FAULTS=1 $(GO) test -race -count=1 -timeout=10m -run '^TestCheckerCatchesViolations$$' ./test/faults/
	SHARDNET_FAULTS=1 SHARDNET_FAULTS_REPORT=$(FAULTS_REPORT) $(GO) test -race -count=1 -timeout=40m -run 'TestFaults/($(FAULTS_CI))$$' ./test/faults/; \
		status=$$?; cat $(FAULTS_REPORT) 2>/dev/null; exit $$status

BENCH_PODS    ?= 5000
BENCH_OUT     ?= bench/out
BENCH_FLAGS   ?=

.PHONY: bench
bench: testbin build ## End-to-end benchmark (raw ceiling, 1 and 3 replicas, baseline) and micro-benchmarks; report in bench/out.
	$(GO) build -o $(BIN)/shardnet-bench ./bench/cmd/shardnet-bench
	$(BIN)/shardnet-bench -pods $(BENCH_PODS) -out $(BENCH_OUT) -shardnet $(BIN)/shardnet $(BENCH_FLAGS)

.PHONY: bench-check
bench-check: ## Fail when the ratios of bench/out/result.json fall below bench/thresholds.json.
	$(GO) run ./bench/cmd/shardnet-bench -check $(BENCH_OUT)/result.json -thresholds bench/thresholds.json

.PHONY: bench-ci
bench-ci: ## The small benchmark CI runs (1,000 pods, three rounds of the full-speed scenarios and of the half-rate pair, no micro-benchmarks), then bench-check.
	$(MAKE) bench BENCH_PODS=1000 BENCH_OUT=$(BENCH_OUT) BENCH_FLAGS="-micro=false -rounds 3"
	$(MAKE) bench-check BENCH_OUT=$(BENCH_OUT)

DEMO_FLAGS    ?=

.PHONY: demo
demo: testbin ## Run the demo binary (cmd/shardnet-demo): local apiserver, kwok, Northbound, 3 replicas; DEMO_FLAGS passes its flags.
	$(GO) build -o $(BIN)/shardnet-demo ./cmd/shardnet-demo
	$(BIN)/shardnet-demo $(DEMO_FLAGS)
