#!/usr/bin/env bash
# run-tests.sh: build the Java client and run its whole JUnit 5 suite
# against the real parts of ../testenv.sh (three redis-server masters, two
# lockd). Needs the built lockd at the top of the tree (../../lockd),
# default-jdk-headless and Debian's junit5. Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")"
junit=${JUNIT_CONSOLE:-/usr/share/java/junit-platform-console-standalone.jar}
[ -f "$junit" ] || { echo "no $junit (apt-get install junit5)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
./build.sh "$tmp" >/dev/null
mkdir -p "$tmp/test"
javac --release 17 -Xlint:all,-try -Werror -d "$tmp/test" -cp "$tmp/classes:$junit" \
	$(find src/test/java -name '*.java')
timeout 170 java -Dlockd.testenv=../testenv.sh -jar "$junit" \
	-cp "$tmp/classes:$tmp/test" --scan-class-path --disable-banner \
	--details=tree --disable-ansi-colors --fail-if-no-tests
