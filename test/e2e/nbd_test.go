package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"math/bits"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Block storage end to end, with the real NBD clients: qemu-img, qemu-io,
// nbdinfo, nbdcopy and fio's nbd engine.

// blockServer is `facet serve` with an NBD listener on a free port.
type blockServer struct {
	*server
	nbdAddr string
}

// startBlockServer starts a server that accepts plain NBD from loopback
// (--nbd-allow-plain-loopback) for tenants that allow it
// (createPlainTenant): the tests using it are about volumes, filters
// and clients, not NBD authentication, which TestNBDPlainRefused covers
// with the default server (startBlockServerWith and no flag).
func startBlockServer(t *testing.T, dataDir, token string) *blockServer {
	t.Helper()
	return startBlockServerWith(t, dataDir, token, "--nbd-allow-plain-loopback")
}

func startBlockServerWith(t *testing.T, dataDir, token string, extra ...string) *blockServer {
	t.Helper()
	for _, tool := range []string{"qemu-img", "qemu-io", "nbdinfo", "nbdcopy", "fio"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not installed (scripts/ensure-deps.sh installs qemu-utils, libnbd-bin and fio): %v", tool, err)
		}
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		s := &server{t: t, dataDir: dataDir, s3Addr: freeAddr(t), adminAddr: freeAddr(t), token: token, done: make(chan struct{})}
		nbdAddr := freeAddr(t)
		err := s.launch(append([]string{"serve", "--data", dataDir, "--s3-addr", s.s3Addr, "--admin-addr", s.adminAddr,
			"--admin-token", token, "--nbd-addr", nbdAddr}, extra...), nil)
		if err == nil {
			return &blockServer{server: s, nbdAddr: nbdAddr}
		}
		lastErr = err
		if !strings.Contains(err.Error(), "address already in use") {
			break
		}
	}
	t.Fatalf("starting facet serve with NBD: %v", lastErr)
	return nil
}

func (s *blockServer) uri(volume string) string { return "nbd://" + s.nbdAddr + "/" + volume }

// createPlainTenant creates a tenant whose volumes plain loopback clients
// may open (facet ctl tenant set NAME --allow-plain-nbd), for tests that
// use plain nbd:// URIs because they are about something else.
func (s *blockServer) createPlainTenant(t *testing.T, name string) creds {
	t.Helper()
	c := s.createTenant(t, name)
	s.mustCtl(t, "tenant", "set", name, "--allow-plain-nbd")
	return c
}

