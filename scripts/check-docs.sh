#!/bin/sh
# check-docs.sh: the documentation matches the daemon (run by "make check").
#
# Fails when
#  - a key printed by "lockd --config-keys" is not documented in
#    man/lockd.conf.5.in (by its full dotted name, as the first word of a
#    line, e.g. ".B redis.timeout_ms") or not present in conf/lockd.yml.in
#    (as "key:" in its section, or commented out as "#key:");
#  - a command printed by "lockd --commands" has no ".SS COMMAND" heading
#    in man/lockd-protocol.7.in, or is not mentioned in man/lockd.8.in;
#  - a field printed by "lockd --stats-fields" is not documented in
#    man/lockd-protocol.7.in (as the first word of a line, e.g. ".B pid");
#  - doc/protocol.md and lockd-protocol(7) disagree (doc/protocol.md is the
#    protocol in the project's words, the page says the same to users):
#    - their protocol versions differ (the title "# The lockd protocol,
#      version N" against the page's NAME line "..., version N");
#    - the "### COMMAND" headings under "## Commands" in doc/protocol.md
#      are not exactly the commands of "lockd --commands";
#    - the "- `name`: ..." items under "### STATS" in doc/protocol.md are
#      not exactly the fields of "lockd --stats-fields";
#    - the error codes are not exactly $codes below, both as the
#      "- `CODE`: ..." items under "## Errors" in doc/protocol.md and as
#      the ".TP" terms ".B CODE" under ".SH ERRORS" in the page;
#    - a string in src/*.[ch] that starts with "ERR CODE" uses a CODE that
#      is not in $codes (a new error code must be documented first);
#  - conf/lockd.yml (as made from conf/lockd.yml.in) or conf/demo.yml does
#    not pass "lockd -t -c FILE";
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
protomd=$srcdir/doc/protocol.md
lockd8=$srcdir/man/lockd.8.in
yml=$srcdir/conf/lockd.yml.in
ymlmade=$builddir/conf/lockd.yml
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

# The error codes of protocol version 1 (ERR CODE text).
codes="PROTOCOL ARG KEY NOTHELD QUORUM LIMIT NOAUTH AUTH SHUTDOWN NOSESSION NOTLEADER"

for f in "$conf5" "$proto7" "$protomd" "$lockd8" "$yml" "$demo"; do
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
		fail "config key $key is not in conf/lockd.yml.in"
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

# doc/protocol.md against the daemon and the page.

