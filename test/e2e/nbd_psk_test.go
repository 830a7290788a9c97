package e2e

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestNBDPSK: a tenant's volume is exported over STARTTLS with TLS 1.3
// PSK to the real GnuTLS clients (qemu-img/qemu-io's tls-creds-psk,
// nbdinfo/nbdcopy's tls-psk-file) holding the owner's key. Another
// tenant's key, a wrong key for the owner's name, a revoked key and a
// TLS 1.2-only client are refused; plain NBD works on loopback for a
// tenant that allows it on a server started with
// --nbd-allow-plain-loopback, and after a restart with the default
// (TLS required) a client that skips TLS is refused.
func TestNBDPSK(t *testing.T) {
	data := t.TempDir()
	token := "e2e-admin-" + randHex(16)
	srv := startBlockServer(t, data, token)
	srv.createPlainTenant(t, "acme")
	srv.createTenant(t, "bob")
	srv.mustCtl(t, "pool", "create", "p", "--dir", filepath.Join(data, "pool"), "--capacity", "1GiB", "--usage", "best-effort")
	srv.mustCtl(t, "volume", "create", "acme-vol", "--tenant", "acme", "--size", "32MiB", "--class", "best-effort")
	srv.mustCtl(t, "volume", "create", "bob-vol", "--tenant", "bob", "--size", "16MiB", "--class", "best-effort")

	keys := t.TempDir()
	acme, bob := filepath.Join(keys, "acme.psk"), filepath.Join(keys, "bob.psk")
	srv.mustCtl(t, "volume", "client-psk", "acme", "--file", acme)
	srv.mustCtl(t, "volume", "client-psk", "bob", "--file", bob)
	if _, err := srv.ctl(t, "volume", "client-psk", "nobody", "--file", filepath.Join(keys, "x")); err == nil {
		t.Error("a PSK was created for a tenant that does not exist")
	}
	line, err := os.ReadFile(acme)
	if err != nil {
		t.Fatal(err)
	}
	if id, key, ok := strings.Cut(strings.TrimSpace(string(line)), ":"); !ok || id != "acme" || len(key) != 64 {
		t.Fatalf("PSK file is not identity:hexkey: %q", line)
	}
	wrong := filepath.Join(keys, "wrong.psk")
	wk := make([]byte, 32)
	rand.Read(wk)
	if err := os.WriteFile(wrong, []byte("acme:"+hex.EncodeToString(wk)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	nbds := func(user, volume, pskFile string) string {
		return "nbds://" + user + "@" + srv.nbdAddr + "/" + volume + "?tls-psk-file=" + pskFile
	}
	host, port, _ := strings.Cut(srv.nbdAddr, ":")
	// qemu reads DIR/keys.psk.
	qemuDir := func(pskFile string) string {
		dir := t.TempDir()
		b, err := os.ReadFile(pskFile)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "keys.psk"), b, 0o600); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	qemuPSK := func(dir, user, volume, priority string, nbdPort string) []string {
		obj := "tls-creds-psk,id=tls0,endpoint=client,dir=" + dir + ",username=" + user
		if priority != "" {
			obj += ",priority=" + priority
		}
		return []string{"--object", obj, "--image-opts", "driver=nbd,host=" + host + ",port=" + nbdPort + ",export=" + volume + ",tls-creds=tls0"}
	}
	acmeDir, bobDir, wrongDir := qemuDir(acme), qemuDir(bob), qemuDir(wrong)

	t.Run("owner", func(t *testing.T) {
		out := run(t, "nbdinfo", nbds("acme", "acme-vol", acme))
		if !strings.Contains(out, "with TLS") || !strings.Contains(out, "export-size: 33554432") {
			t.Fatalf("nbdinfo as the owner:\n%s", out)
		}
		q := qemuPSK(acmeDir, "acme", "acme-vol", "", port)
		run(t, "qemu-io", q[0], q[1], "-c", "write -P 0x42 24M 1M", "-c", "read -P 0x42 24M 1M", q[2], q[3])
		// nbdcopy in over PSK, out again in plain over loopback.
		src, back := filepath.Join(t.TempDir(), "src"), filepath.Join(t.TempDir(), "back")
		img := make([]byte, 8<<20)
		rand.Read(img)
		if err := os.WriteFile(src, img, 0o600); err != nil {
			t.Fatal(err)
		}
		run(t, "nbdcopy", src, nbds("acme", "acme-vol", acme))
		run(t, "nbdcopy", srv.uri("acme-vol"), back)
		got, err := os.ReadFile(back)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 32<<20 || !bytes.Equal(got[:8<<20], img) || !allBytes(got[8<<20:24<<20], 0) || !allBytes(got[24<<20:25<<20], 0x42) {
			t.Fatal("nbdcopy round trip over TLS-PSK changed the data")
		}
	})

	t.Run("GnuTLS variants", func(t *testing.T) {
		// Real GnuTLS with priority strings: psk_ke without (EC)DHE, a
		// P-256 share, a secp384r1 share first (the server answers with
		// a HelloRetryRequest for P-256), ChaCha20-Poly1305 all connect.
		for _, prio := range []string{"NORMAL:-KX-ALL:+PSK", "NORMAL:+ECDHE-PSK:-GROUP-ALL:+GROUP-SECP256R1",
			"NORMAL:-GROUP-ALL:+GROUP-SECP384R1:+GROUP-SECP256R1", "NORMAL:+ECDHE-PSK:-CIPHER-ALL:+CHACHA20-POLY1305"} {
			run(t, "qemu-img", append([]string{"info"}, qemuPSK(acmeDir, "acme", "acme-vol", prio, port)...)...)
		}
		// TLS 1.2 PSK is not served.
		if out, err := runErr("qemu-img", append([]string{"info"}, qemuPSK(acmeDir, "acme", "acme-vol", "NORMAL:-VERS-TLS1.3:+PSK:+ECDHE-PSK", port)...)...); err == nil {
			t.Fatalf("a TLS 1.2-only client connected:\n%s", out)
		}
	})

	t.Run("others refused", func(t *testing.T) {
		// Bob's key authenticates bob, who does not own acme-vol.
		if out, err := runErr("nbdinfo", nbds("bob", "acme-vol", bob)); err == nil {
			t.Fatalf("another tenant's key opened the volume:\n%s", out)
		}
		if out := run(t, "nbdinfo", "--list", "nbds://bob@"+srv.nbdAddr+"/?tls-psk-file="+bob); strings.Contains(out, "acme-vol") || !strings.Contains(out, "bob-vol") {
			t.Fatalf("bob's listing:\n%s", out)
		}
		if out, err := runErr("qemu-img", append([]string{"info"}, qemuPSK(bobDir, "bob", "acme-vol", "", port)...)...); err == nil {
			t.Fatalf("qemu-img with another tenant's key:\n%s", out)
		}
		// A wrong key under the owner's name fails the handshake.
		if out, err := runErr("nbdinfo", nbds("acme", "acme-vol", wrong)); err == nil || !strings.Contains(out, "TLS") {
			t.Fatalf("a wrong key for acme: %v\n%s", err, out)
		}
		if out, err := runErr("qemu-io", append(qemuPSK(wrongDir, "acme", "acme-vol", "", port)[:2], "-c", "read 0 4k", "--image-opts", qemuPSK(wrongDir, "acme", "acme-vol", "", port)[3])...); err == nil {
			t.Fatalf("qemu-io with a wrong key:\n%s", out)
		}
	})

	t.Run("revoke and replace", func(t *testing.T) {
		srv.mustCtl(t, "volume", "revoke-psk", "bob")
		if out, err := runErr("nbdinfo", "--list", "nbds://bob@"+srv.nbdAddr+"/?tls-psk-file="+bob); err == nil {
			t.Fatalf("a revoked key still connects:\n%s", out)
		}
		if _, err := srv.ctl(t, "volume", "revoke-psk", "bob"); err == nil {
			t.Error("revoking twice succeeded")
		}
		bob2 := filepath.Join(keys, "bob2.psk")
		srv.mustCtl(t, "volume", "client-psk", "bob", "--file", bob2)
		run(t, "nbdinfo", nbds("bob", "bob-vol", bob2))
	})

	// The default server: plain is refused, PSK works, and the data
	// written over PSK before the restart is there.
	nbdAddr := restartRequiringTLS(t, srv, data, token, "acme-vol")
	_, port2, _ := strings.Cut(nbdAddr, ":")
	q := qemuPSK(acmeDir, "acme", "acme-vol", "", port2)
	run(t, "qemu-io", q[0], q[1], "-c", "read -P 0x42 24M 1M", q[2], q[3])
}

// restartRequiringTLS stops srv and starts `facet serve` again on its
// data without --nbd-allow-plain-loopback (the default: every client
// must STARTTLS), and checks that a plain client is refused the volume
// with the protocol's "TLS required" although its tenant allows plain
// NBD. It returns the new NBD address.
func restartRequiringTLS(t *testing.T, srv *blockServer, data, token, volume string) string {
	t.Helper()
	srv.terminate(30 * time.Second)
	s2 := &server{t: t, dataDir: data, s3Addr: freeAddr(t), adminAddr: freeAddr(t), token: token, done: make(chan struct{})}
	nbdAddr := freeAddr(t)
	if err := s2.launch([]string{"serve", "--data", data, "--s3-addr", s2.s3Addr, "--admin-addr", s2.adminAddr,
		"--admin-token", token, "--nbd-addr", nbdAddr}, nil); err != nil {
		t.Fatal(err)
	}
	refusedPlain(t, "nbd://"+nbdAddr+"/"+volume)
	return nbdAddr
}

// refusedPlain checks that nbdinfo and qemu-img, in plain NBD, are
// refused uri with the server's "TLS required" (NBD_REP_ERR_TLS_REQD,
// which libnbd reports as "server requires TLS" and qemu as "TLS").
func refusedPlain(t *testing.T, uri string) {
	t.Helper()
	if out, err := runErr("nbdinfo", uri); err == nil || !strings.Contains(out, "TLS") {
		t.Fatalf("nbdinfo %s in plain NBD: %v, want a TLS-required refusal\n%s", uri, err, out)
	}
	if out, err := runErr("qemu-img", "info", "-f", "raw", uri); err == nil || !strings.Contains(out, "TLS") {
		t.Fatalf("qemu-img info %s in plain NBD: %v, want a TLS-required refusal\n%s", uri, err, out)
	}
}

// TestNBDPlainRefused: by default every NBD client must authenticate.
// A plain client from loopback is refused with the protocol's "TLS
// required" (nbdinfo, qemu-img), even for a tenant that allows plain
// NBD; the owner's PSK works (qemu-img, nbdcopy both ways). With
// --nbd-allow-plain-loopback, plain works only for the volumes of a
// tenant that allows it, is refused again when the tenant withdraws it,
// and another tenant's volume stays refused, in plain and with the
// other tenant's key.
func TestNBDPlainRefused(t *testing.T) {
	data := t.TempDir()
	token := "e2e-admin-" + randHex(16)
	srv := startBlockServerWith(t, data, token) // the default: TLS required
	srv.createTenant(t, "acme")
	srv.createTenant(t, "bob")
	srv.mustCtl(t, "pool", "create", "p", "--dir", filepath.Join(data, "pool"), "--capacity", "1GiB", "--usage", "best-effort")
	srv.mustCtl(t, "volume", "create", "acme-vol", "--tenant", "acme", "--size", "16MiB", "--class", "best-effort")
	srv.mustCtl(t, "volume", "create", "bob-vol", "--tenant", "bob", "--size", "16MiB", "--class", "best-effort")
	keys := t.TempDir()
	acme, bob := filepath.Join(keys, "acme.psk"), filepath.Join(keys, "bob.psk")
	srv.mustCtl(t, "volume", "client-psk", "acme", "--file", acme)
	srv.mustCtl(t, "volume", "client-psk", "bob", "--file", bob)

	refusedPlain(t, srv.uri("acme-vol"))
	// LIST gets NBD_REP_ERR_TLS_REQD too, which libnbd reports as
	// "Operation not supported".
	if out, err := runErr("nbdinfo", "--list", "nbd://"+srv.nbdAddr); err == nil || strings.Contains(out, "acme-vol") {
		t.Fatalf("plain listing: %v\n%s", err, out)
	}
	// The tenant's setting alone does not open plain NBD.
	srv.mustCtl(t, "tenant", "set", "acme", "--allow-plain-nbd")
	refusedPlain(t, srv.uri("acme-vol"))

	// The owner's PSK: qemu-img (DIR/keys.psk) and nbdcopy in and out.
	qdir := t.TempDir()
	b, err := os.ReadFile(acme)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(qdir, "keys.psk"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	host, port, _ := strings.Cut(srv.nbdAddr, ":")
	if out := run(t, "qemu-img", "info", "--object", "tls-creds-psk,id=tls0,endpoint=client,dir="+qdir+",username=acme",
		"--image-opts", "driver=nbd,host="+host+",port="+port+",export=acme-vol,tls-creds=tls0"); !strings.Contains(out, "16 MiB") {
		t.Fatalf("qemu-img info over PSK:\n%s", out)
	}
	psk := func(user, vol, file string) string {
		return "nbds://" + user + "@" + srv.nbdAddr + "/" + vol + "?tls-psk-file=" + file
	}
	src, back := filepath.Join(t.TempDir(), "src"), filepath.Join(t.TempDir(), "back")
	img := make([]byte, 16<<20)
	rand.Read(img)
	if err := os.WriteFile(src, img, 0o600); err != nil {
		t.Fatal(err)
	}
	run(t, "nbdcopy", "--flush", src, psk("acme", "acme-vol", acme))
	run(t, "nbdcopy", psk("acme", "acme-vol", acme), back)
	if got, err := os.ReadFile(back); err != nil || !bytes.Equal(got, img) {
		t.Fatalf("nbdcopy round trip over PSK: %v", err)
	}
	// Another tenant's key does not open acme's volume.
	if out, err := runErr("nbdinfo", psk("bob", "acme-vol", bob)); err == nil {
		t.Fatalf("bob's key opened acme-vol:\n%s", out)
	}

	// With the flag: plain for acme (who allows it), not for bob, nor
	// for a name that does not exist.
	srv.terminate(30 * time.Second)
	srv = startBlockServerWith(t, data, token, "--nbd-allow-plain-loopback")
	if out := run(t, "nbdinfo", srv.uri("acme-vol")); !strings.Contains(out, "export-size: 16777216") {
		t.Fatalf("plain nbdinfo for a tenant that allows it:\n%s", out)
	}
	run(t, "qemu-img", "compare", "-f", "raw", "-F", "raw", src, srv.uri("acme-vol"))
	refusedPlain(t, srv.uri("bob-vol"))
	refusedPlain(t, srv.uri("nosuch"))
	if out := run(t, "nbdinfo", "--list", "nbd://"+srv.nbdAddr); !strings.Contains(out, "acme-vol") || strings.Contains(out, "bob-vol") {
		t.Fatalf("plain listing shows other than the allowing tenant's volumes:\n%s", out)
	}
	// Withdrawn: refused at once.
	srv.mustCtl(t, "tenant", "set", "acme", "--allow-plain-nbd=false")
	refusedPlain(t, srv.uri("acme-vol"))
	var tn struct {
		AllowPlainNBD bool `json:"allow_plain_nbd"`
	}
	if err := json.Unmarshal(srv.mustCtl(t, "tenant", "get", "acme", "-o", "json"), &tn); err != nil || tn.AllowPlainNBD {
		t.Fatalf("tenant get after withdrawing: %+v %v", tn, err)
	}
	if _, err := srv.ctl(t, "tenant", "set", "acme"); err == nil {
		t.Error("tenant set with no setting succeeded")
	}
	if _, err := srv.ctl(t, "tenant", "set", "nobody", "--allow-plain-nbd"); err == nil {
		t.Error("tenant set on a tenant that does not exist succeeded")
	}
}