func (s *blockServer) mustCtl(t *testing.T, args ...string) []byte {
	t.Helper()
	out, err := s.ctl(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// run runs a client tool and fails the test with its output on error.
func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := runErr(name, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return out
}

func runErr(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	return string(out), err
}

// volumeInfo is the part of GET /v1/volumes/{name} the tests read.
type volumeInfo struct {
	Name    string `json:"name"`
	ID      string `json:"id"`
	Size    int64  `json:"size"`
	Extents []struct {
		Pool string `json:"pool"`
	} `json:"extents"`
	Filters []struct {
		Filter string `json:"filter"`
	} `json:"filters"`
}

func (s *blockServer) volume(t *testing.T, name string) volumeInfo {
	t.Helper()
	var v volumeInfo
	if err := json.Unmarshal(s.mustCtl(t, "volume", "show", name, "-o", "json"), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// backingFile is the single backing file of a volume on pool directory dir.
func backingFile(t *testing.T, dir string, v volumeInfo) string {
	t.Helper()
	return filepath.Join(dir, fmt.Sprintf("%s-%s.0.img", v.Name, v.ID))
}

func readAtFile(t *testing.T, path string, off, n int64) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, n)
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	return b
}

func allBytes(b []byte, want byte) bool {
	for _, c := range b {
		if c != want {
			return false
		}
	}
	return true
}

func TestNBDClients(t *testing.T) {
	data := t.TempDir()
	srv := startBlockServer(t, data, "e2e-admin-"+randHex(16))
	pool := filepath.Join(data, "pool-ssd")
	srv.createPlainTenant(t, "acme")
	srv.mustCtl(t, "pool", "create", "ssd", "--dir", pool, "--capacity", "4GiB", "--usage", "random", "--iops", "100000")
	for _, v := range []string{"plain", "xor", "stack", "enc"} {
		srv.mustCtl(t, "volume", "create", v, "--tenant", "acme", "--size", "64MiB", "--class", "random", "--iops", "1000")
	}
	srv.mustCtl(t, "policy", "add", "FOR VOLUME xor DO SET xor WITH key=0x55")
	srv.mustCtl(t, "policy", "add", "FOR VOLUME stack DO SET nop, SET xor WITH key=0x55, SET bitrev")
	srv.mustCtl(t, "policy", "add", "FOR VOLUME enc DO SET encryption")
	// Stacks are taken when a volume is first opened: wait until the
	// manager sees the policies (the API answers from the same table).
	deadline := time.Now().Add(20 * time.Second)
	for len(srv.volume(t, "enc").Filters) != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("volume enc never got its filter: %+v", srv.volume(t, "enc"))
		}
		time.Sleep(100 * time.Millisecond)
	}

	t.Run("nbdinfo", func(t *testing.T) {
		out := run(t, "nbdinfo", "--json", srv.uri("plain"))
		var info struct {
			Exports []struct {
				Name         string `json:"export-name"`
				Size         int64  `json:"export-size"`
				MultiConn    bool   `json:"can_multi_conn"`
				CanFUA       bool   `json:"can_fua"`
				CanTrim      bool   `json:"can_trim"`
				CanZero      bool   `json:"can_zero"`
				BlockSizeMax int64  `json:"block_size_maximum"`
			} `json:"exports"`
		}
		if err := json.Unmarshal([]byte(out), &info); err != nil {
			t.Fatalf("nbdinfo --json: %v\n%s", err, out)
		}
		e := info.Exports[0]
		if e.Name != "plain" || e.Size != 64<<20 || !e.MultiConn || !e.CanFUA || !e.CanTrim || !e.CanZero || e.BlockSizeMax != 32<<20 {
			t.Fatalf("nbdinfo: %+v", e)
		}
		list := run(t, "nbdinfo", "--list", "nbd://"+srv.nbdAddr)
		for _, v := range []string{"plain", "xor", "stack", "enc"} {
			if !strings.Contains(list, `export="`+v+`"`) {
				t.Errorf("nbdinfo --list lacks %s:\n%s", v, list)
			}
		}
		if out, err := runErr("nbdinfo", srv.uri("nosuch")); err == nil {
			t.Errorf("nbdinfo of an unknown export succeeded:\n%s", out)
		}
	})

	src := filepath.Join(t.TempDir(), "src.raw")
	img := make([]byte, 48<<20)
	rand.Read(img[:40<<20]) // the tail stays zero: sparse-friendly
	if err := os.WriteFile(src, img, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"plain", "xor", "stack", "enc"} {
		t.Run("qemu-img/"+v, func(t *testing.T) {
			run(t, "qemu-img", "convert", "-n", "-f", "raw", "-O", "raw", src, srv.uri(v))
			// compare checks the first 48 MiB against the file and that
			// the rest of the 64 MiB volume reads as zeros.
			run(t, "qemu-img", "compare", "-f", "raw", "-F", "raw", src, srv.uri(v))
			out := run(t, "qemu-img", "info", "-f", "raw", srv.uri(v))
			if !strings.Contains(out, "64 MiB") {
				t.Errorf("qemu-img info: %s", out)
			}
		})
		t.Run("nbdcopy/"+v, func(t *testing.T) {
			dst := filepath.Join(t.TempDir(), "dump.raw")
			run(t, "nbdcopy", srv.uri(v), dst)
			got, err := os.ReadFile(dst)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 64<<20 || !bytes.Equal(got[:len(img)], img) || !allBytes(got[len(img):], 0) {
				t.Fatalf("nbdcopy read back %d bytes that differ from what qemu-img wrote", len(got))
			}
			// And the other way: nbdcopy writes, qemu-img compares.
			run(t, "nbdcopy", "--flush", dst, srv.uri(v))
			run(t, "qemu-img", "compare", "-f", "raw", "-F", "raw", dst, srv.uri(v))
		})
		t.Run("qemu-io/"+v, func(t *testing.T) {
			// Aligned and unaligned patterns, zeroes, trim, FUA.
			// Beyond the 48 MiB qemu-img wrote, where the volume is zeros.
			out := run(t, "qemu-io", "-f", "raw",
				"-c", "write -P 0xab 49M 64k", "-c", "read -P 0xab 49M 64k",
				"-c", "write -P 0x11 50331651 5", "-c", "read -P 0x11 50331651 5", "-c", "read -P 0x00 50331656 504",
				"-c", "read -P 0x00 50331648 3",
				"-c", "write -f -P 0x22 50M 4k", "-c", "read -P 0x22 50M 4k",
				"-c", "write -z 49M 8k", "-c", "read -P 0x00 49M 8k", "-c", "read -P 0xab 50184k 56k",
				"-c", "write -P 0x33 51M 1M", "-c", "discard 51M 1M", "-c", "write -z 52M 1000", "-c", "read -P 0 52M 1000",
				"-c", "flush", srv.uri(v))
			if strings.Contains(out, "Pattern verification failed") || strings.Contains(out, "failed") {
				t.Fatalf("qemu-io:\n%s", out)
			}
		})
	}

	// qemu-img create formats a qcow2 image onto the export; qemu-io then
	// goes through qcow2 on NBD, and qemu-img check reads it all back.
	t.Run("qemu-img-create-qcow2", func(t *testing.T) {
		srv.mustCtl(t, "volume", "create", "qcow", "--tenant", "acme", "--size", "64MiB", "--class", "random", "--iops", "100")
		run(t, "qemu-img", "create", "-f", "qcow2", srv.uri("qcow"), "48M")
		run(t, "qemu-io", "-f", "qcow2", "-c", "write -P 0x6b 1M 2M", "-c", "read -P 0x6b 1M 2M", "-c", "read -P 0 8M 1M", srv.uri("qcow"))
		if out := run(t, "qemu-img", "check", "-f", "qcow2", srv.uri("qcow")); !strings.Contains(out, "No errors") {
			t.Fatalf("qemu-img check:\n%s", out)
		}
		if out := run(t, "qemu-img", "info", "-f", "qcow2", srv.uri("qcow")); !strings.Contains(out, "virtual size: 48 MiB") {
			t.Fatalf("qemu-img info:\n%s", out)
		}
	})

	t.Run("fio-verify", func(t *testing.T) {
		out := run(t, "fio", "--name=verify", "--ioengine=nbd", "--uri="+srv.uri("plain"), "--rw=randwrite", "--bs=4k",
			"--size=32M", "--iodepth=16", "--verify=crc32c", "--verify_state_save=0", "--verify_fatal=1", "--do_verify=1", "--output-format=json")
		var res struct {
			Jobs []struct {
				Error int `json:"error"`
			} `json:"jobs"`
		}
		if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &res); err != nil || len(res.Jobs) != 1 || res.Jobs[0].Error != 0 {
			t.Fatalf("fio: %v\n%s", err, out)
		}
		out = run(t, "fio", "--name=verify-enc", "--ioengine=nbd", "--uri="+srv.uri("enc"), "--rw=randrw", "--bs=4k", "--size=16M",
			"--iodepth=8", "--numjobs=2", "--verify=crc32c", "--verify_state_save=0", "--verify_fatal=1", "--offset_increment=16M")
		if strings.Contains(out, "verify:") && strings.Contains(out, "bad") {
			t.Fatalf("fio on the encrypted volume:\n%s", out)
		}
	})

	// The sources' Fig. 11: the device holds data XOR 0x55, the client
	// reads clear data.
	t.Run("backing-files", func(t *testing.T) {
		run(t, "qemu-io", "-f", "raw", "-c", "write -P 0x00 8M 64k", "-c", "write -P 0x01 9M 64k", "-c", "flush", srv.uri("xor"))
		run(t, "qemu-io", "-f", "raw", "-c", "write -P 0x01 8M 64k", "-c", "flush", srv.uri("stack"))
		run(t, "qemu-io", "-f", "raw", "-c", "write -P 0x00 8M 64k", "-c", "flush", srv.uri("enc"))
		run(t, "qemu-io", "-f", "raw", "-c", "read -P 0x00 8M 64k", "-c", "read -P 0x01 9M 64k", srv.uri("xor"))
		run(t, "qemu-io", "-f", "raw", "-c", "read -P 0x01 8M 64k", srv.uri("stack"))
		run(t, "qemu-io", "-f", "raw", "-c", "read -P 0x00 8M 64k", srv.uri("enc"))

		xor := readAtFile(t, backingFile(t, pool, srv.volume(t, "xor")), 8<<20, 64<<10)
		if !allBytes(xor, 0x55) {
			t.Errorf("xor volume's backing file holds %#x..., want 0x00 ^ 0x55", xor[:4])
		}
		if b := readAtFile(t, backingFile(t, pool, srv.volume(t, "xor")), 9<<20, 4); !allBytes(b, 0x54) {
			t.Errorf("xor volume's backing file holds %#x, want 0x01 ^ 0x55", b)
		}
		// nop, then xor, then bitrev: bitrev(0x01 ^ 0x55) = bitrev(0x54).
		want := bits.Reverse8(0x01 ^ 0x55)
		if b := readAtFile(t, backingFile(t, pool, srv.volume(t, "stack")), 8<<20, 64<<10); !allBytes(b, want) {
			t.Errorf("stacked volume's backing file holds %#x..., want %#x", b[:4], want)
		}
		enc := readAtFile(t, backingFile(t, pool, srv.volume(t, "enc")), 8<<20, 64<<10)
		if bytes.Count(enc, []byte{0}) > len(enc)/100 || bytes.Equal(enc[:512], enc[512:1024]) {
			t.Errorf("encrypted volume's backing file does not look encrypted (or sectors share a tweak): %x", enc[:32])
		}
		// The stack is visible in the API in write order.
		var names []string
		for _, f := range srv.volume(t, "stack").Filters {
			names = append(names, f.Filter)
		}
		if strings.Join(names, ",") != "nop,xor,bitrev" {
			t.Errorf("stack filters = %v", names)
		}
	})

	t.Run("metrics", func(t *testing.T) {
		_, _, body := httpGetAuth(t, "http://"+srv.adminAddr+"/metrics", srv.token)
		for _, want := range []string{`facet_volume_write_bytes_total{tenant="acme",volume="plain"}`, `facet_volume_read_iops{tenant="acme",volume="plain"}`} {
			if !bytes.Contains(body, []byte(want)) {
				t.Errorf("/metrics lacks %s", want)
			}
		}
	})
}

