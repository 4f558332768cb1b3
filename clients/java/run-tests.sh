#!/usr/bin/env bash
# run-tests.sh: build the Java client and run its whole JUnit 5 suite
# against the real parts of ../testenv.sh (three redis-server masters, two
# lockd). Needs the built lockd at the top of the tree (../../lockd),
# default-jdk-headless and Debian's junit5. Exits non-zero on any failure.
# The environment is started here and stopped by a trap, so nothing is
# left running even when the JVM dies or is killed.
set -euo pipefail
cd "$(dirname "$0")"
junit=${JUNIT_CONSOLE:-/usr/share/java/junit-platform-console-standalone.jar}
[ -f "$junit" ] || { echo "no $junit (apt-get install junit5)" >&2; exit 1; }
tmp=$(mktemp -d)
env_dir=$tmp/env
trap 'bash ../testenv.sh stop "$env_dir" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
./build.sh "$tmp" >/dev/null
mkdir -p "$tmp/test"
javac --release 17 -Xlint:all,-try -Werror -d "$tmp/test" -cp "$tmp/classes:$junit" \
	$(find src/test/java -name '*.java')
bash ../testenv.sh start "$env_dir"
timeout 150 java -Dlockd.jar="$tmp/lockd-client.jar" -Dlockd.testenv=../testenv.sh -Dlockd.testenv.dir="$env_dir" -jar "$junit" \
	-cp "$tmp/classes:$tmp/test" --scan-class-path --disable-banner \
	--details=tree --disable-ansi-colors --fail-if-no-tests
