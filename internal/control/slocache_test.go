package control

import (
	"context"
	"crypto/rand"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/facet-sds/facet/internal/admin"
	"github.com/facet-sds/facet/internal/filter"
	"github.com/facet-sds/facet/internal/flowctx"
	"github.com/facet-sds/facet/internal/meta"
	"github.com/facet-sds/facet/internal/policy"
	"github.com/facet-sds/facet/internal/qos"
)

// contextPolicies is a policy table holding CONTEXT policies only:
// "tenant/class" -> SET bandwidth parameters.
type contextPolicies map[string]filter.Params

func (p contextPolicies) BandwidthSLO(string) (filter.Params, bool) { return nil, false }
func (p contextPolicies) BandwidthSLOs() []policy.SLO               { return nil }
func (p contextPolicies) ContextBandwidth(tenant, class string) (filter.Params, bool) {
	v, ok := p[tenant+"/"+class]
	return v, ok
}
func (p contextPolicies) ContextBandwidthSLOs() []policy.SLO {
	var out []policy.SLO
	for k, v := range p {
		t, c, _ := strings.Cut(k, "/")
		out = append(out, policy.SLO{Kind: policy.SLOBandwidth, Target: t, Context: c, Params: v, PolicyID: "p-" + c})
	}
	return out
}

// A class's SLO set through the API (?class=) is stored apart from the
// tenant's, replaces a CONTEXT policy's for that tenant and class while it
// exists (the rule of tenant records over SET bandwidth policies), reaches
// both enforcement points (the QoS limiter's ctx: flow and the class
// stage's limits), and deleting it gives the policy back.
func TestClassSLOThroughTheAPI(t *testing.T) {
	ctx := t.Context()
	mk := make([]byte, meta.MasterKeySize)
	if _, err := rand.Read(mk); err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.DiscardHandler)
	store, err := meta.Open(ctx, filepath.Join(t.TempDir(), meta.DefaultBoltFile), mk, logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	pol := contextPolicies{"t1/compaction": {"limit": "8000000"}}
	slos := NewSLOCache(MetaSLOs{store}, pol, logger)
	l := qos.NewLimiter(qos.LimiterConfig{Node: "n1", SLOs: slos, Logger: logger})
	api := NewSLOAPI(SLOAPIConfig{Store: MetaSLOs{store}, SLOs: slos, Limiter: l, Fleet: qos.NewFleet(time.Minute)})

	got, err := api.GetSLO(ctx, "t1", "compaction")
	if err != nil || got.Source != "policy" || got.Class != "compaction" || got.Limit != 8e6 {
		t.Fatalf("policy's class SLO: %+v, %v", got, err)
	}
	if lim, _, ok := slos.ClassLimits("t1", "compaction"); !ok || lim != 8e6 {
		t.Fatalf("class stage limit from the policy: %v %v", lim, ok)
	}

	// The API record wins over the policy, whole.
	got, err = api.PutSLO(ctx, "t1", "compaction", admin.SLOSpec{"limit": "2MB/s", "reservation": "1MB/s"})
	if err != nil || got.Source != "api" || got.Class != "compaction" || got.Limit != 2e6 || got.Reservation != 1e6 {
		t.Fatalf("put class SLO: %+v, %v", got, err)
	}
	if got, err := api.GetSLO(ctx, "t1", "compaction"); err != nil || got.Source != "api" || got.Limit != 2e6 {
		t.Fatalf("class SLO after put: %+v, %v", got, err)
	}
	if lim, res, ok := slos.ClassLimits("t1", "compaction"); !ok || lim != 2e6 || res != 1e6 {
		t.Fatalf("class stage limits from the API record: %v %v %v", lim, res, ok)
	}
	// The tenant's own SLO is another record: still none.
	if _, err := api.GetSLO(ctx, "t1", ""); !errors.Is(err, admin.ErrNoSuchSLO) {
		t.Fatalf("tenant SLO after a class put: %v", err)
	}
	// A class no policy names becomes a flow of its own once the API
	// gives it an SLO; the limiter runs it at the record's limit.
	if slos.HasClass("t1", "flush") {
		t.Fatal("flush has an SLO before any was set")
	}
	if _, err := api.PutSLO(ctx, "t1", "flush", admin.SLOSpec{"limit": "3MB/s"}); err != nil {
		t.Fatal(err)
	}
	rctx := flowctx.With(context.Background(), &flowctx.Request{Tenant: "t1", Class: "flush"})
	st, err := Admission{Limiter: l, SLOs: slos}.Admit(rctx, "t1", "GET")
	if err != nil {
		t.Fatal(err)
	}
	st.Done()
	var flush *qos.FlowStatus
	for _, f := range l.Report().Flows {
		if f.Tenant == "t1" && f.Class == qos.ContextClass("flush") {
			flush = &f
		}
	}
	if flush == nil || flush.Rate != 3e6 {
		t.Fatalf("limiter flow of t1/flush: %+v in %+v", flush, l.Report().Flows)
	}

	list, err := api.ListSLOs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, s := range list {
		rows = append(rows, s.Tenant+"/"+s.Class+":"+s.Source)
	}
	if strings.Join(rows, ",") != "t1/compaction:api,t1/flush:api" {
		t.Fatalf("list: %v (the policy's compaction SLO is replaced, not listed too)", rows)
	}

	// Bad input: each a precise ErrInvalidSLO.
	for _, c := range []struct {
		spec admin.SLOSpec
		want string
	}{
		{admin.SLOSpec{"limit": "-20MB/s"}, `limit="-20MB/s": must not be negative`},
		{admin.SLOSpec{"limit": -1.0}, `limit=-1: want a finite, non-negative number`},
		{admin.SLOSpec{"background": "5MB/s"}, "a request class has no background work"},
		{admin.SLOSpec{"get": "5MB/s", "limit": "20MB/s"}, "get: a request class's bytes are one flow in both directions; give its guaranteed rate as reservation"},
		{admin.SLOSpec{"put": "5MB/s"}, "put: a request class's bytes are one flow"},
		{admin.SLOSpec{"limit": "20 parsecs"}, `limit="20 parsecs"`},
	} {
		if _, err := api.PutSLO(ctx, "t1", "compaction", c.spec); !errors.Is(err, admin.ErrInvalidSLO) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("PutSLO(%v) = %v, want ErrInvalidSLO with %q", c.spec, err, c.want)
		}
	}
	if _, err := api.PutSLO(ctx, "Bad", "compaction", admin.SLOSpec{"limit": "1MB/s"}); !errors.Is(err, meta.ErrInvalidTenantName) {
		t.Errorf("bad tenant: %v", err)
	}

	// Deleting the record gives the policy's SLO back.
	if err := api.DeleteSLO(ctx, "t1", "compaction"); err != nil {
		t.Fatal(err)
	}
	if err := api.DeleteSLO(ctx, "t1", "compaction"); !errors.Is(err, admin.ErrNoSuchSLO) {
		t.Fatalf("second delete: %v", err)
	}
	if got, err := api.GetSLO(ctx, "t1", "compaction"); err != nil || got.Source != "policy" || got.Limit != 8e6 {
		t.Fatalf("class SLO after delete: %+v, %v", got, err)
	}
	if lim, _, ok := slos.ClassLimits("t1", "compaction"); !ok || lim != 8e6 {
		t.Fatalf("class stage limit after delete: %v %v", lim, ok)
	}
}
