#!/usr/bin/env bash
# Installs the Debian 12 packages trellis builds, tests and benchmarks with. Installs nothing
# when they are all present already, so it is safe (and quick) to run again.
set -euo pipefail

packages=(
  g++ cmake ninja-build     # compiler and build
  libboost-dev              # Boost.Signals2: subscribe() connections
  libtbb-dev                # oneTBB: AsyncContext's executor
  nlohmann-json3-dev        # JSON: persistence (later layers)
  doctest-dev               # tests
  librapidcheck-dev         # property tests: RapidCheck, the trellis::rapidcheck adapter
  libbenchmark-dev          # benchmarks
  libsqlite3-dev            # SQLite store (later layers)
  libpq-dev                 # PostgreSQL store: libpq (trellis::postgres)
  postgresql                # a throw-away server for the PostgreSQL tests (pg_virtualenv)
  libssl-dev                # libcrypto hashing (later layers)
  libpugixml-dev            # SCXML files: the trellis::scxml loader
  libcli11-dev              # the `trellis` command's argument parser (header-only)
  libyaml-cpp-dev           # graph files (YAML and JSON), trellis::flow
  libcpp-httplib-dev        # the operator console's HTTP server (trellis serve, trellis::web)
  chromium chromium-driver  # the console's browser tests (headless, driven by Selenium)
  python3-selenium          # ... their driver, for Debian's python3
  graphviz                  # `dot`: SVG pictures (trellis runs draw --format svg, examples)
  clang-format              # the style check in .ci/run
  faketime                  # the chaos suite's skewed-clock worker (libfaketime)
)

say() { printf '==> %s\n' "$*"; }

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  say "deps: all ${#packages[@]} Debian packages already installed"
  exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "deps: missing ${missing[*]}, and there is no apt-get (trellis targets Debian 12)" >&2
  exit 1
fi
sudo=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then sudo=(sudo); else
    echo "deps: missing ${missing[*]}; run as root (or install sudo)" >&2
    exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive

apt_install() {
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y --no-install-recommends "${missing[@]}"
}

say "deps: installing ${missing[*]}"
# Refresh the package lists first only when there are none or they lack a missing package;
# otherwise try with the lists we have and refresh only if that fails (stale lists).
need_update=0
if ! compgen -G '/var/lib/apt/lists/*_Packages*' >/dev/null; then
  need_update=1
else
  for p in "${missing[@]}"; do
    if ! apt-cache show "$p" >/dev/null 2>&1; then need_update=1; break; fi
  done
fi
if [ $need_update -eq 1 ]; then
  say "deps: apt-get update"
  "${sudo[@]}" apt-get update
  apt_install
elif ! apt_install; then
  say "deps: install failed with the current package lists; apt-get update and retry"
  "${sudo[@]}" apt-get update
  apt_install
fi
say "deps: done"
