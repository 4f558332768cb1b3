package lockd

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The suite runs against the real parts: clients/testenv.sh starts three
// redis-server masters and two lockd (A, B) on free ports; TestMain stops
// them whatever happens.
var env map[string]string
var envDir string

func testenv(args ...string) error {
	cmd := exec.Command("bash", append([]string{"../testenv.sh"}, args...)...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	return cmd.Run()
}

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	// run-tests.sh starts the environment itself (and stops it from a
	// trap, even when this process dies of a panic or a timeout, which
	// skips deferred calls); plain `go test` starts its own.
	dir := os.Getenv("LOCKD_TESTENV_DIR")
	if dir == "" {
		var err error
		dir, err = os.MkdirTemp("", "lockd-go-test-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		defer testenv("stop", dir)
		if err := testenv("start", dir); err != nil {
			fmt.Fprintln(os.Stderr, "testenv start:", err)
			return 1
		}
	}
	envDir = dir
	b, err := os.ReadFile(filepath.Join(dir, "env"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	env = map[string]string{}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			env[k] = v
		}
	}
	os.Setenv("LOCKD_ADDR", env["LOCKD_A"])
	return m.Run()
}

func dial(t *testing.T, addr string, opts ...Option) *Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, addr, opts...)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func tctx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// probe sends one line on a fresh raw connection and returns the reply.
func probe(t *testing.T, addr, line string) string {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(nc, "%s\r\n", line)
	s, err := bufio.NewReader(nc).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(s)
}

func need12(t *testing.T) {
	if strings.HasPrefix(probe(t, env["LOCKD_A"], "SESSION"), "ERR PROTOCOL") {
		t.Skip("lockd does not speak 1.2/1.3 yet (SESSION answered ERR PROTOCOL)")
	}
}

func need13(t *testing.T) {
	if strings.HasPrefix(probe(t, env["LOCKD_A"], "LEADER probe"), "ERR PROTOCOL") {
		t.Skip("lockd does not speak 1.2/1.3 yet (LEADER answered ERR PROTOCOL)")
	}
}

// waitHealthy polls until lockd A grants a probe lock again (after masters
// were stopped), at most 15 s.
func waitHealthy(t *testing.T) {
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if strings.HasPrefix(probe(t, env["LOCKD_A"], "TRYLOCK ~healthy TTL 100"), "OK") {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Errorf("lockd A grants nothing 15 s after the masters came back")
}
