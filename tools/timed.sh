#!/usr/bin/env bash
# Setup's progress (Makefile): `tools/timed.sh WHAT COMMAND...` says what is being built, runs
# COMMAND, then says how long it took (or that it failed, with its exit status). A step still
# running prints a line every TIMED_EVERY seconds (default 30), so a long compile is visibly
# alive. `tools/timed.sh --since EPOCH WHAT` prints the time since EPOCH (the whole setup).
set -uo pipefail

elapsed() { local s=$(($(date +%s) - $1)); printf '%dm%02ds' $((s / 60)) $((s % 60)); }

if [ "${1:-}" = --since ]; then
  printf '== %s in %s\n' "$3" "$(elapsed "$2")"
  exit 0
fi
what=$1; shift
start=$(date +%s)
printf '== %s\n' "$what"
( trap 'kill "$nap" 2>/dev/null; exit 0' TERM  # its sleep goes too: nothing holds the output open
  while :; do
    sleep "${TIMED_EVERY:-30}" & nap=$!
    wait "$nap"
    printf '   ... %s: %s so far\n' "$what" "$(elapsed "$start")"
  done ) &
ticker=$!
"$@"
status=$?
kill "$ticker" 2>/dev/null
wait "$ticker" 2>/dev/null
if [ "$status" -eq 0 ]; then
  printf '   %s: done in %s\n' "$what" "$(elapsed "$start")"
else
  printf '   %s: FAILED (exit %d) after %s\n' "$what" "$status" "$(elapsed "$start")"
fi
exit "$status"