# The lines of one section of a markdown file, from the line equal to
# the heading to the next heading of the same level or higher; lines in
# fenced code blocks (examples) are left out.
md_section() { # file heading out
	awk -v h="$2" '
		BEGIN { lv = index(h, " ") - 1 }
		/^```/ { fence = !fence; next }
		fence { next }
		/^#+ / {
			l = index($0, " ") - 1
			if (on && l <= lv) exit
			if ($0 == h) { on = 1; next }
		}
		on { print }
	' "$1" >"$3"
}
# The names of the "- `name`: ..." items of a section.
md_items() { # in out
	# shellcheck disable=SC2016 # the backquotes are markdown, not a command
	sed -n 's/^- `\([^`]*\)`.*/\1/p' "$1" | sort -u >"$2"
}
# The lines of one ".SH" section of a plain page.
man_section() { # in.txt NAME out
	awk -v h="$2" '
		/^\.SH[ 	]/ {
			t = $0; sub(/^\.SH[ 	]+/, "", t); gsub(/"/, "", t)
			on = (t == h); next
		}
		on { print }
	' "$1" >"$3"
}
# Two sorted lists must be equal; name the words of each side's excess.
same_set() { # want have what where
	comm -23 "$1" "$2" | while IFS= read -r w; do
		echo "$3 $w is missing from $4"
	done >"$tmp/diff"
	comm -13 "$1" "$2" | while IFS= read -r w; do
		echo "$4 documents $3 $w, which is not one"
	done >>"$tmp/diff"
	while IFS= read -r line; do fail "$line"; done <"$tmp/diff"
}

# Versions: the md's title, the page's NAME line.
mdver=$(sed -n '1s/^# The lockd protocol, version \([0-9][0-9.]*\)$/\1/p' "$protomd")
manver=$(sed -n 's/^lockd-protocol - the lockd client protocol, version \([0-9][0-9.]*\)$/\1/p' \
	"$tmp/proto7" | head -n 1)
if [ -z "$mdver" ]; then
	fail "doc/protocol.md does not begin with \"# The lockd protocol, version N\""
elif [ -z "$manver" ]; then
	fail "man/lockd-protocol.7.in has no NAME line \"lockd-protocol \\- the lockd client protocol, version N\""
elif [ "$mdver" != "$manver" ]; then
	fail "doc/protocol.md is protocol version $mdver, man/lockd-protocol.7.in version $manver"
fi

# Commands: one "### COMMAND" heading each, and no other.
md_section "$protomd" "## Commands" "$tmp/md.commands"
sed -n 's/^### \([^ ]*\)[ 	]*$/\1/p' "$tmp/md.commands" | sort -u >"$tmp/md.cmdheads"
sort -u "$tmp/commands" >"$tmp/commands.sorted"
same_set "$tmp/commands.sorted" "$tmp/md.cmdheads" "command" "doc/protocol.md (\"### COMMAND\" under \"## Commands\")"

# STATS fields: one "- `name`:" item each under "### STATS", and no other.
md_section "$protomd" "### STATS" "$tmp/md.stats"
md_items "$tmp/md.stats" "$tmp/md.fields"
sort -u "$tmp/fields" >"$tmp/fields.sorted"
same_set "$tmp/fields.sorted" "$tmp/md.fields" "STATS field" "doc/protocol.md (\"- \`name\`:\" under \"### STATS\")"

# Error codes: the same list in the md, in the page, and in the sources.
# shellcheck disable=SC2086 # $codes is a list of words
printf '%s\n' $codes | sort -u >"$tmp/codes"
md_section "$protomd" "## Errors" "$tmp/md.errors"
md_items "$tmp/md.errors" "$tmp/md.codes"
same_set "$tmp/codes" "$tmp/md.codes" "error code" "doc/protocol.md (\"- \`CODE\`:\" under \"## Errors\")"
man_section "$tmp/proto7" ERRORS "$tmp/man.errors"
awk 'prev ~ /^\.TP/ && $1 == ".B" { print $2 } { prev = $0 }' "$tmp/man.errors" |
	sort -u >"$tmp/man.codes"
same_set "$tmp/codes" "$tmp/man.codes" "error code" "man/lockd-protocol.7.in (\".TP\" \".B CODE\" under \".SH ERRORS\")"
# Replies the daemon writes, outside comments: "ERR CODE ... in a string.
for f in "$srcdir"/src/*.c "$srcdir"/src/*.h; do
	[ -f "$f" ] || continue
	grep -v '^[ 	]*/\{0,1\}\*' "$f" | grep -o '"ERR [A-Z][A-Z]*' | sed 's/^"ERR //'
done | sort -u >"$tmp/src.codes"
comm -23 "$tmp/src.codes" "$tmp/codes" | while IFS= read -r c; do
	echo "src/ answers ERR $c, which is not a documented error code"
done >"$tmp/diff"
while IFS= read -r line; do fail "$line"; done <"$tmp/diff"

# The shipped configurations must load.
[ -f "$ymlmade" ] || fail "$ymlmade was not made (run make)"
for f in "$ymlmade" "$demo"; do
	if ! "$LOCKD" -t -c "$f" >"$tmp/out" 2>&1; then
		fail "\"lockd -t -c $f\" refuses it: $(cat "$tmp/out")"
	fi
done

# Lint the generated pages.
for name in lockd.8 lockd.conf.5 lockd-protocol.7; do
	[ -f "$builddir/man/$name" ] || fail "$builddir/man/$name was not made (run make)"
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
printf 'documentation matches %s: %s keys, %s commands, %s STATS fields, %s error codes\n' \
	"$LOCKD" "$(wc -l <"$tmp/keys" | tr -d ' ')" "$(wc -l <"$tmp/commands" | tr -d ' ')" \
	"$(wc -l <"$tmp/fields" | tr -d ' ')" "$(wc -l <"$tmp/codes" | tr -d ' ')"
exit 0