func httpGetAuth(t *testing.T, url, token string) (int, string, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), body
}

// TestNBDTLS: a volume is exported over TLS to its owner's certificate
// only; another tenant's certificate does not see it, and without
// --nbd-allow-plain-loopback a plain loopback client is refused.
func TestNBDTLS(t *testing.T) {
	data := t.TempDir()
	token := "e2e-admin-" + randHex(16)
	srv := startBlockServer(t, data, token)
	srv.createPlainTenant(t, "acme")
	srv.createTenant(t, "bob")
	srv.mustCtl(t, "pool", "create", "p", "--dir", filepath.Join(data, "pool"), "--capacity", "1GiB", "--usage", "best-effort")
	srv.mustCtl(t, "volume", "create", "acme-vol", "--tenant", "acme", "--size", "16MiB", "--class", "best-effort")
	acme, bob := filepath.Join(t.TempDir(), "acme"), filepath.Join(t.TempDir(), "bob")
	srv.mustCtl(t, "volume", "client-cert", "acme", "--dir", acme)
	srv.mustCtl(t, "volume", "client-cert", "bob", "--dir", bob)
	if _, err := srv.ctl(t, "volume", "client-cert", "nobody", "--dir", t.TempDir()); err == nil {
		t.Error("a certificate was issued for a tenant that does not exist")
	}
	tlsURI := func(dir string) string {
		return "nbds://" + srv.nbdAddr + "/acme-vol?tls-certificates=" + dir
	}
	out := run(t, "nbdinfo", tlsURI(acme))
	if !strings.Contains(out, "with TLS") || !strings.Contains(out, "export-size: 16777216") {
		t.Fatalf("owner over TLS:\n%s", out)
	}
	if out, err := runErr("nbdinfo", tlsURI(bob)); err == nil {
		t.Fatalf("another tenant's certificate opened the volume:\n%s", out)
	}
	if out := run(t, "nbdinfo", "--list", "nbds://"+srv.nbdAddr+"/?tls-certificates="+bob); strings.Contains(out, "acme-vol") {
		t.Fatalf("another tenant lists the volume:\n%s", out)
	}
	host, port, _ := strings.Cut(srv.nbdAddr, ":")
	qemuTLS := func(dir string) []string {
		return []string{"--object", "tls-creds-x509,id=tls0,dir=" + dir + ",endpoint=client", "--image-opts",
			"driver=nbd,host=" + host + ",port=" + port + ",export=acme-vol,tls-creds=tls0"}
	}
	run(t, "qemu-io", append(qemuTLS(acme)[:2], "-c", "write -P 0x42 0 64k", "-c", "read -P 0x42 0 64k", "--image-opts", qemuTLS(acme)[3])...)
	if out, err := runErr("qemu-img", append([]string{"info"}, qemuTLS(bob)...)...); err == nil {
		t.Fatalf("qemu-img with another tenant's certificate:\n%s", out)
	}

	// The default server (TLS required) refuses plain NBD even from
	// loopback.
	nbdAddr := restartRequiringTLS(t, srv, data, token, "acme-vol")
	if out := run(t, "nbdinfo", "nbds://"+nbdAddr+"/acme-vol?tls-certificates="+acme); !strings.Contains(out, "with TLS") {
		t.Fatalf("owner over TLS after restart:\n%s", out)
	}
	// The data written over TLS before the restart is there.
	run(t, "qemu-io", "--object", "tls-creds-x509,id=tls0,dir="+acme+",endpoint=client", "-c", "read -P 0x42 0 64k", "--image-opts",
		"driver=nbd,host="+host+",port="+strings.Split(nbdAddr, ":")[1]+",export=acme-vol,tls-creds=tls0")
}

