#!/usr/bin/env bash
# run-tests.sh: build and run the Go client's whole suite against the real
# parts of ../testenv.sh (three redis-server masters, two lockd). Needs the
# built lockd at the top of the tree (../../lockd) and Debian's golang-go.
# The environment is started here and stopped by a trap, so nothing is left
# running even when the test binary dies (a panic or a timeout skips its
# deferred calls).
set -euo pipefail
cd "$(dirname "$0")"
export GOPROXY=off GOFLAGS= GO111MODULE=on
tmp=$(mktemp -d)
env_dir=$tmp/env
trap 'bash ../testenv.sh stop "$env_dir" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
# A writable build cache even when HOME is not writable (CI users).
if ! { [ -n "${HOME:-}" ] && [ -w "$HOME" ]; }; then
	export GOCACHE=$tmp/cache GOPATH=$tmp/gopath
fi
go vet ./...
test -z "$(gofmt -l .)" || { gofmt -l . >&2; echo "gofmt: files above need formatting" >&2; exit 1; }
go build ./...
bash ../testenv.sh start "$env_dir"
LOCKD_TESTENV_DIR=$env_dir timeout 150 go test -count=1 -timeout 140s -v ./...
