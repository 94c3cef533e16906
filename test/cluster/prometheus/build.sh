#!/usr/bin/env bash
# Builds Prometheus' own tools from the Go module proxy, into a version-keyed
# cache directory outside git (../build-cache.sh):
#   promtool    `promtool check rules` and `promtool test rules` on the generated
#               alert rules (test/monitoring/);
#   prometheus  the server, for a test where a real Prometheus scrapes real members
#               and the controller: built only when asked (`build.sh prometheus`),
#               for it takes longer and the rule tests do not need it.
# Their own module (./go.mod, Prometheus' module versions are v0.3xx.y for 3.x) so
# that their dependencies never move the control plane's pins. Built with
# `remove_all_sd`: no cloud service discovery (AWS, Azure, GCE and the rest, most of
# the build); static, file and HTTP discovery stay, and promtool keeps Kubernetes'.
# Idempotent: a second run is a cache hit. The LAST line on stdout is the directory
# holding the binaries; progress and build times go to stderr and to its .stamp.
#
# Usage: build.sh [prometheus]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/../build-cache.sh"
prometheus_version="$(modver github.com/prometheus/prometheus)"
[[ -n "$prometheus_version" ]] || { echo "prometheus: cannot read the github.com/prometheus/prometheus version from $here/go.mod" >&2; exit 1; }
tags=remove_all_sd
wanted=(promtool)
for a in "$@"; do
  case "$a" in
    prometheus) wanted+=(prometheus) ;;
    *) echo "prometheus: unknown argument '$a' (known: prometheus)" >&2; exit 2 ;;
  esac
done
key="$(content_key "tags=$tags" "CGO_ENABLED=0 -trimpath -s -w")"
out="$cache_root/prometheus-${prometheus_version}-${key}"

# The stamp is written last, once every binary in it is in place: it names what was built.
built() {
  local b
  for b in "${wanted[@]}"; do
    [[ -x "$1/$b" ]] && grep -qx "binary=$b" "$1/.stamp" 2>/dev/null || return 1
  done
}
go_build() { # OUTPUT PACKAGE
  local t0=$SECONDS
  echo "prometheus: building $(basename "$1") ${prometheus_version} (tags $tags) ..." >&2
  (cd "$here" && go build -mod=readonly -p "${DKV_BUILD_PARALLELISM:-2}" -tags "$tags" -trimpath -ldflags "-s -w" -o "$1" "$2")
  "$1" --version >&2
  echo "prometheus: built $(basename "$1") in $((SECONDS - t0))s" >&2
  printf 'binary=%s\n%s built in %ss on %s with %s\n' "$(basename "$1")" "$(basename "$1")" "$((SECONDS - t0))" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$(go env GOVERSION)" >>"$(dirname "$1")/.stamp.new"
}
build_into() {
  local b
  : >"$1/.stamp.new"
  for b in promtool prometheus; do
    # What an earlier run built is kept: asking for the server later builds the server alone.
    if [[ -x "$out/$b" ]] && grep -qx "binary=$b" "$out/.stamp" 2>/dev/null; then
      cp -p "$out/$b" "$1/$b" && sed -n "/^binary=$b\$/,+1p" "$out/.stamp" >>"$1/.stamp.new"
    elif [[ " ${wanted[*]} " == *" $b "* ]]; then
      go_build "$1/$b" "github.com/prometheus/prometheus/cmd/$b"
    fi
  done
  mv "$1/.stamp.new" "$1/.stamp"
}

mkdir -p "$cache_root"
# One build at a time: an overlapping run waits, then finds the binaries built.
exec 9>"$cache_root/.prometheus-build.lock"
command -v flock >/dev/null && flock 9
cached_build prometheus "$out" built build_into
