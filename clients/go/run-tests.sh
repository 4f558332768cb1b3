#!/usr/bin/env bash
# run-tests.sh: build and run the Go client's whole suite against the real
# parts of ../testenv.sh (three redis-server masters, two lockd). Needs the
# built lockd at the top of the tree (../../lockd) and Debian's golang-go.
set -euo pipefail
cd "$(dirname "$0")"
export GOPROXY=off GOFLAGS= GO111MODULE=on
# A writable build cache even when HOME is not writable (CI users).
if ! { [ -n "${HOME:-}" ] && [ -w "$HOME" ]; }; then
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	export GOCACHE=$tmp/cache GOPATH=$tmp/gopath
fi
go vet ./...
test -z "$(gofmt -l .)" || { gofmt -l . >&2; echo "gofmt: files above need formatting" >&2; exit 1; }
go build ./...
timeout 150 go test -count=1 -v ./...
