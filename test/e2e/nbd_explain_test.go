package e2e

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// volumeExplanation is the part of GET /v1/volumes/{volume}/explain the
// tests read.
type volumeExplanation struct {
	Filters []struct {
		Filter  string            `json:"filter"`
		Params  map[string]string `json:"params"`
		Policy  string            `json:"policy"`
		Target  string            `json:"target"`
		Dynamic bool              `json:"dynamic"`
	} `json:"filters"`
	Open      bool     `json:"open"`
	Running   []string `json:"running"`
	Throttles []struct {
		Throttle   string `json:"throttle"`
		Limit      int64  `json:"limit"`
		Source     string `json:"source"`
		Policy     string `json:"policy"`
		Target     string `json:"target"`
		Dynamic    bool   `json:"dynamic"`
		Overridden int64  `json:"overridden"`
	} `json:"throttles"`
	Pending []struct {
		Policy  string `json:"policy"`
		Trigger string `json:"trigger"`
	} `json:"pending"`
	Notes []string `json:"notes"`
}

func (s *blockServer) explainVolume(t *testing.T, name string) volumeExplanation {
	t.Helper()
	var ex volumeExplanation
	out := s.mustCtl(t, "volume", "explain", name, "-o", "json")
	if err := json.Unmarshal(out, &ex); err != nil {
		t.Fatalf("volume explain -o json: %v\n%s", err, out)
	}
	return ex
}

func (ex volumeExplanation) filterNames() string {
	var n []string
	for _, f := range ex.Filters {
		n = append(n, f.Filter)
	}
	return strings.Join(n, ",")
}

