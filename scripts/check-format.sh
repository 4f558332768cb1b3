#!/usr/bin/env bash
# check-format: every C file of the tree is as .clang-format formats it,
# with the clang-format that CI pins (Debian 12's, version 14): another
# version formats some constructs differently, so it is not asked. Skipped
# (exit 77, as automake's test driver counts it) without that version.
# Fix a failure with: clang-format -i $(git ls-files '*.c' '*.h')
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
want=14
cf=$(command -v "clang-format-$want" || command -v clang-format || true)
if [ -z "$cf" ]; then
	echo "check-format: SKIP: no clang-format (apt-get install clang-format, version $want)"
	exit 77
fi
ver=$("$cf" --version | sed -n 's/.*version \([0-9]*\)\..*/\1/p')
if [ "$ver" != "$want" ]; then
	echo "check-format: SKIP: $cf is version $ver, the pinned one is $want"
	exit 77
fi
cd "$top" || exit 1
files=$(find src lib tools tests -name '*.[ch]' | sort)
bad=0
for f in $files; do
	if ! "$cf" --style=file --dry-run --Werror "$f" >/dev/null 2>&1; then
		echo "check-format: $f is not formatted (clang-format -i $f)"
		bad=$((bad + 1))
	fi
done
[ "$bad" -eq 0 ] || { echo "check-format: $bad file(s) to format"; exit 1; }
echo "check-format: $(echo "$files" | wc -l) files formatted as .clang-format says"
