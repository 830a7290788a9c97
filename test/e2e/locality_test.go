package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/facet-sds/facet/clients/go/facetctx"
	"github.com/facet-sds/facet/internal/admin"
	"github.com/facet-sds/facet/internal/storage/s3/s3test"
)

// putOne creates bucket and stores body at key as tenant c.
func putOne(t *testing.T, s *server, c creds, bucket, key string, body []byte) {
	t.Helper()
	cl := s.sdk(c)
	if _, err := cl.CreateBucket(ctxT(t), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.PutObject(ctxT(t), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(body)}); err != nil {
		t.Fatal(err)
	}
}

func locate(t *testing.T, s *server, args ...string) admin.Locality {
	t.Helper()
	out, err := s.ctl(t, append([]string{"locality", "-o", "json"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	var l admin.Locality
	if err := json.Unmarshal(out, &l); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return l
}

// The embedded backend answers with the data file (holding the object's
// bytes), its mount and block device; /v1/nodes reports the device's
// scheduler and whether priorities work; another tenant gets nothing.
func TestLocalityEmbedded(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	c := s.createTenant(t, "loc1")
	s.createTenant(t, "loc2")
	body := bytes.Repeat([]byte("where am I? "), 1000)
	putOne(t, s, c, "locb", "a//b/../c", body)

	l := locate(t, s, "locb", "a//b/../c", "--tenant", "loc1")
	if l.Kind != "fs" || l.Tenant != "loc1" || l.Node == "" || l.FS == nil || l.StoredSize != int64(len(body)) {
		t.Fatalf("%+v", l)
	}
	if !strings.HasPrefix(l.FS.Path, dir) {
		t.Fatalf("data file %s outside the data dir %s", l.FS.Path, dir)
	}
	got, err := os.ReadFile(l.FS.Path)
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("the located file does not hold the object: %v", err)
	}
	if l.FS.Mount.Point == "" || (l.FS.Device == nil && l.FS.Note == "") {
		t.Fatalf("no mount or device: %+v", l.FS)
	}
	if d := l.FS.Device; d != nil {
		if d.Scheduler == "" || d.PrioritiesNote == "" || d.Priorities != (d.Scheduler == "bfq" || d.Scheduler == "cfq") {
			t.Fatalf("device %+v", d)
		}
	}
	// The table form names the path too.
	out, err := s.ctl(t, "locality", "locb", "a//b/../c")
	if err != nil || !strings.Contains(string(out), filepath.Base(l.FS.Path)) {
		t.Fatalf("%v\n%s", err, out)
	}
	if _, err := s.ctl(t, "locality", "locb", "a//b/../c", "--tenant", "loc2"); err == nil || !strings.Contains(err.Error(), "NoSuchBucket") {
		t.Fatalf("another tenant's bucket: %v", err)
	}
	if _, err := s.ctl(t, "locality", "locb", "nothing"); err == nil || !strings.Contains(err.Error(), "NoSuchKey") {
		t.Fatalf("missing key: %v", err)
	}

	out, err = s.ctl(t, "node", "list", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var nl admin.NodeList
	if err := json.Unmarshal(out, &nl); err != nil || len(nl.Nodes) != 1 {
		t.Fatalf("%v %s", err, out)
	}
	n := nl.Nodes[0]
	if n.Name != l.Node || n.Backend != "fs" || n.IO == nil || n.IO.Model != "per-stream" || len(n.Devices) != 1 || n.IO.PrioritiesNote == "" {
		t.Fatalf("%s", out)
	}
	if d := l.FS.Device; d != nil {
		found := false
		for _, disk := range n.Disks {
			if disk.Name == d.Name && disk.Scheduler == d.Scheduler && disk.Type == d.Type {
				found = true
			}
		}
		if !found {
			t.Fatalf("disk %s not among the node's disks: %s", d.Name, out)
		}
	}
}

// A remote backend answers with its endpoint, the backend bucket and key,
// and what its HEAD tells.
func TestLocalityRemote(t *testing.T) {
	remote := s3test.Start(t)
	s := &server{t: t, dataDir: t.TempDir(), s3Addr: freeAddr(t), adminAddr: freeAddr(t), token: "e2e-admin-" + randHex(16), done: make(chan struct{})}
	if err := s.launch([]string{"serve", "--data", s.dataDir, "--s3-addr", s.s3Addr, "--admin-addr", s.adminAddr,
		"--admin-token", s.token, "--backend", remote.URL("gw")}, nil); err != nil {
		t.Fatal(err)
	}
	c := s.createTenant(t, "rem1")
	body := []byte("remote bytes")
	putOne(t, s, c, "remb", "dir/obj", body)
	l := locate(t, s, "remb", "dir/obj", "--tenant", "rem1")
	r := l.Remote
	if l.Kind != "s3" || r == nil || r.Endpoint != "http://"+remote.Addr || r.Bucket != remote.Bucket || r.Key != "gw/remb/dir/obj" || l.StoredSize != int64(len(body)) {
		t.Fatalf("%+v %+v", l, r)
	}
	if strings.Contains(r.Endpoint, remote.Secret) {
		t.Fatal("the endpoint carries the backend secret")
	}
	// What the backend says is what a HEAD of the backend key says.
	h, err := remote.Client.HeadObject(ctxT(t), &s3.HeadObjectInput{Bucket: aws.String(r.Bucket), Key: aws.String(r.Key)})
	if err != nil || strings.Trim(aws.ToString(h.ETag), `"`) != r.ETag {
		t.Fatalf("%v: backend etag %v, located %q", err, aws.ToString(h.ETag), r.ETag)
	}
	out, err := s.ctl(t, "node", "list", "-o", "json")
	if err != nil || !strings.Contains(string(out), `"backend":"remote"`) {
		t.Fatalf("%v %s", err, out)
	}
}

// A striped block volume answers with its stripe layout: one member per
// pool, each a file in its pool's directory on a device of this node.
func TestLocalityVolume(t *testing.T) {
	data := t.TempDir()
	srv := startBlockServer(t, data, "e2e-admin-"+randHex(16))
	srv.createTenant(t, "acme")
	for _, p := range []string{"hdd1", "hdd2"} {
		srv.mustCtl(t, "pool", "create", p, "--dir", filepath.Join(data, p), "--usage", "sequential", "--capacity", "100GiB", "--seq-bw", "200MB/s")
	}
	srv.mustCtl(t, "volume", "create", "stripe", "--tenant", "acme", "--size", "1GiB", "--class", "sequential", "--seq-bw", "250MB/s")
	out, err := srv.ctl(t, "locality", "--volume", "stripe", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var vl admin.VolumeLocality
	if err := json.Unmarshal(out, &vl); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if vl.Volume != "stripe" || vl.Tenant != "acme" || vl.Width != 2 || vl.StripeUnit <= 0 || len(vl.Members) != 2 || vl.Node == "" {
		t.Fatalf("%s", out)
	}
	for i, m := range vl.Members {
		if m.Index != i || !strings.HasPrefix(m.Path, filepath.Join(data, m.Pool)+string(filepath.Separator)) || m.FS == nil || m.FS.Mount.Point == "" {
			t.Fatalf("member %d: %+v", i, m)
		}
	}
	if vl.Members[0].Pool == vl.Members[1].Pool {
		t.Fatalf("both members on %s", vl.Members[0].Pool)
	}
	if _, err := srv.ctl(t, "locality", "--volume", "nope"); err == nil {
		t.Fatal("an unknown volume must fail")
	}
}

// The per-device bandwidth view (the sources' osinfo per device): while a
// large GET of a class with a reservation is open, facet ctl bw --osinfo
// lists the device under the data with that stream's thread (one of the
// server's threads), its flow and need; once the GET ends, no stream.
func TestBandwidthPerDevice(t *testing.T) {
	s := startServerEnv(t, t.TempDir(), "e2e-admin-"+randHex(16), []string{"FACET_QOS_PERIOD=250ms"})
	c := s.createTenant(t, "osd")
	body := bytes.Repeat([]byte("per-device view "), 2<<20) // 32 MiB: a stream of its own
	putOne(t, s, c, "osd-b", "big", body)
	s.policyAdd(t, "FOR TENANT osd CONTEXT scan DO SET bandwidth WITH reservation=4MB/s")

	type device struct {
		Device  string  `json:"device"`
		Served  float64 `json:"served"`
		Asked   float64 `json:"asked"`
		Streams []struct {
			TID  int     `json:"tid"`
			Flow string  `json:"flow"`
			Need float64 `json:"need"`
		} `json:"streams"`
	}
	osinfo := func() []device {
		t.Helper()
		var v struct {
			Nodes []struct {
				Devices []device `json:"devices"`
			} `json:"nodes"`
		}
		out, err := s.ctl(t, "bw", "--osinfo", "-o", "json")
		if err != nil || json.Unmarshal(out, &v) != nil || len(v.Nodes) > 1 {
			t.Fatalf("ctl bw --osinfo: %v %s", err, out)
		}
		if len(v.Nodes) == 0 {
			return nil // the node's first QoS report has not come in yet: the callers poll
		}
		return v.Nodes[0].Devices
	}

	out, err := s.sdk(c, facetctx.Option).GetObject(facetctx.With(ctxT(t), facetctx.Block{Class: "scan"}), &s3.GetObjectInput{Bucket: aws.String("osd-b"), Key: aws.String("big")})
	if err != nil {
		t.Fatal(err)
	}
	// One byte read, the rest held: the stream's thread stays alive,
	// blocked on its bounded read-ahead.
	if _, err := io.ReadFull(out.Body, make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	var devs []device
	for {
		devs = osinfo()
		if len(devs) == 1 && len(devs[0].Streams) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the open stream never showed under its device: %+v", devs)
		}
		time.Sleep(100 * time.Millisecond)
	}
	d := devs[0]
	st := d.Streams[0]
	if d.Device == "" || st.TID <= 0 || st.Flow != "osd/scan" || st.Need != 4e6 || d.Asked != 4e6 {
		t.Fatalf("device %+v", d)
	}
	// The thread is the server's: it is among its tasks.
	if _, err := os.Stat(fmt.Sprintf("/proc/%d/task/%d", s.cmd.Process.Pid, st.TID)); err != nil {
		t.Fatalf("thread %d is not the server's: %v", st.TID, err)
	}
	table, err := s.ctl(t, "bw", "--osinfo")
	if err != nil || !strings.Contains(string(table), d.Device) || !strings.Contains(string(table), "4.00MB/s") {
		t.Fatalf("ctl bw --osinfo (table): %v\n%s", err, table)
	}
	if _, err := io.Copy(io.Discard, out.Body); err != nil {
		t.Fatal(err)
	}
	out.Body.Close()
	for deadline = time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if devs = osinfo(); len(devs) == 1 && len(devs[0].Streams) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the finished stream is still listed: %+v", devs)
		}
	}
}