// TestNBDVolumeExplainAndTriggers: explain names the block filters (in
// order) and throttles of a volume and where each comes from, and the
// volume's record keeps the stack its I/O went through; a dynamic policy
// on the volume's own metrics (volume_write_iops, published by the block
// stage on the bus) throttles it and adds a nop while fio writes, and
// lets go after the writes stop.
func TestNBDVolumeExplainAndTriggers(t *testing.T) {
	data := t.TempDir()
	srv := startBlockServer(t, data, "e2e-admin-"+randHex(16))
	srv.createPlainTenant(t, "acme")
	srv.mustCtl(t, "pool", "create", "p", "--dir", filepath.Join(data, "pool"), "--capacity", "1GiB", "--usage", "best-effort")
	for _, v := range []string{"sv", "dv"} {
		srv.mustCtl(t, "volume", "create", v, "--tenant", "acme", "--size", "64MiB", "--class", "best-effort")
	}
	static := srv.policyAdd(t, "FOR VOLUME sv DO SET nop, SET xor WITH key=0x55\nFOR ALL VOLUMES DO SET throttle WITH read_bw=30MB/s, write_iops=20000")
	srv.mustCtl(t, "volume", "throttle", "sv", "--write-iops", "15000")

	// Policies reach the block stage at its next poll.
	deadline := time.Now().Add(20 * time.Second)
	ex := srv.explainVolume(t, "sv")
	for ex.filterNames() != "nop,xor" {
		if time.Now().After(deadline) {
			t.Fatalf("explain sv: filters %q", ex.filterNames())
		}
		time.Sleep(100 * time.Millisecond)
		ex = srv.explainVolume(t, "sv")
	}
	if f := ex.Filters[1]; f.Policy != static[0].ID || f.Params["key"] != "0x55" || f.Target != "VOLUME sv" {
		t.Errorf("xor step %+v", f)
	}
	rb, wi := ex.Throttles[0], ex.Throttles[3]
	if rb.Throttle != "read_bw" || rb.Limit != 30e6 || rb.Source != "policy" || rb.Policy != static[1].ID || rb.Target != "ALL VOLUMES" {
		t.Errorf("read_bw %+v", rb)
	}
	if wi.Throttle != "write_iops" || wi.Limit != 15000 || wi.Source != "api" || wi.Overridden != 20000 || wi.Policy != static[1].ID {
		t.Errorf("write_iops %+v", wi)
	}
	if ri := ex.Throttles[2]; ri.Source != "none" || ri.Limit != 0 {
		t.Errorf("read_iops %+v", ri)
	}
	text := string(srv.mustCtl(t, "volume", "explain", "sv"))
	for _, want := range []string{"filter 1", "nop", "filter 2", "key=0x55", "policy " + static[1].ID, "ALL VOLUMES", "API (PUT /volumes/sv/throttle), in place of"} {
		if !strings.Contains(text, want) {
			t.Errorf("volume explain sv lacks %q:\n%s", want, text)
		}
	}

	// Writing opens the volume: its record now says what the bytes went
	// through.
	run(t, "qemu-io", "-f", "raw", "-c", "write -P 0x11 0 64k", srv.uri("sv"))
	var show struct {
		Applied []struct {
			Filter string `json:"filter"`
			Policy string `json:"policy"`
		} `json:"applied_stack"`
	}
	if err := json.Unmarshal(srv.mustCtl(t, "volume", "show", "sv", "-o", "json"), &show); err != nil {
		t.Fatal(err)
	}
	if len(show.Applied) != 2 || show.Applied[0].Filter != "nop" || show.Applied[1].Filter != "xor" || show.Applied[1].Policy != static[0].ID {
		t.Fatalf("applied_stack %+v", show.Applied)
	}

	// The trigger reads the volume's own metric; filters that change
	// the stored bytes are refused in it.
	if out, err := srv.ctl(t, "policy", "add", "FOR VOLUME dv WHEN volume_write_iops > 5 DO SET xor WITH key=0x55"); err == nil ||
		!strings.Contains(err.Error(), "changes the stored bytes") {
		t.Fatalf("xor under a trigger: %v %s", err, out)
	}
	if out, err := srv.ctl(t, "policy", "add", "FOR TENANT acme WHEN volume_write_iops > 5 DO SET noop"); err == nil ||
		!strings.Contains(err.Error(), "measured for volumes only") {
		t.Fatalf("volume metric on a tenant: %v %s", err, out)
	}
	dyn := srv.policyAdd(t, "FOR VOLUME dv WHEN volume_write_iops > 20 DO SET throttle WITH write_iops=300 TRANSIENT, SET nop TRANSIENT")[0]
	deadline = time.Now().Add(20 * time.Second)
	for ex = srv.explainVolume(t, "dv"); len(ex.Pending) != 1 || ex.Pending[0].Policy != dyn.ID; ex = srv.explainVolume(t, "dv") {
		if time.Now().After(deadline) {
			t.Fatalf("dv's dynamic policy is not pending: %+v", ex.Pending)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if w := ex.Throttles[3]; w.Policy != static[1].ID || w.Limit != 20000 || ex.filterNames() != "" {
		t.Fatalf("before the trigger: %+v", ex)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// --thread: one process, so that killing it stops the writes.
	fio := exec.CommandContext(ctx, "fio", "--thread", "--ioengine=nbd", "--uri="+srv.uri("dv"), "--name=w", "--rw=randwrite", "--bs=4k",
		"--iodepth=16", "--size=64m", "--time_based", "--runtime=120")
	if err := fio.Start(); err != nil {
		t.Fatal(err)
	}
	fioDone := make(chan error, 1)
	go func() { fioDone <- fio.Wait() }()
	deadline = time.Now().Add(60 * time.Second)
	for ex = srv.explainVolume(t, "dv"); ex.Throttles[3].Policy != dyn.ID || strings.Join(ex.Running, ",") != "nop"; ex = srv.explainVolume(t, "dv") {
		if time.Now().After(deadline) {
			t.Fatalf("the trigger never took: %+v; policy %+v", ex, srv.policyByID(t, dyn.ID))
		}
		time.Sleep(200 * time.Millisecond)
	}
	if w := ex.Throttles[3]; w.Limit != 300 || !w.Dynamic || w.Policy != dyn.ID || len(ex.Pending) != 0 || !ex.Filters[0].Dynamic {
		t.Errorf("under the trigger: %+v", ex)
	}
	if _, v := srv.metricPeriod(t, "volume_write_iops", "volume:dv"); v <= 0 {
		t.Errorf("GET /v1/metrics/volume_write_iops?target=volume:dv = %v", v)
	}
	cancel()
	<-fioDone

	// Writes stopped: the TRANSIENT policy reverts after its hold-down,
	// and the ALL VOLUMES throttle is back.
	deadline = time.Now().Add(60 * time.Second)
	for ex = srv.explainVolume(t, "dv"); ex.Throttles[3].Policy != static[1].ID || len(ex.Pending) != 1; ex = srv.explainVolume(t, "dv") {
		if time.Now().After(deadline) {
			t.Fatalf("the trigger never let go: %+v", ex)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
