#!/bin/sh
# build-old: build lockd as it was at a commit of this repository's own
# history, into a directory of its own, without touching the work tree, and
# print the path of the lockd binary (the only line on stdout). The
# rolling-upgrade tests run it beside this build (LOCKD_OLD: .ci/run,
# README "Upgrading").
#
# usage: sh scripts/build-old.sh [COMMIT [DIR]]
#   COMMIT  default: the one .ci/upgrade-from names
#   DIR     default: a new directory under ${TMPDIR:-/tmp}; an existing DIR
#           must be empty, or hold a build of that same commit (reused)
#
# The default commit is the build users run today, the last one that
# landed: a rolling upgrade meets the masters as that build left them, so
# that is the build the new one must agree with. Move .ci/upgrade-from on
# when a new build lands (then it is the new "today").
#
# The tree comes from `git archive` (nothing is checked out here, no
# worktree is registered), and only the lockd target is made (autoreconf,
# configure without -Werror, which an older tree need not pass with a
# newer compiler, make lockd). The build's output goes to DIR/build.log;
# its tail is printed when it fails. A commit that is not in the history
# (a shallow clone, a commit of another repository) fails at once, saying
# so.
set -eu
me=build-old.sh
top=$(cd "$(dirname "$0")/.." && pwd)
die() {
	echo "$me: $*" >&2
	exit 1
}

commit=${1:-}
if [ -z "$commit" ]; then
	[ -r "$top/.ci/upgrade-from" ] || die "no COMMIT given and no $top/.ci/upgrade-from"
	commit=$(sed -n '1{s/[[:space:]]//g;p;}' "$top/.ci/upgrade-from")
	[ -n "$commit" ] || die "$top/.ci/upgrade-from is empty"
fi
if ! err=$(git -C "$top" rev-parse --git-dir 2>&1 >/dev/null); then
	die "$top: no git history to build from (a release tarball has none): $err"
fi
full=$(git -C "$top" rev-parse --verify --quiet "$commit^{commit}" || true)
if [ -z "$full" ]; then
	if [ "$(git -C "$top" rev-parse --is-shallow-repository 2>/dev/null)" = true ]; then
		die "commit $commit is not in the history of $top: a shallow clone" \
			"(git -C $top fetch --unshallow, or clone without --depth)"
	fi
	die "commit $commit is not in the history of $top"
fi

dir=${2:-}
if [ -z "$dir" ]; then
	dir=$(mktemp -d "${TMPDIR:-/tmp}/lockd-old.XXXXXX")
fi
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
if [ -x "$dir/lockd" ] && [ "$(cat "$dir/.commit" 2>/dev/null)" = "$full" ]; then
	echo "$me: $dir/lockd is already the build of $full" >&2
	echo "$dir/lockd"
	exit 0
fi
[ -z "$(ls -A "$dir")" ] || die "$dir is not empty (and holds no build of $full)"

log=$dir/build.log
echo "$me: building lockd at $full in $dir (log: $log)" >&2
git -C "$top" archive --format=tar "$full" | tar -x -C "$dir" ||
	die "git archive $full failed"
if ! (
	cd "$dir" &&
		autoreconf -fi &&
		./configure --disable-werror &&
		make -j2 lockd
) >"$log" 2>&1; then
	tail -40 "$log" >&2
	die "building lockd at $full failed (the whole log: $log)"
fi
[ -x "$dir/lockd" ] || die "make lockd at $full made no $dir/lockd"
echo "$full" >"$dir/.commit"
echo "$dir/lockd"
