#!/usr/bin/env bash
# Regenerates every generated file: deepcopy methods and CRD manifests
# (controller-gen, into deploy/base/crds and deploy/kubeovn-crds), typed
# clientset, listers and informers (code-generator), and the OVN Northbound
# models (libovsdb modelgen). The generators are pinned in hack/tools/go.mod.
set -euo pipefail
cd "$(dirname "$0")/.."

T="go tool -modfile=$PWD/hack/tools/go.mod"
M=github.com/shardnet/shardnet
H=hack/boilerplate.go.txt
APIS="$M/api/kubeovn/v1 $M/api/shardnet/v1alpha1"

$T controller-gen object:headerFile=$H paths=./api/...
# shardnet's own CRD (AddressClaim) belongs to the kustomize base; the
# kubeovn.io CRDs are an opt-in directory for clusters without kube-ovn (its
# kustomization.yaml and README.md are kept).
rm -rf deploy/base/crds
$T controller-gen crd:allowDangerousTypes=true paths=./api/shardnet/... output:crd:dir=deploy/base/crds
rm -f deploy/kubeovn-crds/kubeovn.io_*.yaml
$T controller-gen crd:allowDangerousTypes=true paths=./api/kubeovn/... output:crd:dir=deploy/kubeovn-crds

rm -rf api/client
$T client-gen --clientset-name versioned --input-base "" \
	--input "$(echo $APIS | tr ' ' ,)" \
	--output-pkg $M/api/client/clientset --output-dir api/client/clientset --go-header-file $H
$T lister-gen --output-pkg $M/api/client/listers --output-dir api/client/listers --go-header-file $H $APIS
$T informer-gen --versioned-clientset-package $M/api/client/clientset/versioned \
	--listers-package $M/api/client/listers \
	--output-pkg $M/api/client/informers --output-dir api/client/informers --go-header-file $H $APIS

(cd ovn/nbdb && find . -name '*.go' ! -name gen.go ! -name doc.go ! -name '*_test.go' -delete && go generate .)
gofmt -w api ovn/nbdb
