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

.PHONY: bench
bench: testbin ## Run the benchmarks and print their figures.
	$(GO) test -run='^$$' -bench=. -benchtime=1x ./...

.PHONY: demo
demo: testbin build ## Run shardnet against a local apiserver, kwok and Northbound.
	$(BIN)/shardnet demo
