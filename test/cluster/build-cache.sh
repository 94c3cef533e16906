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
#                               stopped half-way leaves nothing that looks built); one
#                               build of NAME at a time (a flock), a second asker waits
#   build_stamped OUT BINARY...
#                               the per-binary cache of build.sh and node/build.sh (below):
#                               a stamp and a lock per binary in OUT
# and builds with the local Go toolchain only, statically (no cgo).

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
  mkdir -p "$cache_root/.locks"
  # One build of NAME at a time: a test that asks while the background build
  # (test/cluster/build-all.sh) builds it waits for that build, then finds it built.
  exec 8>"$cache_root/.locks/$name"
  if command -v flock >/dev/null && ! flock -n 8; then
    echo "$name: waiting for another build ($cache_root/.locks/$name)" >&2
    flock 8
  fi
  if "$is_built" "$out"; then
    echo "$name: cache hit (built concurrently): $out" >&2
    exec 8>&-
    echo "$out"
    return 0
  fi
  tmp="$(mktemp -d "$cache_root/.tmp-$name.XXXXXX")"
  # shellcheck disable=SC2064 # expanded now: the trap must remove this directory
  trap "rm -rf '$tmp'" EXIT
  "$build" "$tmp"
  chmod 755 "$tmp"
  rm -rf "$out"
  mv "$tmp" "$out"
  trap - EXIT
  exec 8>&-
  echo "$out"
}

# ---------------------------------------------------------------- per-binary cache
# build_stamped OUT BINARY...: each BINARY is a cache hit when OUT holds it and its
# stamp (OUT/.stamps/BINARY) holds the key of what its build reads; the others are
# built, one at a time (one big link at a time keeps peak memory down), each under a
# lock of its own (OUT/.locks/BINARY, flock): a run that overlaps waits for that
# binary only, then finds it built. A binary is built beside its final place and
# renamed into place (a process running the old file keeps it); its stamp is written
# last, so a build stopped half-way leaves no stamp and is done again. Prints OUT as
# the LAST line on stdout.
#
# The caller defines log and die, and:
#   recipe_key BINARY           a hash of everything the binary's build reads
#   build_command BINARY FILE   sets cmd (the go build writing FILE) and dir (where it runs)
#   stamp_versions              the versions to record in each stamp, "name=version" words
# and may define:
#   binary_place BINARY         its path under OUT (default: BINARY)
#   hit_also BINARY             more a hit needs (default: nothing)
#   report_built BINARY FILE    after the build, e.g. print its --version to stderr
#   build_extras BINARY         after the build, before the rename: what comes with it
# Environment: DKV_CONTROL_PLANE_REBUILD=1 ignores the stamps.
binary_place() { echo "$1"; }
hit_also() { return 0; }
report_built() { :; }
build_extras() { :; }

stamped_hit() { # OUT BINARY: built by this recipe (its stamp says so) and still there
  [[ "${DKV_CONTROL_PLANE_REBUILD:-0}" != 1 && -x "$1/$(binary_place "$2")" ]] || return 1
  hit_also "$2" || return 1
  grep -qx "key=$(recipe_key "$2")" "$1/.stamps/$2" 2>/dev/null
}

build_stamped() { # OUT BINARY...
  local out="$1" b start built=() missing=()
  shift
  for b in "$@"; do stamped_hit "$out" "$b" || missing+=("$b"); done
  if ((${#missing[@]} == 0)); then
    log "cache hit: $out"
    echo "$out"
    return 0
  fi
  command -v go >/dev/null || die "go not found in PATH (Go >= 1.26 needed)"
  mkdir -p "$out/.stamps" "$out/.locks"
  build_log="$out/build.log"
  timer=()
  if [[ -x /usr/bin/time ]]; then timer=(/usr/bin/time -v -a -o "$build_log"); fi
  temporaries=()
  trap 'rm -rf "${temporaries[@]}"' EXIT
  trap 'exit 143' TERM   # so that the EXIT trap removes a half-built binary when a build is stopped
  trap 'exit 130' INT
  log "building ${missing[*]} ($(stamp_versions)) into $out (go build -p ${DKV_BUILD_PARALLELISM:-2}; a first build with a cold Go build cache takes minutes)"
  start=$SECONDS
  for b in "${missing[@]}"; do
    exec 9>"$out/.locks/$b"
    if command -v flock >/dev/null && ! flock -n 9; then
      log "waiting for another build of $b ($out/.locks/$b)"
      flock 9
    fi
    if stamped_hit "$out" "$b"; then
      log "cache hit (built concurrently): $b"
    else
      # Left by a build that was killed; nobody else builds $b while we hold its lock.
      rm -rf "$out/.tmp-$b".* "$out/.tmp-$b"-*
      build_one "$out" "$b"
      built+=("$b")
    fi
    exec 9>&-
  done
  echo "=== $(date -u +%Y-%m-%dT%H:%M:%SZ): built ${built[*]:-nothing} in $((SECONDS - start))s" >>"$build_log"
  log "done in $((SECONDS - start))s; build log: $build_log"
  echo "$out"
}

build_one() { # OUT BINARY
  local out="$1" b="$2" t0=$SECONDS tmp cmd dir
  tmp="$(mktemp "$out/.tmp-$b.XXXXXX")"
  temporaries+=("$tmp")
  dir="$here"
  build_command "$b" "$tmp"
  log "building $b ..."
  echo "=== $b: (cd $dir) ${cmd[*]}" >>"$build_log"
  (cd "$dir" && "${timer[@]}" "${cmd[@]}") || die "building $b failed (see output above)"
  report_built "$b" "$tmp"
  build_extras "$b"
  chmod 755 "$tmp"
  mkdir -p "$(dirname "$out/$(binary_place "$b")")"
  mv -f "$tmp" "$out/$(binary_place "$b")"
  log "built $b in $((SECONDS - t0))s"
  echo "=== $b wall seconds: $((SECONDS - t0))" >>"$build_log"
  { printf 'key=%s\n' "$(recipe_key "$b")"; printf '%s\n' $(stamp_versions); printf 'go=%s\nbuilt=%s in %ss\n' "$(go env GOVERSION)" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$((SECONDS - t0))"; } >"$out/.stamps/.$b.tmp"
  mv -f "$out/.stamps/.$b.tmp" "$out/.stamps/$b"
}
