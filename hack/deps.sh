#!/usr/bin/env bash
# Installs the Debian packages the tests and the demo need, when they are
# missing: ovn-central (ovsdb-server, ovsdb-tool and the OVN Northbound
# schema), openvswitch-common (ovs-appctl) and prometheus (prometheus and
# promtool, for the dashboard and alert-rule tests). Safe to run again:
# nothing is installed twice. Needs root, or sudo for apt-get.
set -euo pipefail

have() {
	command -v ovsdb-server >/dev/null && command -v ovs-appctl >/dev/null &&
		[ -f /usr/share/ovn/ovn-nb.ovsschema ] && [ -x /usr/bin/prometheus ] && [ -x /usr/bin/promtool ]
}
if have; then
	exit 0
fi
if ! command -v apt-get >/dev/null; then
	echo "deps: apt-get not found: install ovn-central, openvswitch-common and prometheus (Debian package names) by hand" >&2
	exit 1
fi
sudo=()
if [ "$(id -u)" -ne 0 ]; then
	if ! command -v sudo >/dev/null; then
		echo "deps: installing ovn-central, openvswitch-common and prometheus needs root or sudo" >&2
		exit 1
	fi
	sudo=(sudo)
fi
echo "deps: installing ovn-central, openvswitch-common and prometheus with apt-get"
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends ovn-central openvswitch-common prometheus >/dev/null
# The packages' scripts may start their own daemons; the tests start their
# own servers on free loopback ports and need none of them.
if command -v service >/dev/null; then
	"${sudo[@]}" service ovn-central stop >/dev/null 2>&1 || true
	"${sudo[@]}" service prometheus stop >/dev/null 2>&1 || true
fi
have
