#!/usr/bin/env bash
# build.sh [OUT]: compile the lockd Java client (JDK 17, no dependencies)
# into OUT/classes and package OUT/lockd-client.jar (OUT defaults to build),
# whose manifest names its module for the module path (Automatic-Module-Name,
# the same as pom.xml's; PackagingTest checks both).
set -euo pipefail
cd "$(dirname "$0")"
out=${1:-build}
module=lockd
rm -rf "$out/classes"
mkdir -p "$out/classes"
javac --release 17 -Xlint:all -Werror -d "$out/classes" $(find src/main/java -name '*.java')
printf 'Automatic-Module-Name: %s\n' "$module" >"$out/MANIFEST.MF"
jar --create --file "$out/lockd-client.jar" --manifest "$out/MANIFEST.MF" -C "$out/classes" .
echo "built $out/lockd-client.jar"
