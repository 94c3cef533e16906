# Sourced (never run) by the build scripts under test/cluster/: the version-keyed
# cache they share. Each script builds real components from the Go module proxy,
# with a go.mod of its own (its pins never move another's), into a directory under
# the cache root named by the versions it builds and a key of what the build
# depends on, and prints that directory as the LAST line on stdout (progress goes
# to stderr). A second run finds it there: a cache hit, nothing built.
#
# The caller sets `here` (its own directory, which holds its go.mod) first. Gives:
#   cache_root                  $DKV_CONTROL_PLANE_CACHE, default $HOME/.cache/dkv-control-plane
#   modver MODULE [GO_MOD]      the version a go.mod requires, in a require block or on a
#                               one-line require (default $here/go.mod; read with awk: no
#                               network, no go invocation)
#   content_key [TEXT...]       12 hex digits of the SHA-256 of $here/go.mod, $here/go.sum
#                               and each TEXT on a line of its own (build flags, file lists)
#   cached_build NAME OUT IS_BUILT BUILD
#                               OUT when IS_BUILT OUT says it is complete (a cache hit);
#                               else BUILD TMP builds into a fresh directory beside OUT,
#                               which replaces OUT only once BUILD succeeded (a build
#                               stopped half-way leaves nothing that looks built)
# and builds with the local Go toolchain only, statically (no cgo).
# test/cluster/build.sh caches each control-plane binary on its own (a stamp and a
# lock per binary) and uses only cache_root and modver from here.

export GOTOOLCHAIN=local CGO_ENABLED=0
cache_root="${DKV_CONTROL_PLANE_CACHE:-${HOME}/.cache/dkv-control-plane}"

modver() {
  awk -v m="$1" '$1 == m && $2 ~ /^v/ { print $2; exit } $1 == "require" && $2 == m && $3 ~ /^v/ { print $3; exit }' "${2:-$here/go.mod}"
}

content_key() {
  { cat "$here/go.mod" "$here/go.sum"; (($# == 0)) || printf '%s\n' "$@"; } | sha256sum | cut -c1-12
}

cached_build() { # NAME OUT IS_BUILT BUILD
  local name="$1" out="$2" is_built="$3" build="$4" tmp
  if "$is_built" "$out"; then
    echo "$name: cache hit: $out" >&2
    echo "$out"
    return 0
  fi
  mkdir -p "$cache_root"
  tmp="$(mktemp -d "$cache_root/.tmp-$name.XXXXXX")"
  # shellcheck disable=SC2064 # expanded now: the trap must remove this directory
  trap "rm -rf '$tmp'" EXIT
  "$build" "$tmp"
  chmod 755 "$tmp"
  rm -rf "$out"
  mv "$tmp" "$out"
  trap - EXIT
  echo "$out"
}
