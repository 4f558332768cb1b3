package lockd

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Issue 29 item 4: a program outside the repository that follows the
// README (its go.mod with require + replace, its main.go) builds offline
// and runs against lockd A.
func TestModuleOutsideTree(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	gomod, main := readmeBlock(t, string(b), "module "), readmeBlock(t, string(b), "package main")
	here, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	const placeholder = "/path/to/lockd/clients/go"
	if !strings.Contains(gomod, placeholder) {
		t.Fatalf("the README's go.mod does not replace the module with %s", placeholder)
	}
	dir := t.TempDir()
	write := func(name, s string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", strings.ReplaceAll(gomod, placeholder, here))
	write("main.go", main)
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	run := func(name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOPROXY=off", "GOFLAGS=-mod=mod", "GOWORK=off", "GOSUMDB=off",
			"LOCKD_ADDR="+env["LOCKD_A"])
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s in %s: %v\n%s", name, strings.Join(args, " "), dir, err, out)
		}
		return string(out)
	}
	run(goBin, "mod", "tidy")
	run(goBin, "build", "-o", "prog", ".")
	out := run(filepath.Join(dir, "prog"))
	if !strings.HasPrefix(out, "locked nightly-report, fence ") {
		t.Fatalf("the README's program printed %q", out)
	}
}

// readmeBlock returns the first fenced code block of the README whose
// first line starts with prefix.
func readmeBlock(t *testing.T, readme, prefix string) string {
	t.Helper()
	parts := strings.Split(readme, "```")
	for i := 1; i < len(parts); i += 2 {
		_, body, _ := strings.Cut(parts[i], "\n") // drop the info string
		if strings.HasPrefix(body, prefix) {
			return body
		}
	}
	t.Fatalf("README.md has no code block starting with %q", prefix)
	return ""
}
