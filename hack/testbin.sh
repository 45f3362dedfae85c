#!/usr/bin/env bash
# Builds the real servers the end-to-end harness runs (etcd, kube-apiserver,
# kwok) from the Go module proxy into a cache folder. A binary already built
# for the pinned version is kept, so only the first run pays for the build
# (kube-apiserver takes about five minutes on two cores).
#
#   hack/testbin.sh [DIR]     DIR defaults to $SHARDNET_TESTBIN or
#                             ~/.cache/shardnet/testbin
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-${SHARDNET_TESTBIN:-$HOME/.cache/shardnet/testbin}}
mkdir -p "$dir"
export GOFLAGS=-mod=mod CGO_ENABLED=0

# The versions are the ones pinned in test/tools/*/go.mod.
ETCD_VERSION=v3.7.3
KUBE_VERSION=v1.37.2
KWOK_VERSION=v0.8.0

build() { # name version module-dir package [ldflags]
	local name=$1 version=$2 mod=$3 pkg=$4 ldflags=${5:-}
	local out="$dir/$name-$version"
	if [ -x "$out" ]; then
		echo "testbin: $name $version already built ($out)"
	else
		echo "testbin: building $name $version (from $pkg) ..."
		local start=$SECONDS
		(cd "$root/test/tools/$mod" && go build -trimpath -ldflags "-s -w $ldflags" -o "$out.tmp" "$pkg")
		mv "$out.tmp" "$out"
		echo "testbin: built $name $version in $((SECONDS - start))s"
	fi
	ln -sf "$name-$version" "$dir/$name"
}

build etcd "$ETCD_VERSION" etcd go.etcd.io/etcd/server/v3
build kwok "$KWOK_VERSION" kwok sigs.k8s.io/kwok/cmd/kwok
build kube-apiserver "$KUBE_VERSION" kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver \
	"-X k8s.io/component-base/version.gitVersion=$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37 -X k8s.io/component-base/version.gitTreeState=clean"

# kwok needs its Stage configuration: copy the pinned module's node and pod
# stages next to the binaries.
kwokdir=$(cd "$root/test/tools/kwok" && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)
stages="$dir/kwok-stages-$KWOK_VERSION"
if [ ! -d "$stages" ]; then
	mkdir -p "$stages.tmp"
	for s in node/fast node/heartbeat pod/fast; do
		for f in "$kwokdir/kustomize/stage/$s"/*.yaml; do
			case "$(basename "$f")" in kustomization.yaml) continue ;; esac
			cp "$f" "$stages.tmp/$(echo "$s" | tr / -)-$(basename "$f")"
		done
	done
	chmod -R u+w "$stages.tmp"
	mv "$stages.tmp" "$stages"
fi
ln -sfn "kwok-stages-$KWOK_VERSION" "$dir/kwok-stages"
echo "testbin: ready in $dir"
