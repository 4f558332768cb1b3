package lockd

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestTLSAndPassword starts one more real lockd on the same masters with a
// TLS listener (a certificate made here) and a password, and checks that
// WithTLS and WithPassword work, and that a wrong password is an error.
func TestTLSAndPassword(t *testing.T) {
	dir := t.TempDir()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "lockd-test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:         true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	os.WriteFile(filepath.Join(dir, "cert.pem"), certPEM, 0o600)
	os.WriteFile(filepath.Join(dir, "key.pem"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	conf := fmt.Sprintf(`listen: [{address: "%s", tls: {cert: "%s/cert.pem", key: "%s/key.pem"}}]
password: "s3cret"
redis:
  masters: ["127.0.0.1:%s", "127.0.0.1:%s", "127.0.0.1:%s"]
  timeout_ms: 100
locks:
  lease_ms: 3000
`, addr, dir, dir, env["MASTER0"], env["MASTER1"], env["MASTER2"])
	os.WriteFile(filepath.Join(dir, "lockd.yml"), []byte(conf), 0o600)
	bin := os.Getenv("LOCKD_BIN")
	if bin == "" {
		bin = "../../lockd"
	}
	logf, _ := os.Create(filepath.Join(dir, "log"))
	defer logf.Close()
	cmd := exec.Command(bin, "-c", filepath.Join(dir, "lockd.yml"))
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })

	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	tc := &tls.Config{RootCAs: pool}
	var c *Client
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		c, err = Dial(ctx, addr, WithTLS(tc), WithPassword("s3cret"))
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(end) {
			b, _ := os.ReadFile(filepath.Join(dir, "log"))
			t.Fatalf("no TLS lockd: %v\n%s", err, b)
		}
	}
	defer c.Close()
	ctx := tctx(t, 10*time.Second)
	waitFor(t, 5*time.Second, func() bool {
		l, err := c.TryLock(ctx, "go-tls")
		if err == nil {
			l.Unlock(ctx)
		}
		return err == nil
	})
	l, err := c.Lock(ctx, "go-tls", Wait(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if s, err := dial(t, env["LOCKD_A"]).Status(ctx, "go-tls"); err != nil || s.State != "HELD" {
		t.Fatalf("a lock taken over TLS is not HELD on lockd A: %+v %v", s, err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := Dial(ctx, addr, WithTLS(tc), WithPassword("wrong")); !errors.Is(err, ErrAuth) {
		t.Fatalf("wrong password: %v, want ErrAuth", err)
	}
	if _, err := Dial(ctx, addr, WithTLS(&tls.Config{})); err == nil {
		t.Fatal("TLS with an unknown CA was accepted")
	}
}
