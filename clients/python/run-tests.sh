#!/usr/bin/env bash
# run-tests.sh: the Python client's whole suite against real masters and
# two real lockd (clients/testenv.sh, started and stopped by the pytest
# session fixture). Needs the built lockd at the top of the tree and
# Debian's python3-pytest. Exits non-zero on any failure.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
py=${PYTHON:-/usr/bin/python3}
export PYTHONPATH="$here${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONDONTWRITEBYTECODE=1
exec timeout 300 "$py" -m pytest -q -rs -p no:cacheprovider "$@" tests
