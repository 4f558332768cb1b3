#!/bin/sh
# check-install.sh: install paths come from configure (run by "make check").
#
# Copies the distribution (make distdir) to a temporary directory,
# configures the copy with --prefix=/usr --sysconfdir=/etc, builds it and
# installs it into a DESTDIR, then fails when
#  - the systemd unit does not run /usr/sbin/lockd on a copy of
#    /etc/lockd.yml (LoadCredential=), or names /usr/local, or
#    systemd-analyze verify (when installed) finds fault with it against
#    the installed binary and manual pages;
#  - lockd.yml is not mode 0640, does not put its Unix socket in
#    /run/lockd, or the installed lockd -t refuses it;
#  - the manual pages do not name /etc/lockd.yml, /run/lockd and
#    /usr/lib/systemd/system/lockd.service;
#  - an installed text file still holds an @VARIABLE@, or names an
#    install directory under /usr/local;
#  - LICENSE is not installed;
#  - a second make install overwrites an edited lockd.yml, or make
#    uninstall removes it (it removes one nobody edited, and all the rest).
# Runs as root or as any user: nothing is installed outside the DESTDIR.
# Exit status: 0 pass, 1 fail.
# Environment: top_builddir (default "."), MAKE (default make).

set -u

builddir=${top_builddir:-.}
make=${MAKE:-make}

nfail=0
fail() {
	printf 'FAIL: %s\n' "$*"
	nfail=$((nfail + 1))
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/check-install.XXXXXX") || exit 1
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM
abs_builddir=$(cd "$builddir" && pwd) || exit 1
src=$tmp/src
dest=$tmp/dest

# The nested makes must not take the outer make's arguments (TESTS=...,
# -j with a job server they cannot reach).
unset MAKEFLAGS MFLAGS MAKEOVERRIDES MAKELEVEL

# Run a command quietly; on failure show the end of what it printed.
run() { # log command...
	log=$1
	shift
	if ! "$@" >"$log" 2>&1; then
		printf 'FAIL: %s\n' "$*"
		tail -40 "$log" | sed 's/^/    /'
		exit 1
	fi
}

run "$tmp/distdir.log" $make -C "$abs_builddir" distdir distdir="$src"
cd "$src" || exit 1
run "$tmp/configure.log" ./configure --prefix=/usr --sysconfdir=/etc
run "$tmp/install.log" $make -j2 install DESTDIR="$dest"

# --- what make install put there
lockd=$dest/usr/sbin/lockd
conf=$dest/etc/lockd.yml
unit=$(find "$dest" -name lockd.service -type f)
[ -x "$lockd" ] || fail "no $lockd"
case $unit in
"$dest"/usr/lib/systemd/system/lockd.service | "$dest"/lib/systemd/system/lockd.service) ;;
*) fail "the unit is at '$unit', not under $dest/usr/lib/systemd/system" ;;
esac
[ -f "$unit" ] || unit=/nonexistent

# The unit: the binary and the configuration as configured.
grep -Fqx 'ExecStart=/usr/sbin/lockd -c ${CREDENTIALS_DIRECTORY}/lockd.yml' "$unit" ||
	fail "the unit has no 'ExecStart=/usr/sbin/lockd -c \${CREDENTIALS_DIRECTORY}/lockd.yml'"
grep -Fqx 'LoadCredential=lockd.yml:/etc/lockd.yml' "$unit" ||
	fail "the unit has no 'LoadCredential=lockd.yml:/etc/lockd.yml'"
grep -Fqx '#LoadCredential=lockd-password:/etc/lockd-password' "$unit" ||
	fail "the unit does not show the password credential (commented out)"

# The configuration: private, its socket where the unit's RuntimeDirectory is.
if [ -f "$conf" ]; then
	mode=$(stat -c %a "$conf")
	[ "$mode" = 640 ] || fail "$conf has mode $mode, not 640"
	grep -Fq '"unix:/run/lockd/lockd.sock"' "$conf" ||
		fail "$conf does not listen on unix:/run/lockd/lockd.sock"
	grep -Fq 'lockd -t -c /etc/lockd.yml' "$conf" ||
		fail "$conf does not say 'lockd -t -c /etc/lockd.yml'"
	if [ -x "$lockd" ] && ! "$lockd" -t -c "$conf" >"$tmp/t.out" 2>&1; then
		fail "the installed lockd -t refuses $conf: $(cat "$tmp/t.out")"
	fi
else
	fail "no $conf"
fi

