#!/usr/bin/env bash
# build.sh [OUT]: compile the lockd Java client (JDK 17, no dependencies)
# into OUT/classes and package OUT/lockd-client.jar (OUT defaults to build).
set -euo pipefail
cd "$(dirname "$0")"
out=${1:-build}
rm -rf "$out/classes"
mkdir -p "$out/classes"
javac --release 17 -Xlint:all -Werror -d "$out/classes" $(find src/main/java -name '*.java')
jar --create --file "$out/lockd-client.jar" -C "$out/classes" .
echo "built $out/lockd-client.jar"
