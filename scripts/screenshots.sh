#!/usr/bin/env bash
# Copies the operator console's screenshots, written by the browser tests (ctest -L browser) to
# <build>/screenshots, into docs/images/ (the README shows them).
#   scripts/screenshots.sh [BUILD_DIR]   (default: build/test, what scripts/test.sh builds)
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build/test}"
shots="$build/screenshots"
for name in runs run inbox; do
  if [ ! -s "$shots/$name.png" ]; then
    echo "screenshots: no $shots/$name.png; run the browser tests first (ctest --test-dir $build -L browser)" >&2
    exit 1
  fi
done
mkdir -p docs/images
for name in runs run inbox; do
  cp "$shots/$name.png" "docs/images/console-$name.png"
done
echo "screenshots: docs/images/console-{runs,run,inbox}.png from $shots"
