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
FUZZTIME      ?= 5s

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z_-]+:.*##/ {printf "  \033[36m%-12s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
build: ## Build the shardnet binary into bin/.
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN)/shardnet ./cmd/shardnet

.PHONY: generate
generate: ## Regenerate deepcopy, CRDs, typed clients and NB models.
	hack/generate.sh

.PHONY: verify
verify: ## gofmt, go vet, go mod tidy and generate leave no diff.
	hack/verify.sh

.PHONY: testbin
testbin: ## Build etcd, kube-apiserver and kwok for the tests (cached in $SHARDNET_TESTBIN).
	hack/testbin.sh

.PHONY: test
test: testbin ## Run every test (unit, fuzz seeds, end-to-end) under -race.
	$(GO) test $(TESTFLAGS) ./...
	hack/fuzz.sh $(FUZZTIME)

.PHONY: test-e2e
test-e2e: testbin ## Run only the end-to-end suites under test/.
	$(GO) test $(TESTFLAGS) ./test/...

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
bench-ci: ## The small benchmark CI runs (1,000 pods, no micro-benchmarks), then bench-check.
	$(MAKE) bench BENCH_PODS=1000 BENCH_OUT=$(BENCH_OUT) BENCH_FLAGS=-micro=false
	$(MAKE) bench-check BENCH_OUT=$(BENCH_OUT)

.PHONY: demo
demo: testbin build ## Run shardnet against a local apiserver, kwok and Northbound.
	$(BIN)/shardnet demo
