# shellcheck shell=bash disable=SC2154
# Shared by the bench/run_*.sh scripts (sourced, not run): messages, tool checks, building a
# benchmark target in a Release tree, and a scratch copy of a peer harness (peer code never
# enters the project). Expects `repo` and `build_dir` to be set by the caller.

say() { printf '==> %s\n' "$*" >&2; }

# need_tools TOOL...: fail unless every TOOL is on PATH.
need_tools() {
  local tool
  for tool in "$@"; do
    command -v "$tool" >/dev/null || { echo "error: $tool is needed and not on PATH" >&2; exit 1; }
  done
}

generator=()
command -v ninja >/dev/null && generator=(-G Ninja)

# build_bench TARGET: configures $build_dir (Release, benchmarks only) if it is new, refuses a
# tree of another build type, and builds TARGET.
build_bench() {
  if [ ! -f "$build_dir/CMakeCache.txt" ]; then
    say "configuring $build_dir (Release, benchmarks only)"
    cmake -S "$repo" -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
      -DTRELLIS_BUILD_BENCH=ON -DTRELLIS_BUILD_TESTS=OFF -DTRELLIS_BUILD_EXAMPLES=OFF >&2
  fi
  local build_type
  build_type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build_dir/CMakeCache.txt")
  if [ "$build_type" != Release ]; then
    echo "error: $build_dir is a '$build_type' build; figures need Release (set TRELLIS_BUILD_DIR)" >&2
    exit 1
  fi
  say "building $1"
  cmake --build "$build_dir" --target "$1" >&2
}

# scratch_copy DIR NAME: copies DIR to a fresh temporary directory (removed at exit), as NAME,
# without DROP (a build or node_modules folder left in the original); sets `scratch`.
scratch_copy() {
  local from=$1 name=$2 drop=$3
  scratch=$(mktemp -d)
  trap 'rm -rf "$scratch"' EXIT
  cp -r "$from" "$scratch/$name"
  chmod -R u+w "$scratch/$name"
  rm -rf "${scratch:?}/$name/$drop"
}