# The manual pages.
man5=$dest/usr/share/man/man5/lockd.conf.5
man8=$dest/usr/share/man/man8/lockd.8
for page in "$man5" "$man8" "$dest/usr/share/man/man7/lockd-protocol.7" \
	"$dest/usr/share/man/man1/lockd-benchmark.1"; do
	[ -f "$page" ] || fail "no $page"
done
grep -Fq '/etc/lockd.yml' "$man5" 2>/dev/null || fail "lockd.conf(5) does not name /etc/lockd.yml"
for want in /etc/lockd.yml /run/lockd/lockd.sock /usr/lib/systemd/system/lockd.service; do
	grep -Fq "$want" "$man8" 2>/dev/null || fail "lockd(8) does not name $want"
done

# No placeholder and no /usr/local anywhere in what was installed as text.
find "$dest" -type f >"$tmp/files"
while IFS= read -r f; do
	case $f in
	*.so* | *.a | *.la | "$dest"/usr/bin/* | "$dest"/usr/sbin/*) continue ;;
	esac
	if grep -Eq '@[A-Za-z_]+@' "$f"; then
		fail "$f still holds $(grep -Eo '@[A-Za-z_]+@' "$f" | sort -u | tr '\n' ' ')"
	fi
	# (a user's own /usr/local/bin/script in an example is fine)
	if grep -Eq '/usr/local/(s?bin/lock|etc|lib/systemd|share/(man|doc))' "$f"; then
		fail "$f names $(grep -Eo '/usr/local/(s?bin/lock|etc|lib/systemd|share/(man|doc))[^ ]*' "$f" | sort -u | tr '\n' ' ')"
	fi
done <"$tmp/files"

# The licence.
if [ -f "$dest/usr/share/doc/lockd/LICENSE" ]; then
	grep -Fq 'Copyright (c) 2026, the lockd authors' "$dest/usr/share/doc/lockd/LICENSE" ||
		fail "the installed LICENSE lacks the copyright line"
else
	fail "LICENSE is not installed in /usr/share/doc/lockd"
fi

# systemd-analyze verify: the unit's syntax, that ExecStart= names an
# executable and that its Documentation= pages exist, on a copy whose
# ExecStart= points at the binary installed in the DESTDIR.
if command -v systemd-analyze >/dev/null 2>&1 && [ -f "$unit" ]; then
	mkdir -p "$tmp/verify"
	sed "s|^ExecStart=/usr/sbin/lockd |ExecStart=$lockd |" "$unit" >"$tmp/verify/lockd.service"
	if ! MANPATH=$dest/usr/share/man systemd-analyze verify "$tmp/verify/lockd.service" \
		>"$tmp/verify.out" 2>&1 || grep -q lockd.service "$tmp/verify.out"; then
		fail "systemd-analyze verify finds fault with the unit:"
		sed 's/^/    /' "$tmp/verify.out"
	fi
else
	printf 'NOTE: systemd-analyze is not installed: the unit is not verified\n'
fi

# --- installing again keeps the operator's configuration
if [ -f "$conf" ]; then
	printf '# edited by check-install\n' >>"$conf"
	run "$tmp/install2.log" $make install DESTDIR="$dest"
	grep -Fqx '# edited by check-install' "$conf" || fail "a second make install overwrote $conf"
	grep -Fq 'exists: kept' "$tmp/install2.log" || fail "make install did not say it kept $conf"
	[ "$(stat -c %a "$conf")" = 640 ] || fail "$conf lost its mode 0640"

	# uninstall keeps it while edited, removes it and the rest otherwise
	run "$tmp/uninstall.log" $make uninstall DESTDIR="$dest"
	[ -f "$conf" ] || fail "make uninstall removed the edited $conf"
	[ -e "$lockd" ] && fail "make uninstall left $lockd"
	cp conf/lockd.yml "$conf"
	run "$tmp/uninstall2.log" $make uninstall DESTDIR="$dest"
	[ -e "$conf" ] && fail "make uninstall left $conf, which nobody edited"
	find "$dest" -type f >"$tmp/left"
	if [ -s "$tmp/left" ]; then
		fail "make uninstall left files:"
		sed 's/^/    /' "$tmp/left"
	fi
fi

if [ "$nfail" -ne 0 ]; then
	printf '%d problem(s) found\n' "$nfail"
	exit 1
fi
printf 'make install with --prefix=/usr --sysconfdir=/etc: the unit runs /usr/sbin/lockd on /etc/lockd.yml, lockd.yml is 0640 and kept\n'
exit 0