// TestNBDCrash: data acknowledged before a FLUSH survives kill -9 of the
// server; a restart on the same directory serves it.
func TestNBDCrash(t *testing.T) {
	data := t.TempDir()
	token := "e2e-admin-" + randHex(16)
	srv := startBlockServer(t, data, token)
	srv.createPlainTenant(t, "acme")
	srv.mustCtl(t, "pool", "create", "p", "--dir", filepath.Join(data, "pool"), "--capacity", "1GiB", "--usage", "sequential", "--seq-bw", "100MB/s")
	srv.mustCtl(t, "volume", "create", "v", "--tenant", "acme", "--size", "64MiB", "--class", "sequential", "--seq-bw", "10MB/s")
	srv.mustCtl(t, "volume", "create", "vx", "--tenant", "acme", "--size", "64MiB", "--class", "sequential", "--seq-bw", "10MB/s")
	srv.mustCtl(t, "policy", "add", "FOR VOLUME vx DO SET xor WITH key=0x55, SET bitrev")
	src := filepath.Join(t.TempDir(), "src.raw")
	img := make([]byte, 32<<20)
	rand.Read(img)
	if err := os.WriteFile(src, img, 0o600); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for len(srv.volume(t, "vx").Filters) != 2 {
		if time.Now().After(deadline) {
			t.Fatal("policy not in force")
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, v := range []string{"v", "vx"} {
		// nbdcopy --flush sends FLUSH before it disconnects; qemu-io
		// writes with FUA.
		run(t, "nbdcopy", "--flush", src, srv.uri(v))
		run(t, "qemu-io", "-f", "raw", "-c", "write -f -P 0x7e 40M 1M", srv.uri(v))
	}
	srv.kill9()

	srv2 := startBlockServer(t, data, token)
	for _, v := range []string{"v", "vx"} {
		dst := filepath.Join(t.TempDir(), "dst.raw")
		run(t, "nbdcopy", srv2.uri(v), dst)
		got, err := os.ReadFile(dst)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got[:len(img)], img) {
			t.Fatalf("%s: flushed data lost or corrupted across kill -9", v)
		}
		if !allBytes(got[40<<20:41<<20], 0x7e) || !allBytes(got[41<<20:], 0) {
			t.Fatalf("%s: FUA write lost, or zeros not zeros, across kill -9", v)
		}
	}
}

// TestNBDPlacement: the reservation scheduler through the API, with
// placement visible; throttles from a policy and the API, changed at run
// time, visible as the effective throttle.
func TestNBDPlacement(t *testing.T) {
	data := t.TempDir()
	srv := startBlockServer(t, data, "e2e-admin-"+randHex(16))
	srv.createPlainTenant(t, "acme")
	for _, p := range [][]string{
		{"hdd1", "--usage", "sequential", "--capacity", "100GiB", "--seq-bw", "200MB/s"},
		{"hdd2", "--usage", "sequential", "--capacity", "100GiB", "--seq-bw", "200MB/s"},
		{"ssd", "--usage", "random", "--capacity", "20GiB", "--iops", "10000"},
	} {
		srv.mustCtl(t, append([]string{"pool", "create", p[0], "--dir", filepath.Join(data, p[0])}, p[1:]...)...)
	}
	for _, tc := range []struct {
		args      []string
		placement string // "" = refused
		refusal   string
	}{
		{[]string{"fit", "--size", "10GiB", "--class", "sequential", "--seq-bw", "60MB/s"}, "hdd1", ""},
		// No pool has 250 MB/s left; two can give 125 each.
		{[]string{"stripe", "--size", "10GiB", "--class", "sequential", "--seq-bw", "250MB/s"}, "hdd1,hdd2", ""},
		{[]string{"rnd", "--size", "10GiB", "--class", "random", "--iops", "6000"}, "ssd", ""},
		{[]string{"too-many-iops", "--size", "1GiB", "--class", "random", "--iops", "5000"}, "", "needs 5000 IOPS, 4000 unreserved of 10000"},
		{[]string{"wrong-class", "--size", "1GiB", "--class", "sequential"}, "", "a sequential volume reserves MB/s"},
		// Capacity-only volumes: no best-effort pool, so the disks (the
		// fullest, best fit) rather than the ssd.
		{[]string{"cold", "--size", "9GiB", "--class", "cold"}, "hdd1", ""},
		{[]string{"be", "--size", "1GiB", "--class", "best-effort"}, "hdd1", ""},
		// The ssd takes capacity-only volumes only once the disks are
		// full (hdd1 has 75 GiB left, hdd2 95).
		{[]string{"fill1", "--size", "75GiB", "--class", "cold"}, "hdd1", ""},
		{[]string{"fill2", "--size", "95GiB", "--class", "best-effort"}, "hdd2", ""},
		{[]string{"ssd-cold", "--size", "9GiB", "--class", "cold"}, "ssd", ""},
	} {
		out, err := srv.ctl(t, append([]string{"volume", "create", tc.args[0], "--tenant", "acme", "-o", "json"}, tc.args[1:]...)...)
		if tc.placement == "" {
			if err == nil || !strings.Contains(err.Error(), tc.refusal) {
				t.Errorf("%s: %v %s, want refusal with %q", tc.args[0], err, out, tc.refusal)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.args[0], err)
			continue
		}
		var v volumeInfo
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatal(err)
		}
		var pools []string
		for _, e := range v.Extents {
			pools = append(pools, e.Pool)
		}
		if strings.Join(pools, ",") != tc.placement {
			t.Errorf("%s placed on %v, want %s", tc.args[0], pools, tc.placement)
		}
	}
	// The striped volume works end to end.
	run(t, "qemu-io", "-f", "raw", "-c", "write -P 0x5a 1000k 3M", "-c", "read -P 0x5a 1000k 3M", srv.uri("stripe"))
	var pl struct {
		Pools []struct {
			Name          string   `json:"name"`
			ReservedSeqBW int64    `json:"reserved_seq_bw"`
			Volumes       []string `json:"volumes"`
		} `json:"pools"`
	}
	if err := json.Unmarshal(srv.mustCtl(t, "pool", "list", "-o", "json"), &pl); err != nil {
		t.Fatal(err)
	}
	if pl.Pools[0].Name != "hdd1" || pl.Pools[0].ReservedSeqBW != 185e6 || len(pl.Pools[0].Volumes) != 5 {
		t.Errorf("pool hdd1: %+v", pl.Pools[0])
	}
	if _, err := srv.ctl(t, "pool", "delete", "hdd2"); err == nil {
		t.Error("a pool holding a stripe member was deleted")
	}

	// Throttles: policy, then the API on top, at run time.
	effective := func() map[string]int64 {
		var v struct {
			Effective map[string]int64 `json:"effective_throttle"`
		}
		if err := json.Unmarshal(srv.mustCtl(t, "volume", "show", "fit", "-o", "json"), &v); err != nil {
			t.Fatal(err)
		}
		return v.Effective
	}
	srv.mustCtl(t, "policy", "add", "FOR VOLUME fit DO SET throttle WITH read_bw=3MB/s, write_iops=3000")
	deadline := time.Now().Add(20 * time.Second)
	for effective()["read_bw"] != 3e6 {
		if time.Now().After(deadline) {
			t.Fatalf("policy throttle not in force: %v", effective())
		}
		time.Sleep(100 * time.Millisecond)
	}
	srv.mustCtl(t, "volume", "throttle", "fit", "--write-iops", "5000", "--read-iops", "700")
	if e := effective(); e["read_bw"] != 3e6 || e["write_iops"] != 5000 || e["read_iops"] != 700 {
		t.Errorf("policy + API throttle: %v", e)
	}
	if _, err := srv.ctl(t, "policy", "validate", "FOR VOLUME fit DO SET throttle WITH read_bw=fast"); err == nil {
		t.Error("a bad throttle validated")
	}
	srv.mustCtl(t, "volume", "resize", "rnd", "11GiB") // ssd: 11 + 9 (ssd-cold) = 20 GiB
	if _, err := srv.ctl(t, "volume", "resize", "rnd", "30GiB"); err == nil || !strings.Contains(err.Error(), "capacity") {
		t.Errorf("resize beyond the pool: %v", err)
	}
	if out := run(t, "nbdinfo", srv.uri("rnd")); !strings.Contains(out, "11811160064") {
		t.Errorf("resized volume: %s", out)
	}
	srv.mustCtl(t, "volume", "delete", "cold")
	if _, err := srv.ctl(t, "volume", "show", "cold"); err == nil {
		t.Error("deleted volume still shown")
	}
}
