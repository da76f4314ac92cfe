#!/usr/bin/env bash
# Formats trellis's C++ with the checked-in .clang-format; with --check, changes nothing and
# fails if any file is not formatted (what .ci/run does).
set -euo pipefail
cd "$(dirname "$0")/.."

dirs=()
for d in include src tests bench examples; do [ -d "$d" ] && dirs+=("$d"); done
mapfile -t files < <(find "${dirs[@]}" -type f \( -name '*.hpp' -o -name '*.cpp' \) | sort)
if [ ${#files[@]} -eq 0 ]; then
  echo "format: no C++ files"
  exit 0
fi

if [ "${1:-}" = "--check" ]; then
  echo "format: checking ${#files[@]} files with $(clang-format --version)"
  clang-format --dry-run --Werror "${files[@]}"
  echo "format: all ${#files[@]} files follow .clang-format"
else
  clang-format -i "${files[@]}"
  echo "format: formatted ${#files[@]} files"
fi
