#!/usr/bin/env bash
# Checks examples/media_player's durable mode on a fresh temporary sidecar (run by ctest): the
# first run leaves the buffering timer pending; 0.6 s later (past its 500 ms) a second run
# resumes there and the timer fires once at open; a third run fires nothing more.
set -euo pipefail
bin=$1
dir=$(mktemp -d "${TMPDIR:-/tmp}/media_player.XXXXXX")
trap 'rm -rf "$dir"' EXIT
sidecar=$dir/player.json

expect() {
  if [[ "$1" != "$2" ]]; then
    printf 'FAIL: expected\n%s\ngot\n%s\n' "$2" "$1"
    exit 1
  fi
}
expect "$("$bin" --durable "$sidecar")" "started: buffering muted, 1 delayed send(s) pending"
sleep 0.6
expect "$("$bin" --durable "$sidecar")" $'resumed: streaming muted after 1 delayed send(s) fired at open\ndone'
expect "$("$bin" --durable "$sidecar")" $'resumed: streaming muted after 0 delayed send(s) fired at open\ndone'
echo "media_player durable: ok"
