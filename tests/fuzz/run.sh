#!/usr/bin/env bash
# Fuzz the request parser, the config loader and liblockd's reply parser
# (lib/reply.c) with libFuzzer (clang, Debian's libclang-rt-14-dev), each
# for SECONDS_EACH. Not part of make check. Usage, from the top of a
# configured tree: tests/fuzz/run.sh [SECONDS_EACH]   (default 60)
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-60}
out=$(mktemp -d /tmp/lockd-fuzz.XXXXXX)
flags="-g -O1 -fsanitize=fuzzer,address,undefined -I. -Isrc -D_GNU_SOURCE -DHAVE_CONFIG_H"
clang $flags tests/fuzz/fuzz_proto.c src/proto.c src/util.c -o "$out/fuzz_proto"
clang $flags tests/fuzz/fuzz_cfg.c src/cfg.c src/cfg_yaml.c src/cfg_listen.c src/cfg_sentinel.c src/util.c src/log.c -lyaml -o "$out/fuzz_cfg"
clang $flags -Ilib tests/fuzz/fuzz_reply.c lib/reply.c src/proto.c src/util.c -o "$out/fuzz_reply"
mkdir -p "$out/c_proto" "$out/c_cfg" "$out/c_reply"
printf 'LOCK k WAIT 10 TTL 5\r' >"$out/c_proto/1"
printf 'TRYLOCK key TTL 1\n' >"$out/c_proto/2"
printf 'SESSION GRACE 10000\r' >"$out/c_proto/3"
printf 'RESUME 48fe70572e04ccea 0123456789abcdef0123456789abcdef' >"$out/c_proto/4"
printf 'session\tgrace 1 ' >"$out/c_proto/5"
printf 'resume a b c' >"$out/c_proto/6"
printf 'WHO nightly-report\r' >"$out/c_proto/7"
printf 'who\tk x' >"$out/c_proto/8"
printf 'LOCKALL 3 b a c WAIT 10 TTL 5 DELAY 0\r' >"$out/c_proto/9"
printf 'lockall 2 WAIT wait\tdelay 1' >"$out/c_proto/10"
printf 'LOCKALL 5 a b c d e' >"$out/c_proto/11"
printf 'LOCK k PERMITS 3 WAIT 1 TTL 2 DELAY 4\r' >"$out/c_proto/12"
printf 'campaign e v delay 0 wait 5' >"$out/c_proto/13"
printf 'TRYLOCK k SHARED DELAY 2147483648' >"$out/c_proto/14"
cp conf/lockd.yml "$out/c_cfg/1"
printf '\001KEY a 1 1 100\r\nLOST a 7\r\nEND\r\nERR QUORUM x\r\n' >"$out/c_reply/1"
printf 'OK 41\r\nHELD 29998 0\r\nPONG w\r\nnightly-report' >"$out/c_reply/2"
printf 'OK 41 7 1795904046146593\r\nTIMEOUT\r\n' >"$out/c_reply/4"
printf 'HOLDER 41 permit=0/3 lockd=db7:7390 client=- session=- held_ms=5\r\nEND\r\n' >"$out/c_reply/3"
printf 'DELAYED 1400 41\r\nEND\r\nHELD 1399 2\r\n' >"$out/c_reply/4"
"$out/fuzz_proto" -max_total_time="$secs" -max_len=256 "$out/c_proto" 2>&1 | tail -3
"$out/fuzz_cfg" -max_total_time="$secs" -max_len=4096 "$out/c_cfg" 2>&1 | tail -3
"$out/fuzz_reply" -max_total_time="$secs" -max_len=256 "$out/c_reply" 2>&1 | tail -3
rm -rf "$out"
