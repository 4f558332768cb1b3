#!/usr/bin/env bash
# bench/peers.sh: the peer comparison, now bench/peers/run.sh (kept so that
# older notes still run). Usage: bench/peers.sh [DURATION_MS]
exec "$(dirname "$0")/peers/run.sh" "$@"
