package bench

import (
	"bytes"
	"context"
	"math"
	"strings"
	"testing"
	"time"
)

func TestParseTrace(t *testing.T) {
	in := `# a comment
timestamp,tenant,op,bucket,key,size
100.5,t1,GET,b1,docs/a.pdf,2000
100.0,t1,put,b1,docs/a.pdf,2000
101.25, t2 ,HEAD,,www/x.html,
102,t2,LIST,b2,,0
`
	recs, err := ParseTrace(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []TraceRecord{
		{T: 0, Tenant: "t1", Op: OpPut, Bucket: "b1", Key: "docs/a.pdf", Size: 2000},
		{T: 0.5, Tenant: "t1", Op: OpGet, Bucket: "b1", Key: "docs/a.pdf", Size: 2000},
		{T: 1.25, Tenant: "t2", Op: OpHead, Bucket: "", Key: "www/x.html", Size: 0},
		{T: 2, Tenant: "t2", Op: OpList, Bucket: "b2", Key: "", Size: 0},
	}
	if len(recs) != len(want) {
		t.Fatalf("%d records, want %d", len(recs), len(want))
	}
	for i := range want {
		if recs[i] != want[i] {
			t.Errorf("record %d: %+v, want %+v", i, recs[i], want[i])
		}
	}
	// Round trip through WriteTrace.
	var b bytes.Buffer
	if err := WriteTrace(&b, "round trip", recs); err != nil {
		t.Fatal(err)
	}
	again, err := ParseTrace(&b)
	if err != nil || len(again) != len(recs) || again[3] != recs[3] {
		t.Fatalf("round trip: %v %+v", err, again)
	}
	for name, bad := range map[string]string{
		"bad time":    "x,t1,GET,b,k,1\n",
		"bad op":      "1,t1,COPY,b,k,1\n",
		"bad size":    "1,t1,PUT,b,k,-5\n",
		"no tenant":   "1,,PUT,b,k,5\n",
		"no key":      "1,t1,GET,b,,5\n",
		"few columns": "1,t1,GET,b,k\n",
	} {
		if _, err := ParseTrace(strings.NewReader(bad)); err == nil {
			t.Errorf("%s: accepted", name)
		} else if name != "few columns" && !strings.Contains(err.Error(), "line 1") {
			t.Errorf("%s: error does not name the line: %v", name, err)
		}
	}
	spec := &TraceSpec{File: "x", Window: Duration(time.Second)}
	if err := spec.validate(); err != nil || spec.Speed != 1 || spec.Concurrency != 16 {
		t.Fatalf("defaults: %+v %v", spec, err)
	}
	if got := spec.apply(recs); len(got) != 2 {
		t.Errorf("window 1s kept %d records, want 2", len(got))
	}
	spec = &TraceSpec{Limit: 3}
	if got := spec.apply(recs); len(got) != 3 {
		t.Errorf("limit 3 kept %d", len(got))
	}
}

type traceShape struct {
	n                  int
	meanSize           float64
	writeBytes, rdByte float64
	tenants            map[string]int
	ops                map[Op]int
}

func shape(recs []TraceRecord) traceShape {
	s := traceShape{n: len(recs), tenants: map[string]int{}, ops: map[Op]int{}}
	var sizes float64
	var nsz int
	seen := map[string]bool{}
	for _, r := range recs {
		s.tenants[r.Tenant]++
		s.ops[r.Op]++
		switch r.Op {
		case OpPut:
			s.writeBytes += float64(r.Size)
		case OpGet:
			s.rdByte += float64(r.Size)
		}
		// Mean object size: over distinct objects.
		k := r.Tenant + "/" + r.Key
		if !seen[k] {
			seen[k] = true
			sizes += float64(r.Size)
			nsz++
		}
	}
	s.meanSize = sizes / float64(nsz)
	return s
}

// The synthetic traces have the published shape of the sources' traces.
func TestSynthesizeIdiadaAndArctur(t *testing.T) {
	id, err := Synthesize(SynthOptions{Kind: "idiada", Tenants: []string{"t1", "t2"}, Duration: 2 * time.Hour, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	s := shape(id)
	wf := s.writeBytes / (s.writeBytes + s.rdByte)
	t.Logf("idiada: %d records, mean object %.2f MB, write bytes %.1f%%", s.n, s.meanSize/1e6, wf*100)
	if math.Abs(s.meanSize/0.91e6-1) > 0.15 {
		t.Errorf("idiada mean object size %.0f, want about 0.91 MB", s.meanSize)
	}
	if wf < 0.70 || wf > 0.90 {
		t.Errorf("idiada write byte share %.3f, want about 0.80", wf)
	}
	if s.tenants["t1"] == 0 || s.tenants["t2"] == 0 {
		t.Errorf("tenants: %v", s.tenants)
	}
	// 2 ops/s per tenant, Poisson: 2 h × 2 tenants × 2/s ≈ 28800.
	if math.Abs(float64(s.n)/28800-1) > 0.05 {
		t.Errorf("idiada: %d records, want about 28800", s.n)
	}

	ar, err := Synthesize(SynthOptions{Kind: "arctur", Tenants: []string{"t1"}, Duration: time.Hour, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	s = shape(ar)
	rf := s.rdByte / (s.writeBytes + s.rdByte)
	t.Logf("arctur: %d records, mean object %.2f MB, read bytes %.3f%%", s.n, s.meanSize/1e6, rf*100)
	if math.Abs(s.meanSize/0.28e6-1) > 0.2 {
		t.Errorf("arctur mean object size %.0f, want about 0.28 MB", s.meanSize)
	}
	if rf < 0.999 {
		t.Errorf("arctur read byte share %.5f, want at least 0.999", rf)
	}
	// Popularity is skewed: the most read object gets far more than an
	// even share.
	reads := map[string]int{}
	most := 0
	for _, r := range ar {
		if r.Op == OpGet {
			reads[r.Key]++
			most = max(most, reads[r.Key])
		}
	}
	if even := float64(s.ops[OpGet]) / 2000; float64(most) < 20*even {
		t.Errorf("most popular object read %d times, even share %.1f: not skewed", most, even)
	}
	if _, err := Synthesize(SynthOptions{Kind: "other", Duration: time.Second}); err == nil {
		t.Error("unknown kind accepted")
	}
}

// Replay against a real gateway: every record is executed, objects read
// before being written are created first, and time scaling holds.
func TestReplayAgainstFacet(t *testing.T) {
	ctx := context.Background()
	gw := testGateway(t)
	var b bytes.Buffer
	b.WriteString("timestamp,tenant,op,bucket,key,size\n")
	// t1 reads an object it never wrote (must be prepared), writes and
	// deletes; 10 s of trace time at speed 20 lasts half a second.
	b.WriteString("0,t1,GET,rp-one,pre/x,5000\n1,t1,PUT,rp-one,new/y,7000\n2,t1,GET,rp-one,new/y,7000\n3,t1,HEAD,rp-one,pre/x,5000\n4,t1,LIST,rp-one,,0\n10,t1,DELETE,rp-one,new/y,7000\n")
	b.WriteString("5,t2,PUT,rp-two,a,100\n6,t2,GET,rp-two,a,100\n")
	path := t.TempDir() + "/trace.csv"
	if err := writeFile(path, b.Bytes()); err != nil {
		t.Fatal(err)
	}
	tenant := func(name string) Tenant {
		return Tenant{Name: name, Endpoint: gw.s3URL, AccessKey: gw.accessKey, SecretKey: gw.secret}
	}
	sc := &Scenario{Name: "replay", Tenants: []Tenant{tenant("t1"), tenant("t2")}, Trace: &TraceSpec{File: path, Speed: 20, Concurrency: 2}}
	start := time.Now()
	rep, err := Run(ctx, sc, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if time.Since(start) > 30*time.Second {
		t.Fatalf("replay of 0.5 s took %s", time.Since(start))
	}
	got := map[string]int64{}
	var errs int64
	for _, tr := range rep.Tenants {
		errs += tr.Total.Errors + tr.Total.Misses
		for _, o := range tr.Ops {
			got[tr.Name+" "+o.Op] = o.Total.Ops
			if o.Op == "GET" && tr.Name == "t1" && o.Total.Bytes != 12000 {
				t.Errorf("t1 GET bytes %d, want 5000+7000", o.Total.Bytes)
			}
		}
		if tr.FirstError != "" {
			t.Errorf("%s: %s", tr.Name, tr.FirstError)
		}
	}
	want := map[string]int64{"t1 GET": 2, "t1 PUT": 1, "t1 HEAD": 1, "t1 LIST": 1, "t1 DELETE": 1, "t2 PUT": 1, "t2 GET": 1}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %d ops, want %d (all: %v)", k, got[k], v, got)
		}
	}
	if errs != 0 {
		t.Errorf("%d errors", errs)
	}
	// 10 s of trace at speed 20: the replay spans about 0.5 s.
	if rep.ElapsedS < 0.5 {
		t.Errorf("replay took %.2fs, the trace's last record is due at 0.5 s", rep.ElapsedS)
	}
}
