#!/usr/bin/env bash
# Fails when the tree is not formatted, vetted, tidy, or when regenerating
# the generated code changes anything.
set -euo pipefail
cd "$(dirname "$0")/.."

fail=0
unformatted=$(gofmt -l $(git ls-files '*.go') 2>/dev/null || true)
if [ -n "$unformatted" ]; then
	echo "verify: gofmt would change:"; echo "$unformatted"; fail=1
fi
go vet ./... || fail=1
(cd third_party/rpc2 && go vet ./jsonrpc/) || fail=1
(cd third_party/libovsdb && go vet ./cache/ ./ovsdb/ ./mapper/) || fail=1
for mod in . third_party/rpc2 third_party/libovsdb hack/tools test/tools/etcd test/tools/kube-apiserver test/tools/kwok; do
	(cd "$mod" && go mod tidy -diff) || { echo "verify: go mod tidy changes $mod"; fail=1; }
done
hack/generate.sh
if ! git diff --exit-code --stat -- api deploy/base/crds deploy/kubeovn-crds ovn/nbdb; then
	echo "verify: make generate changed the files above"; fail=1
fi
untracked=$(git ls-files --others --exclude-standard -- api deploy/base/crds deploy/kubeovn-crds ovn/nbdb)
if [ -n "$untracked" ]; then
	echo "verify: make generate created untracked files:"; echo "$untracked"; fail=1
fi
[ $fail -eq 0 ] && echo "verify: ok"
exit $fail
