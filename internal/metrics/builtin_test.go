package metrics

import (
	"strings"
	"testing"

	"github.com/facet-sds/facet/internal/obs"
	"github.com/facet-sds/facet/internal/policy"
)

// policy.DefaultMetrics is the one list of metric names, units and docs;
// the built-in modules take theirs from it (described, which panics on a
// name it does not list). What is left to check is the other direction:
// every listed metric is measured by a built-in module, except storage
// usage, which no module measures yet.
func TestBuiltinMeasuresTheVocabulary(t *testing.T) {
	notMeasured := map[string]bool{"stored_bytes": true, "objects": true}
	reg := NewBuiltinRegistry()
	for _, v := range policy.DefaultMetrics() {
		in, ok := reg.Lookup(v.Name)
		switch {
		case !ok && !notMeasured[v.Name]:
			t.Errorf("policy metric %s has no module", v.Name)
		case ok && notMeasured[v.Name]:
			t.Errorf("%s is measured now: drop it from notMeasured", v.Name)
		case ok && (in.Unit != v.Unit || in.Doc != v.Doc):
			t.Errorf("metric %s: module says %s %q, vocabulary %s %q", v.Name, in.Unit, in.Doc, v.Unit, v.Doc)
		}
	}
	if got := len(reg.PolicyMetrics()); got != len(Builtin()) {
		t.Errorf("PolicyMetrics lists %d metrics", got)
	}
}

// Every built-in module has at least one hook, or is measured elsewhere
// (the volume metrics), and its cells flush to nothing when nothing
// happened.
func TestBuiltinModulesAreWired(t *testing.T) {
	for _, m := range Builtin() {
		if _, ok := m.(Elsewhere); ok {
			if !IsVolumeMetric(m.Info().Name) {
				t.Errorf("%s is measured elsewhere but is not a volume metric", m.Info().Name)
			}
			continue
		}
		_, s := m.(Starter)
		_, f := m.(Finisher)
		_, p := m.(PayloadWatcher)
		if !s && !f && !p {
			t.Errorf("%s has no hook", m.Info().Name)
		}
		if got := m.NewCell().Flush(1e9); got != (Sample{}) {
			t.Errorf("%s: a fresh cell flushes %+v", m.Info().Name, got)
		}
	}
}

type fakeModule struct{ info Info }

func (m fakeModule) Info() Info                        { return m.info }
func (fakeModule) NewCell() Cell                       { return new(Counter) }
func (fakeModule) Start(*obs.Observation, Cells)       {}
func (fakeModule) Finish(o *obs.Observation, cs Cells) {}

func TestRegistryRejects(t *testing.T) {
	r := NewRegistry(Ops())
	for _, c := range []struct {
		info Info
		want string
	}{
		{Info{Name: "ops", Merge: MergeSum}, "twice"},
		{Info{Name: "Put.Ops", Merge: MergeSum}, "lower-case word"},
		{Info{Name: "", Merge: MergeSum}, "lower-case word"},
		{Info{Name: "x", Merge: "median"}, "unknown merge"},
	} {
		err := r.Register(fakeModule{c.info})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Register(%+v) = %v, want %q", c.info, err, c.want)
		}
	}
	if err := r.Register(fakeModule{Info{Name: "custom_metric", Unit: policy.KindCount, Merge: MergeMax}}); err != nil {
		t.Fatal(err)
	}
	if in, ok := r.Lookup("custom_metric"); !ok || in.Merge != MergeMax {
		t.Fatalf("lookup: %+v %v", in, ok)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("NewRegistry with a duplicate did not panic")
		}
	}()
	NewRegistry(Ops(), Ops())
}

func TestParseTarget(t *testing.T) {
	for in, want := range map[string]Target{
		"tenant:t1":           TenantTarget("t1"),
		"bucket:t1/b1":        BucketTarget("t1", "b1"),
		"object:t1/b1/a/b//c": ObjectTarget("t1", "b1", "a/b//c"),
		"volume:v1":           VolumeTarget("v1"),
	} {
		got, err := ParseTarget(in)
		if err != nil || got != want || got.String() != in {
			t.Errorf("ParseTarget(%q) = %+v, %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "t1", "tenant:", "tenant:t1/b1", "bucket:t1", "bucket:t1/", "bucket:t1/b1/k", "object:t1/b1", "object:t1/b1/", "volume:", "volume:a/b", "disk:d1"} {
		if _, err := ParseTarget(bad); err == nil {
			t.Errorf("ParseTarget(%q) accepted", bad)
		}
	}
	if got := ObjectTarget("t1", "my.bucket", "a b.txt").subjectTokens(); got != "object.t1/my%2Ebucket/a%20b%2Etxt" {
		t.Errorf("subject tokens %q", got)
	}
}
