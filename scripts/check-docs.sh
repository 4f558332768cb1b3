#!/bin/sh
# check-docs.sh: the documentation matches the daemon (run by "make check").
#
# Fails when
#  - a key printed by "lockd --config-keys" is not documented in
#    man/lockd.conf.5.in (by its full dotted name, as the first word of a
#    line, e.g. ".B redis.timeout_ms") or not present in conf/lockd.yml
#    (as "key:" in its section, or commented out as "#key:");
#  - a command printed by "lockd --commands" has no ".SS COMMAND" heading
#    in man/lockd-protocol.7.in, or is not mentioned in man/lockd.8.in;
#  - a field printed by "lockd --stats-fields" is not documented in
#    man/lockd-protocol.7.in (as the first word of a line, e.g. ".B pid");
#  - conf/lockd.yml or conf/demo.yml does not pass "lockd -t -c FILE";
#  - mandoc -T lint (or, without mandoc, groff -ww) reports a warning or
#    worse on a generated page $top_builddir/man/*.[1-9] (mandoc's STYLE
#    messages are not counted).
# Exit status: 0 pass, 1 fail, 77 skip (no lockd binary to ask).
# Environment: top_srcdir, top_builddir (default "."), LOCKD (default
# $top_builddir/lockd).

set -u

srcdir=${top_srcdir:-.}
builddir=${top_builddir:-.}
LOCKD=${LOCKD:-$builddir/lockd}

conf5=$srcdir/man/lockd.conf.5.in
proto7=$srcdir/man/lockd-protocol.7.in
lockd8=$srcdir/man/lockd.8.in
yml=$srcdir/conf/lockd.yml
demo=$srcdir/conf/demo.yml

nfail=0
fail() {
	printf 'FAIL: %s\n' "$*"
	nfail=$((nfail + 1))
}

if [ ! -x "$LOCKD" ]; then
	printf 'SKIP: %s is not built yet\n' "$LOCKD"
	exit 77
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/check-docs.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM

for f in "$conf5" "$proto7" "$lockd8" "$yml" "$demo"; do
	[ -r "$f" ] || fail "$f is missing"
done
[ "$nfail" -eq 0 ] || exit 1

# Ask the daemon for a list; fail if it cannot give one.
ask() { # option outfile
	if ! "$LOCKD" "$1" >"$2" 2>"$tmp/err"; then
		fail "\"$LOCKD $1\" failed: $(cat "$tmp/err")"
		: >"$2"
	elif [ ! -s "$2" ]; then
		fail "\"$LOCKD $1\" printed nothing"
	fi
}
ask --config-keys "$tmp/keys"
ask --commands "$tmp/commands"
ask --stats-fields "$tmp/fields"

# A page as plain words: font and other escapes removed.
plain() { # in.page out.txt
	sed -e 's/\\f[BIRP1-4]//g' -e 's/\\f([A-Z][A-Z]//g' -e 's/\\f\[[^]]*\]//g' \
		-e 's/\\&//g' -e 's/\\%//g' -e 's/\\-/-/g' -e 's/\\(dq/"/g' \
		-e 's/\\e/\\/g' "$1" >"$2"
}
plain "$conf5" "$tmp/conf5"
plain "$proto7" "$tmp/proto7"
plain "$lockd8" "$tmp/lockd8"

# The words that begin a line, after a macro name (".B word", ".TP", ...).
terms() { # in.txt out
	awk '{
		i = 1
		if (substr($1, 1, 1) == ".") i = 2
		w = $i
		gsub(/^"+|[",.;:]+$/, "", w)
		if (w != "") print w
	}' "$1" | sort -u >"$2"
}
terms "$tmp/conf5" "$tmp/conf5.terms"
terms "$tmp/proto7" "$tmp/proto7.terms"

# The ".SS" headings of the protocol page.
sed -n 's/^\.SS[ 	][ 	]*//p' "$tmp/proto7" | sed 's/^"//; s/"[ 	]*$//; s/[ 	]*$//' \
	>"$tmp/headings"

# The dotted keys of lockd.yml: "key:" lines, and "#key:" lines (a key
# shown commented out). A top-level key with no value opens a section.
awk '{
	s = $0; ind = 0
	while (substr(s, 1, 1) == " ") { s = substr(s, 2); ind++ }
	if (substr(s, 1, 1) == "#") s = substr(s, 2)
	if (s !~ /^[A-Za-z_][A-Za-z0-9_]*:/) next
	k = s; sub(/:.*/, "", k)
	v = s; sub(/^[^:]*:/, "", v); sub(/^[ \t]+/, "", v)
	if (ind == 0) {
		section = (v == "" || v ~ /^#/) ? k : ""
		print k
	} else if (section != "") {
		print section "." k
	}
}' "$yml" | sort -u >"$tmp/ymlkeys"

has_line() { # word file: the file has a line equal to word
	grep -Fxq -e "$1" "$2"
}

while IFS= read -r key; do
	[ -n "$key" ] || continue
	has_line "$key" "$tmp/conf5.terms" ||
		fail "config key $key is not documented in man/lockd.conf.5.in (want a line \".B $key\")"
	has_line "$key" "$tmp/ymlkeys" ||
		fail "config key $key is not in conf/lockd.yml"
done <"$tmp/keys"

while IFS= read -r cmd; do
	[ -n "$cmd" ] || continue
	has_line "$cmd" "$tmp/headings" ||
		fail "command $cmd has no \".SS $cmd\" heading in man/lockd-protocol.7.in"
	grep -Fqw -e "$cmd" "$tmp/lockd8" ||
		fail "command $cmd is not mentioned in man/lockd.8.in"
done <"$tmp/commands"

while IFS= read -r field; do
	[ -n "$field" ] || continue
	has_line "$field" "$tmp/proto7.terms" ||
		fail "STATS field $field is not documented in man/lockd-protocol.7.in (want a line \".B $field\")"
done <"$tmp/fields"

# The shipped configurations must load.
for f in "$yml" "$demo"; do
	if ! "$LOCKD" -t -c "$f" >"$tmp/out" 2>&1; then
		fail "\"lockd -t -c $f\" refuses it: $(cat "$tmp/out")"
	fi
done

# Lint the generated pages.
for name in lockd.8 lockd.conf.5 lockd-protocol.7; do
	[ -f "$builddir/man/$name" ] || fail "$builddir/man/$name was not generated (run configure)"
done
if command -v mandoc >/dev/null 2>&1; then
	linter="mandoc -T lint -W warning"
elif command -v groff >/dev/null 2>&1; then
	linter="groff -t -ww -z -man"
else
	linter=
	printf 'NOTE: neither mandoc nor groff is installed: pages not linted\n'
fi
if [ -n "$linter" ]; then
	for page in "$builddir"/man/*.[1-9]; do
		[ -f "$page" ] || continue
		# shellcheck disable=SC2086 # $linter is a command with options
		$linter "$page" >"$tmp/lint" 2>&1
		grep -v 'STYLE:' "$tmp/lint" >"$tmp/lint.bad"
		if [ -s "$tmp/lint.bad" ]; then
			fail "$linter $page reports:"
			sed 's/^/    /' "$tmp/lint.bad"
		fi
	done
fi

if [ "$nfail" -ne 0 ]; then
	printf '%d problem(s) found\n' "$nfail"
	exit 1
fi
printf 'documentation matches %s: %s keys, %s commands, %s STATS fields\n' "$LOCKD" \
	"$(wc -l <"$tmp/keys" | tr -d ' ')" "$(wc -l <"$tmp/commands" | tr -d ' ')" \
	"$(wc -l <"$tmp/fields" | tr -d ' ')"
exit 0
