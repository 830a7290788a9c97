package block

import (
	"strings"
	"sync/atomic"
	"testing"

	"github.com/facet-sds/facet/internal/block/nbd"
	"github.com/facet-sds/facet/internal/meta"
	"github.com/facet-sds/facet/internal/policy"
)

// tablePolicies is a policy table the test swaps.
type tablePolicies struct{ t atomic.Pointer[policy.Table] }

func (p *tablePolicies) VolumeTable() *policy.Table { return p.t.Load() }

func (p *tablePolicies) set(t *testing.T, text string, activated ...string) {
	t.Helper()
	pols, err := policy.ParseAndCheck("test", text, &policy.StaticVocabulary{Volumes: []string{"av"}, Metrics: policy.DefaultMetrics(), Blocks: PolicyFilters(nil)})
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range pols {
		p.ID = "p" + string(rune('1'+i))
	}
	c, err := policy.Compile(pols, nil)
	if err != nil {
		t.Fatal(err)
	}
	tab, err := c.Table(activated...)
	if err != nil {
		t.Fatal(err)
	}
	p.t.Store(tab)
}

func TestExplainVolume(t *testing.T) {
	pols := &tablePolicies{}
	pols.set(t, "FOR VOLUME av DO SET nop, SET xor WITH key=0x55\n"+
		"FOR ALL VOLUMES DO SET throttle WITH read_bw=3MB/s, write_iops=2000\n"+
		"FOR VOLUME av WHEN volume_write_iops > 100 DO SET throttle WITH write_iops=100 TRANSIENT")
	m, store := testManager(t, Config{Policies: pols})
	ctx := t.Context()
	if _, err := m.SetThrottle(ctx, "av", meta.Throttle{WriteIOPS: 500}); err != nil {
		t.Fatal(err)
	}
	ex, err := m.ExplainVolume(ctx, "av")
	if err != nil {
		t.Fatal(err)
	}
	if got := stepNames(ex.Filters); strings.Join(got, ",") != "nop,xor" || ex.Filters[0].Policy != "p1" ||
		ex.Filters[1].Params["key"] != "0x55" || ex.Filters[1].Target != "VOLUME av" {
		t.Fatalf("filters %+v", ex.Filters)
	}
	want := []ThrottleSource{
		{Throttle: "read_bw", Limit: 3e6, Source: SourcePolicy, Policy: "p2", Line: 2, Target: "ALL VOLUMES"},
		{Throttle: "write_bw", Source: SourceNone},
		{Throttle: "read_iops", Source: SourceNone},
		{Throttle: "write_iops", Limit: 500, Source: SourceAPI, Policy: "p2", Line: 2, Target: "ALL VOLUMES", Overridden: 2000},
	}
	for i := range want {
		if ex.Throttles[i] != want[i] {
			t.Errorf("throttle %d: %+v, want %+v", i, ex.Throttles[i], want[i])
		}
	}
	if len(ex.Pending) != 1 || ex.Pending[0].Policy != "p3" || ex.Pending[0].Trigger != "volume_write_iops > 100" || ex.Open || len(ex.Applied) != 0 {
		t.Fatalf("pending %+v open %v applied %+v", ex.Pending, ex.Open, ex.Applied)
	}

	// Opening the volume records the stack its bytes go through.
	d, _, err := m.Open(ctx, "av", nbd.Peer{Loopback: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	rec, _ := store.GetVolume(ctx, "av")
	if len(rec.Stack) != 2 || rec.Stack[0].Filter != "nop" || rec.Stack[1].Params["key"] != "0x55" || rec.StackSince.IsZero() {
		t.Fatalf("recorded stack %+v", rec.Stack)
	}

	// The trigger holds: its throttle replaces the ALL VOLUMES one under
	// the API's, and explain says so.
	pols.set(t, "FOR VOLUME av DO SET nop, SET xor WITH key=0x55\n"+
		"FOR ALL VOLUMES DO SET throttle WITH read_bw=3MB/s, write_iops=2000\n"+
		"FOR VOLUME av WHEN volume_write_iops > 100 DO SET throttle WITH write_iops=100 TRANSIENT", "p3")
	if err := m.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	ex, _ = m.ExplainVolume(ctx, "av")
	if w := ex.Throttles[3]; w.Policy != "p3" || !w.Dynamic || w.Overridden != 100 || len(ex.Pending) != 0 || !ex.Open {
		t.Fatalf("active trigger: %+v pending %+v", w, ex.Pending)
	}

	// nop goes away: it leaves the bytes as they are, so the open volume
	// takes the new stack at once and records it.
	pols.set(t, "FOR VOLUME av DO SET xor WITH key=0x55")
	if err := m.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	ex, _ = m.ExplainVolume(ctx, "av")
	if strings.Join(ex.Running, ",") != "xor" || len(ex.Notes) != 0 {
		t.Fatalf("running %v notes %v", ex.Running, ex.Notes)
	}
	if rec, _ := store.GetVolume(ctx, "av"); len(rec.Stack) != 1 || rec.Stack[0].Filter != "xor" {
		t.Fatalf("recorded stack after the nop went %+v", rec.Stack)
	}

	// Another xor key would read the stored bytes differently: the open
	// volume keeps its stack, and explain says why.
	pols.set(t, "FOR VOLUME av DO SET xor WITH key=0x66")
	if err := m.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	ex, _ = m.ExplainVolume(ctx, "av")
	if strings.Join(ex.Running, ",") != "xor" || len(ex.Notes) != 1 || !strings.Contains(ex.Notes[0], "next opened") {
		t.Fatalf("running %v notes %v", ex.Running, ex.Notes)
	}
	if st := d.(*device).v.stack.Load(); st.Names[0] != "xor" {
		t.Fatal(st.Names)
	}
	d.Close()
	ex, _ = m.ExplainVolume(ctx, "av")
	if ex.Open || len(ex.Notes) != 1 || !strings.Contains(ex.Notes[0], "last written through [xor]") {
		t.Fatalf("closed: open %v notes %v", ex.Open, ex.Notes)
	}
	if _, err := m.ExplainVolume(ctx, "nosuch"); err == nil {
		t.Fatal("explained a volume that does not exist")
	}
}
