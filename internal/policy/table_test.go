package policy

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/facet-sds/facet/internal/filter"
)

func compile(t testing.TB, text string, groups map[string][]string) *Compiled {
	t.Helper()
	ps, err := ParseAndCheck("pol", text, testVocab())
	if err != nil {
		t.Fatal(err)
	}
	c, err := Compile(ps, groups)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// pipeline renders a resolution as "gateway: a b | storage: c", with the
// parameters of steps whose filter is in show.
func pipeline(r Resolution, show ...string) string {
	var parts []string
	for _, st := range []struct {
		name  string
		steps []Step
	}{{"gateway", r.Gateway}, {"storage", r.Storage}} {
		var names []string
		for _, s := range st.steps {
			n := s.Filter
			for _, f := range show {
				if f == s.Filter {
					keys := make([]string, 0, len(s.Params))
					for k := range s.Params {
						keys = append(keys, k)
					}
					sort.Strings(keys)
					var kv []string
					for _, k := range keys {
						kv = append(kv, k+"="+s.Params[k])
					}
					n += "(" + strings.Join(kv, ",") + ")"
				}
			}
			if s.Callable {
				n += "*"
			}
			if s.Stage != filter.Stage(st.name) {
				n += "!wrong-stage"
			}
			names = append(names, n)
		}
		parts = append(parts, st.name+": "+strings.Join(names, " "))
	}
	return strings.Join(parts, " | ")
}

func q(tenant, bucket, key string) Query {
	return Query{Tenant: tenant, Bucket: bucket, Key: key, Size: -1}
}

// TestCrystalScenario is seeds/001 §6: P1 encrypts tenant T1's objects at
// the storage stage, P2 adds compression at the proxy (pipelining), P3
// removes compression for container C1 only.
func TestCrystalScenario(t *testing.T) {
	c := compile(t, `P1: FOR TENANT T1 DO SET ENCRYPTION ON OBJECT
P2: FOR TENANT T1 DO SET COMPRESSION ON PROXY
P3: FOR CONTAINER T1/C1 DO DELETE COMPRESSION`, nil)
	tb := c.Static()
	if got, want := pipeline(tb.Resolve(q("T1", "C2", "x"))), "gateway: compression | storage: encryption"; got != want {
		t.Errorf("C2: %s, want %s", got, want)
	}
	if got, want := pipeline(tb.Resolve(q("T1", "C1", "x"))), "gateway:  | storage: encryption"; got != want {
		t.Errorf("C1: %s, want %s", got, want)
	}
	if got := pipeline(tb.Resolve(q("t2", "C1", "x"))); got != "gateway:  | storage: " {
		t.Errorf("another tenant: %s", got)
	}
	r := tb.Resolve(q("T1", "C2", "x"))
	if s := r.Gateway[0]; s.PolicyID != "P2" || s.PolicyName != "P2" || s.Line != 2 || s.Target != "TENANT T1" || s.Level != LevelTenant || s.Info == nil || s.Info.Name != "compression" {
		t.Errorf("step = %+v", s)
	}
	if len(c.Warnings) != 0 {
		t.Errorf("warnings: %v", c.Warnings)
	}
	ex := tb.Explain(q("T1", "C1", "x"))
	if len(ex.Dropped) != 1 {
		t.Fatalf("dropped = %+v", ex.Dropped)
	}
	d := ex.Dropped[0]
	if d.Filter != "compression" || d.Reason != DropDeleted || d.By == nil || d.By.ID != "P3" || d.By.Level != LevelBucket || d.By.Target != "CONTAINER T1/C1" ||
		d.Detail != "deleted by policy P3 (line 3) at bucket level (CONTAINER T1/C1)" {
		t.Errorf("dropped = %+v", d)
	}
}

func TestSpecializationPerFilter(t *testing.T) {
	c := compile(t, `FOR TENANT t1 DO SET compression, SET encryption
FOR BUCKET t1/b1 DO DELETE compression`, nil)
	tb := c.Static()
	if got := pipeline(tb.Resolve(q("t1", "b1", "k"))); got != "gateway:  | storage: encryption" {
		t.Errorf("bucket deletes only compression; encryption still inherited: %s", got)
	}
	if got := pipeline(tb.Resolve(q("t1", "b2", "k"))); got != "gateway: compression | storage: encryption" {
		t.Errorf("other bucket: %s", got)
	}
}

func TestObjectOverridesTenantParams(t *testing.T) {
	c := compile(t, `FOR TENANT t1 DO SET compression WITH level=3
FOR OBJECT t1/b1/big.bin DO SET compression WITH level=9`, nil)
	tb := c.Static()
	if got := pipeline(tb.Resolve(q("t1", "b1", "big.bin")), "compression"); got != "gateway: compression(engine=zstd,frame=1048576,level=9) | storage: " {
		t.Errorf("object: %s", got)
	}
	if got := pipeline(tb.Resolve(q("t1", "b1", "other")), "compression"); got != "gateway: compression(engine=zstd,frame=1048576,level=3) | storage: " {
		t.Errorf("other key: %s", got)
	}
	r := tb.Resolve(q("t1", "b1", "big.bin"))
	if r.Gateway[0].Level != LevelObject || r.Gateway[0].PolicyID != "#2" {
		t.Errorf("step = %+v", r.Gateway[0])
	}
}

// TestLevels sets the same filter at every level and checks that the
// most specific one covering a request wins.
func TestLevels(t *testing.T) {
	groups := map[string][]string{"gold": {"t1", "t2/b1"}}
	c := compile(t, `FOR OBJECT t1/b1/k DO SET compression WITH level=5
FOR BUCKET t1/b1 DO SET compression WITH level=4
FOR TENANT t1 DO SET compression WITH level=3
FOR G:gold DO SET compression WITH level=2
FOR ALL DO SET compression WITH level=1`, groups)
	tb := c.Static()
	tests := []struct {
		q     Query
		level string
		lvl   Level
	}{
		{q("t1", "b1", "k"), "5", LevelObject},
		{q("t1", "b1", "other"), "4", LevelBucket},
		{q("t1", "b2", "k"), "3", LevelTenant},
		{q("t2", "b1", "k"), "2", LevelGroup},
		{q("t2", "b2", "k"), "1", LevelAll},
		{q("acme", "logs", "k"), "1", LevelAll},
	}
	for _, tt := range tests {
		r := tb.Resolve(tt.q)
		if len(r.Gateway) != 1 || r.Gateway[0].Params["level"] != tt.level || r.Gateway[0].Level != tt.lvl {
			t.Errorf("%+v: %s at %v", tt.q, pipeline(r, "compression"), r.Gateway)
		}
	}
	// Declaration order does not matter between levels: the reverse
	// order resolves the same.
	c2 := compile(t, `FOR ALL DO SET compression WITH level=1
FOR G:gold DO SET compression WITH level=2
FOR TENANT t1 DO SET compression WITH level=3
FOR BUCKET t1/b1 DO SET compression WITH level=4
FOR OBJECT t1/b1/k DO SET compression WITH level=5`, groups)
	for _, tt := range tests {
		if got := c2.Static().Resolve(tt.q).Gateway[0].Params["level"]; got != tt.level {
			t.Errorf("reversed %+v: level %s, want %s", tt.q, got, tt.level)
		}
	}
}

func TestGroupsAndAll(t *testing.T) {
	groups := map[string][]string{"web": {"t1", "t2/b1"}, "empty": nil}
	c := compile(t, `FOR G:web DO SET caching
FOR ALL TENANTS DO SET noop
FOR TENANT t1 DO DELETE caching
FOR GROUP web DO DELETE noop`, groups)
	tb := c.Static()
	tests := []struct {
		q    Query
		want string
	}{
		{q("t1", "b1", "k"), "gateway:  | storage: "},          // tenant DELETE beats group SET; group DELETE beats ALL
		{q("t2", "b1", "k"), "gateway: caching | storage: "},   // bucket member of the group
		{q("t2", "b2", "k"), "gateway: noop | storage: "},      // not in the group: ALL
		{q("new", "bucket", "k"), "gateway: noop | storage: "}, // a tenant no policy names
	}
	for _, tt := range tests {
		if got := pipeline(tb.Resolve(tt.q)); got != tt.want {
			t.Errorf("%+v: %s, want %s", tt.q, got, tt.want)
		}
	}
}

func TestSameLevelLaterWins(t *testing.T) {
	c := compile(t, `FOR TENANT t1 DO SET compression WITH level=3
FOR TENANT t1 DO SET compression WITH level=5`, nil)
	if got := c.Static().Resolve(q("t1", "b", "k")).Gateway[0].Params["level"]; got != "5" {
		t.Errorf("level = %s, want the later policy's 5", got)
	}
	c = compile(t, `FOR TENANT t1 DO SET compression WITH level=3
FOR TENANT t1 DO DELETE compression
FOR TENANT t2 DO DELETE compression
FOR TENANT t2 DO SET compression`, nil)
	if got := pipeline(c.Static().Resolve(q("t1", "b", "k"))); got != "gateway:  | storage: " {
		t.Errorf("t1: %s", got)
	}
	if got := pipeline(c.Static().Resolve(q("t2", "b", "k"))); got != "gateway: compression | storage: " {
		t.Errorf("t2: %s", got)
	}
}

func TestDeclarationOrder(t *testing.T) {
	c := compile(t, `FOR TENANT t1 DO SET noop ON storage, SET scanner ON storage
FOR TENANT t1 DO SET encryption ON gateway, SET compression ON storage
FOR ALL DO SET caching`, nil)
	// Steps run per stage in order of declaration (policy, then action),
	// whatever the level they come from.
	if got, want := pipeline(c.Static().Resolve(q("t1", "b", "k"))), "gateway: encryption caching | storage: noop scanner compression"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

func TestMethods(t *testing.T) {
	c := compile(t, "FOR TENANT t1 DO SET compression, SET caching, SET noop", nil)
	tb := c.Static()
	for m, want := range map[filter.Method]string{
		filter.MethodPut: "gateway: compression noop | storage: ",
		filter.MethodGet: "gateway: caching noop | storage: ",
		"":               "gateway: compression caching noop | storage: ",
	} {
		qq := q("t1", "b", "k")
		qq.Method = m
		if got := pipeline(tb.Resolve(qq)); got != want {
			t.Errorf("%q: %s, want %s", m, got, want)
		}
	}
	qq := q("t1", "b", "k")
	qq.Method = filter.MethodGet
	ex := tb.Explain(qq)
	if len(ex.Dropped) != 1 || ex.Dropped[0].Reason != DropMethod || ex.Dropped[0].Detail != "compression does not run on GET" {
		t.Errorf("dropped = %+v", ex.Dropped)
	}
}

func TestObjectConditions(t *testing.T) {
	c := compile(t, `docs: FOR TENANT t1 WHEN OBJECT_TYPE=DOCS DO SET compression
big: FOR TENANT t1 DO SET encryption TO OBJECT_SIZE >= 1MB
logs: FOR TENANT t1 WHEN OBJECT_NAME=*.log OR OBJECT_NAME="logs/[0-9]*" DO SET noop
tag: FOR TENANT t1 WHEN OBJECT_TAG=x-amz-meta-Class:cold AND OBJECT_TAG=keep DO SET scanner
notimg: FOR TENANT t1 WHEN OBJECT_TYPE != IMAGES DO SET caching CALLABLE`, nil)
	tb := c.Static()
	tests := []struct {
		name string
		q    Query
		want string
	}{
		{"doc by extension", Query{Tenant: "t1", Key: "a/report.PDF", Size: 10}, "gateway: compression caching* | storage: "},
		{"doc by content type", Query{Tenant: "t1", Key: "a/report", ContentType: "application/pdf; charset=binary", Size: 10}, "gateway: compression caching* | storage: "},
		{"doc by media type prefix", Query{Tenant: "t1", Key: "x", ContentType: "application/vnd.openxmlformats-officedocument.wordprocessingml.document", Size: 10}, "gateway: compression caching* | storage: "},
		{"image", Query{Tenant: "t1", Key: "cat.jpg", ContentType: "image/jpeg", Size: 10}, "gateway:  | storage: "},
		{"image by content type only", Query{Tenant: "t1", Key: "cat", ContentType: "IMAGE/png", Size: 10}, "gateway:  | storage: "},
		{"big", Query{Tenant: "t1", Key: "x.bin", Size: 1_000_000}, "gateway: caching* | storage: encryption"},
		{"just under", Query{Tenant: "t1", Key: "x.bin", Size: 999_999}, "gateway: caching* | storage: "},
		{"unknown size", Query{Tenant: "t1", Key: "x.bin", Size: -1}, "gateway: caching* | storage: "},
		{"log glob crosses slashes", Query{Tenant: "t1", Key: "var/log/app.log", Size: 0}, "gateway: noop caching* | storage: "},
		{"second glob", Query{Tenant: "t1", Key: "logs/2024/x", Size: 0}, "gateway: noop caching* | storage: "},
		{"glob miss", Query{Tenant: "t1", Key: "logs/x", Size: 0}, "gateway: caching* | storage: "},
		{"tags", Query{Tenant: "t1", Key: "x", Size: 0, Tags: map[string]string{"class": "cold", "keep": ""}}, "gateway: scanner caching* | storage: "},
		{"tag value differs", Query{Tenant: "t1", Key: "x", Size: 0, Tags: map[string]string{"class": "hot", "keep": "1"}}, "gateway: caching* | storage: "},
		{"other tenant", Query{Tenant: "t2", Key: "a.pdf", Size: 1 << 30}, "gateway:  | storage: "},
	}
	for _, tt := range tests {
		if got := pipeline(tb.Resolve(tt.q)); got != tt.want {
			t.Errorf("%s: %s, want %s", tt.name, got, tt.want)
		}
	}
	ex := tb.Explain(Query{Tenant: "t1", Key: "cat.jpg", Size: 10})
	reasons := map[string]string{}
	for _, d := range ex.Dropped {
		if d.Reason != DropCondition {
			t.Errorf("dropped %s: %s", d.Filter, d.Reason)
		}
		reasons[d.Filter] = d.Detail
	}
	if reasons["compression"] != "object condition OBJECT_TYPE=DOCS is false for this request" ||
		reasons["encryption"] != "object condition OBJECT_SIZE>=1MB is false for this request" ||
		reasons["caching"] != "object condition OBJECT_TYPE!=IMAGES is false for this request" {
		t.Errorf("reasons = %v", reasons)
	}
}

// TestConditionalOverride: a more specific entry whose object condition is
// false does not apply, so the broader entry for the filter does.
func TestConditionalOverride(t *testing.T) {
	c := compile(t, `FOR TENANT t1 DO SET compression WITH level=3
FOR BUCKET t1/b1 DO SET compression WITH level=9 TO OBJECT_TYPE=LOGS
FOR BUCKET t1/b1 DO DELETE compression TO OBJECT_TYPE=IMAGES`, nil)
	tb := c.Static()
	for key, want := range map[string]string{
		"a.log": "gateway: compression(engine=zstd,frame=1048576,level=9) | storage: ",
		"a.png": "gateway:  | storage: ",
		"a.bin": "gateway: compression(engine=zstd,frame=1048576,level=3) | storage: ",
	} {
		if got := pipeline(tb.Resolve(q("t1", "b1", key)), "compression"); got != want {
			t.Errorf("%s: %s, want %s", key, got, want)
		}
	}
}

func TestBareBucket(t *testing.T) {
	c := compile(t, `FOR TENANT t1 DO SET encryption
FOR BUCKET b1 DO SET compression
FOR BUCKET t2/b1 DO SET noop`, nil)
	tb := c.Static()
	tests := []struct {
		q    Query
		want string
	}{
		{q("t1", "b1", "k"), "gateway: compression | storage: encryption"}, // tenant view + bare entry merged at request time
		{q("t2", "b1", "k"), "gateway: compression noop | storage: "},      // precomputed bucket view includes the bare entry
		{q("t3", "b1", "k"), "gateway: compression | storage: "},
		{q("t1", "b2", "k"), "gateway:  | storage: encryption"},
	}
	for _, tt := range tests {
		if got := pipeline(tb.Resolve(tt.q)); got != tt.want {
			t.Errorf("%+v: %s, want %s", tt.q, got, tt.want)
		}
	}
}

func TestDynamicPolicies(t *testing.T) {
	c := compile(t, `static: FOR TENANT t1 DO SET encryption
hot: FOR TENANT t1 WHEN get_ops > 5 AND OBJECT_SIZE < 10MB DO SET caching TRANSIENT
slow: FOR ALL WHEN put_bw < 10MBps OR put_lat > 300ms DO SET compression`, nil)
	dyn := c.Dynamic()
	if len(dyn) != 2 || dyn[0].ID != "hot" || dyn[1].ID != "slow" {
		t.Fatalf("dynamic = %v", dyn)
	}
	if !reflect.DeepEqual(dyn[0].Metrics, []string{"get_ops"}) || !reflect.DeepEqual(dyn[1].Metrics, []string{"put_bw", "put_lat"}) {
		t.Errorf("metrics = %v, %v", dyn[0].Metrics, dyn[1].Metrics)
	}
	small := Query{Tenant: "t1", Bucket: "b", Key: "k", Size: 100}
	if got := pipeline(c.Static().Resolve(small)); got != "gateway:  | storage: encryption" {
		t.Errorf("dynamic policies are not in the static table: %s", got)
	}
	tb, err := c.Table("hot")
	if err != nil {
		t.Fatal(err)
	}
	if got := pipeline(tb.Resolve(small)); got != "gateway: caching | storage: encryption" {
		t.Errorf("activated: %s", got)
	}
	if got := pipeline(tb.Resolve(Query{Tenant: "t1", Key: "k", Size: 100 << 20})); got != "gateway:  | storage: encryption" {
		t.Errorf("activated, object condition false: %s", got)
	}
	if !tb.Active("hot") || tb.Active("slow") || !tb.Active("static") || c.Static().Active("hot") {
		t.Error("Active is wrong")
	}
	ex := c.Static().Explain(small)
	if len(ex.Dropped) != 2 || ex.Dropped[0].Reason != DropInactive ||
		ex.Dropped[0].Detail != "dynamic policy hot is not active: a controller activates it while get_ops > 5 holds" {
		t.Errorf("dropped = %+v", ex.Dropped)
	}
	if _, err := c.Table("nope"); err == nil || err.Error() != `policy: no policy "nope" to activate` {
		t.Errorf("unknown id: %v", err)
	}
	if _, err := c.Table("static"); err == nil || err.Error() != `policy: policy "static" is static and always active` {
		t.Errorf("static id: %v", err)
	}
	vals := map[string]float64{"get_ops": 6, "put_bw": 20e6, "put_lat": 0.5}
	get := func(m string) (float64, bool) { v, ok := vals[m]; return v, ok }
	if !EvalMetrics(dyn[0].Trigger, get) || !EvalMetrics(dyn[1].Trigger, get) {
		t.Error("triggers should hold")
	}
	vals["get_ops"], vals["put_lat"] = 5, 0.3
	if EvalMetrics(dyn[0].Trigger, get) || EvalMetrics(dyn[1].Trigger, get) {
		t.Error("triggers should not hold")
	}
	delete(vals, "put_bw")
	vals["put_lat"] = 1
	if !EvalMetrics(dyn[1].Trigger, get) {
		t.Error("OR with one metric missing")
	}
}

func TestSLOs(t *testing.T) {
	groups := map[string][]string{"gold": {"t2", "t3/b1"}}
	c := compile(t, `FOR ALL TENANTS DO SET bandwidth WITH weight=1
FOR G:gold DO SET bandwidth WITH weight=5, reservation=100MB/s
FOR TENANT t1 DO SET bandwidth WITH get=30MB/s, put=10MB/s
FOR TENANT t2 DO DELETE bandwidth
FOR VOLUME v1 DO SET throttle WITH read_bw=3MB/s, read_iops=3000
busy: FOR TENANT t3 WHEN ops > 100 DO SET bandwidth WITH limit=1MB/s`, groups)
	tb := c.Static()
	for name, want := range map[string]string{"t1": "get=30000000 put=10000000", "t2": "", "t3": "weight=1", "acme": "weight=1"} {
		s, ok := tb.SLO(SLOBandwidth, name)
		got := ""
		if ok {
			var kv []string
			for k, v := range s.Params {
				kv = append(kv, k+"="+v)
			}
			sort.Strings(kv)
			got = strings.Join(kv, " ")
		}
		if got != want {
			t.Errorf("SLO(%s) = %q, want %q", name, got, want)
		}
	}
	if s, ok := tb.SLO(SLOThrottle, "v1"); !ok || s.Params["read_bw"] != "3000000" || s.Params["read_iops"] != "3000" || s.Level != LevelVolume {
		t.Errorf("throttle = %+v", s)
	}
	if _, ok := tb.SLO(SLOThrottle, "v2"); ok {
		t.Error("v2 has no throttle")
	}
	if got := len(tb.SLOs()); got != 5 { // ALL, gold's tenant t2, t1, t2's DELETE, v1; not the dynamic one
		t.Errorf("SLOs = %d: %+v", got, tb.SLOs())
	}
	act, err := c.Table("busy")
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := act.SLO(SLOBandwidth, "t3"); !ok || s.Params["limit"] != "1000000" || !s.Dynamic {
		t.Errorf("activated SLO = %+v", s)
	}
	if pipeline(tb.Resolve(q("t1", "b", "k"))) != "gateway:  | storage: " {
		t.Error("SLOs are not pipeline steps")
	}
	found := false
	for _, w := range c.Warnings {
		if w.Msg == "policy #2 (line 2): bandwidth is per tenant, so bucket t3/b1 of group gold is left out" {
			found = true
		}
	}
	if !found {
		t.Errorf("warnings = %v", c.Warnings)
	}
}

func TestVolumes(t *testing.T) {
	c := compile(t, `FOR ALL VOLUMES DO SET xor
FOR VOLUME v1 DO SET encryption
FOR VOLUME v2 DO DELETE xor`, nil)
	tb := c.Static()
	if got := pipeline(tb.ResolveVolume("v1", filter.MethodPut)); got != "gateway:  | storage: xor encryption" {
		t.Errorf("v1: %s", got)
	}
	if got := pipeline(tb.ResolveVolume("v2", filter.MethodPut)); got != "gateway:  | storage: " {
		t.Errorf("v2: %s", got)
	}
	if got := pipeline(tb.ResolveVolume("v9", "")); got != "gateway:  | storage: xor" {
		t.Errorf("v9: %s", got)
	}
	if got := pipeline(tb.Resolve(q("t1", "b", "k"))); got != "gateway:  | storage: " {
		t.Errorf("volume policies do not reach objects: %s", got)
	}
}

func TestExplainOverridden(t *testing.T) {
	c := compile(t, `a: FOR TENANT t1 DO SET compression WITH level=3
b: FOR TENANT t1 DO SET compression WITH level=4
c: FOR BUCKET t1/b1 DO SET compression WITH level=5
d: FOR ALL DO DELETE compression`, nil)
	ex := c.Static().Explain(q("t1", "b1", "k"))
	var got []string
	for _, d := range ex.Dropped {
		got = append(got, fmt.Sprintf("%s %s: %s", d.PolicyID, d.Reason, d.Detail))
	}
	want := []string{
		"a overridden: overridden by policy c (line 3) at bucket level (BUCKET t1/b1)",
		"b overridden: overridden by policy c (line 3) at bucket level (BUCKET t1/b1)",
		"d overridden: overridden by policy c (line 3) at bucket level (BUCKET t1/b1)",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("dropped:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	ex = c.Static().Explain(q("t1", "b2", "k"))
	if len(ex.Dropped) != 2 || ex.Dropped[0].Detail != "overridden by policy b (line 2), declared later at the same tenant level (TENANT t1)" {
		t.Errorf("dropped = %+v", ex.Dropped)
	}
	if ex.Dropped[1].PolicyID != "d" || !ex.Dropped[1].Delete || ex.Dropped[1].Params != nil {
		t.Errorf("the losing DELETE = %+v", ex.Dropped[1])
	}
}

func TestCompileErrorsAndIDs(t *testing.T) {
	ps, err := Parse("", "FOR TENANT t1 DO SET noop")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Compile(ps, nil); err == nil || err.Error() != "policy: policy 1 was not checked" {
		t.Errorf("unchecked: %v", err)
	}
	ps, err = ParseAndCheck("", "x: FOR TENANT t1 DO SET noop\nFOR TENANT t2 DO SET noop\nx: FOR TENANT t2 DO SET noop", testVocab())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Compile(ps, nil); err == nil || err.Error() != `policy: duplicate policy id "x"` {
		t.Errorf("duplicate: %v", err)
	}
	ps[2].ID = "p-3"
	c, err := Compile(ps, nil)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, p := range c.Policies {
		ids = append(ids, p.ID)
	}
	if !reflect.DeepEqual(ids, []string{"x", "#2", "p-3"}) {
		t.Errorf("ids = %v", ids)
	}
	if p, ok := c.Policy("p-3"); !ok || p.Policy != ps[2] {
		t.Errorf("Policy(p-3) = %v", p)
	}
	if _, err := Compile(ps, map[string][]string{"g": {"t1/b1/k"}}); err == nil || err.Error() != `policy: group "g": member "t1/b1/k" is neither TENANT nor TENANT/BUCKET` {
		t.Errorf("bad member: %v", err)
	}
}

// propertyPolicies exercise every level, DELETE, conditions, groups,
// bare buckets and dynamic policies together.
const propertyPolicies = `FOR ALL DO SET noop
FOR ALL DO SET compression WITH level=1 TO OBJECT_SIZE > 100
FOR G:gold DO SET encryption, DELETE noop
FOR G:gold DO SET caching TO OBJECT_TYPE=IMAGES
FOR TENANT t1 DO SET compression WITH level=2, SET scanner ON storage
FOR TENANT t2 WHEN OBJECT_NAME=*.log DO DELETE compression
FOR TENANT t2 DO SET caching WITH ttl=1m
FOR BUCKET t1/b1 DO DELETE encryption TO OBJECT_TAG=public
FOR BUCKET b2 DO SET compression WITH level=7 TO OBJECT_TYPE=LOGS
FOR BUCKET t2/b2 DO SET noop
FOR OBJECT t1/b1/a.log DO SET compression WITH level=9
FOR OBJECT t2/b1/x.png DO DELETE caching
d1: FOR TENANT t1 WHEN get_ops > 1 DO SET caching WITH ttl=2m
d2: FOR ALL WHEN put_bw > 1MB/s AND OBJECT_SIZE < 1000 DO SET encryption ON gateway`

// TestResolveMatchesExplain checks the fast path against the slow one on
// random requests, with and without dynamic policies active.
func TestResolveMatchesExplain(t *testing.T) {
	c := compile(t, propertyPolicies, map[string][]string{"gold": {"t2", "t1/b2"}})
	tables := []*Table{c.Static()}
	for _, ids := range [][]string{{"d1"}, {"d2"}, {"d1", "d2"}} {
		tb, err := c.Table(ids...)
		if err != nil {
			t.Fatal(err)
		}
		tables = append(tables, tb)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	for i := 0; i < 5000; i++ {
		qq := Query{
			Tenant: pick("t1", "t2", "t3", ""), Bucket: pick("b1", "b2", "b3"),
			Key:         pick("a.log", "x.png", "doc.pdf", "k", "dir/a.log"),
			Size:        []int64{-1, 0, 50, 500, 5000}[rng.IntN(5)],
			ContentType: pick("", "image/png", "text/plain"),
			Method:      filter.Method(pick("", "PUT", "GET")),
		}
		if rng.IntN(2) == 0 {
			qq.Tags = map[string]string{"public": "yes"}
		}
		for ti, tb := range tables {
			fast, slow := tb.Resolve(qq), tb.Explain(qq).Resolution
			if !reflect.DeepEqual(fast, slow) {
				t.Fatalf("table %d, %+v:\nResolve: %s\nExplain: %s", ti, qq, pipeline(fast, "compression"), pipeline(slow, "compression"))
			}
		}
	}
}

// TestExplainOneActionManyTargets: an action that reaches a request
// through several targets is reported once, not as overriding itself.
func TestExplainOneActionManyTargets(t *testing.T) {
	c := compile(t, `FOR TENANT t1, BUCKET t1/b1 DO SET noop
FOR G:web DO SET compression TO OBJECT_TYPE=DOCS`, map[string][]string{"web": {"t1", "t1/b1"}})
	ex := c.Static().Explain(q("t1", "b1", "x.bin"))
	if got := pipeline(ex.Resolution); got != "gateway: noop | storage: " {
		t.Errorf("pipeline = %s", got)
	}
	if len(ex.Dropped) != 1 || ex.Dropped[0].Filter != "compression" || ex.Dropped[0].Reason != DropCondition {
		t.Errorf("dropped = %+v", ex.Dropped)
	}
	if s := ex.Resolution.Gateway[0]; s.Level != LevelBucket || s.Target != "BUCKET t1/b1" {
		t.Errorf("the most specific target is the one reported: %+v", s)
	}
	js, err := json.Marshal(ex)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"resolution":{"gateway":[{"filter":"noop","stage":"gateway","policyId":"#1","line":1,"target":"BUCKET t1/b1","level":"bucket"}],"storage":[]},` +
		`"dropped":[{"filter":"compression","params":{"engine":"zstd","frame":"1048576","level":"3"},"stage":"gateway","policyId":"#2","line":2,"target":"G:web","level":"group","reason":"condition","detail":"object condition OBJECT_TYPE=DOCS is false for this request"}]}`
	if string(js) != want {
		t.Errorf("JSON:\n%s\nwant:\n%s", js, want)
	}
}
