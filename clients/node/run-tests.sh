#!/usr/bin/env bash
# run-tests.sh: the Node client's whole suite (node:test): the WHO reply
# parser on canned lines (test/who.test.mjs), and the rest against real
# masters and two real lockd (clients/testenv.sh, started and stopped by
# the suite's before/after hooks). Needs the built lockd at the top of the
# tree and node >= 18; no npm install. Exits non-zero on any failure.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
exec timeout 300 "${NODE:-node}" --test "$@" test/who.test.mjs test/lockd.test.mjs
