#!/usr/bin/env bash
# Builds every real component the suite runs, one after the other, in the order
# the test lanes need them (test/lanes/component-needs.ts: the files that need
# only the control plane run first, the real node's lane last). `npm test` starts
# it in the background, at low CPU priority, while the lanes that need nothing
# built run; .ci/run starts it before `npm ci`, so the control plane's build
# overlaps installing, typechecking and linting. Each build script takes a lock:
# a test that asks for a component this chain is building waits for that build
# (one build of each, however many ask), then finds it in the cache.
#
# Prints one line per component to stdout ("<component> <seconds>s <ok|FAILED>")
# and exits non-zero when any failed; each script's own progress goes to stderr.
# On a warm cache every line says 0s or 1s.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

# Mirrors COMPONENT_ORDER in test/lanes/component-needs.ts (a unit test compares them).
steps=(
  "control-plane|build.sh etcd kube-apiserver dkv-pki"
  "porcupine|porcupine/build.sh"
  "kwok-nodes|build.sh kube-controller-manager kube-scheduler kwok kubectl"
  "backup-tools|backup-tools/build.sh"
  "prometheus|prometheus/build.sh prometheus"
  "csi-snapshotter|csi-snapshotter/build.sh"
  "cert-manager|cert-manager/build.sh"
  "real-node|node/build.sh"
  "etcd-previous|etcd-previous/build.sh"
)

failed=0
for step in "${steps[@]}"; do
  name="${step%%|*}"
  read -r -a command <<<"${step#*|}"
  start=$SECONDS
  if bash "$here/${command[0]}" "${command[@]:1}" >/dev/null; then result=ok; else result=FAILED; failed=1; fi
  echo "$name $((SECONDS - start))s $result"
done
exit "$failed"
