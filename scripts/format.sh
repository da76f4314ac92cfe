#!/usr/bin/env bash
# Formats trellis's C++ with the checked-in .clang-format; with --check, changes nothing and
# fails if any file is not formatted (what .ci/run does). Given files (or directories), only
# those: `scripts/format.sh src/statechart/instance.cpp`, `scripts/format.sh --check tests`.
set -euo pipefail
cd "$(dirname "$0")/.."

check=false
if [ "${1:-}" = "--check" ]; then
  check=true
  shift
fi
paths=("$@")
if [ ${#paths[@]} -eq 0 ]; then
  for d in include src tests bench examples; do [ -d "$d" ] && paths+=("$d"); done
fi
mapfile -t files < <(find "${paths[@]}" -type f \( -name '*.hpp' -o -name '*.cpp' \) | sort)
if [ ${#files[@]} -eq 0 ]; then
  echo "format: no C++ files"
  exit 0
fi

if $check; then
  echo "format: checking ${#files[@]} files with $(clang-format --version)"
  clang-format --dry-run --Werror "${files[@]}"
  echo "format: all ${#files[@]} files follow .clang-format"
else
  clang-format -i "${files[@]}"
  echo "format: formatted ${#files[@]} files"
fi
