// Package tools pins the code generators shardnet runs from `make generate`
// (controller-gen for deepcopy and CRDs, libovsdb's modelgen for the NB
// models, code-generator for the typed clients). Keeping them in their own
// module keeps the product's go.mod free of generator dependencies.
package tools
