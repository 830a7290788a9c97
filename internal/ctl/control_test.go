package ctl

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/facet-sds/facet/internal/admin"
	"github.com/facet-sds/facet/internal/meta"
)

// langFake is a stand-in policy language for the CLI's tests: a line is a
// policy; the word "compresion" is an unknown filter (with a suggestion),
// "WHEN" makes a policy pending. Valid texts are stored in the real store.
type langFake struct {
	store *meta.Store
	mu    sync.Mutex
	asked []admin.ExplainQuery
}

func (l *langFake) Validate(_ context.Context, text string) (admin.ValidateResult, error) {
	var res admin.ValidateResult
	for i, line := range strings.Split(text, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		if b := strings.Index(line, "compresion"); b >= 0 {
			res.Errors = append(res.Errors, admin.Diagnostic{Line: i + 1, Column: len([]rune(line[:b])) + 1,
				Message: `unknown filter "compresion"`, Source: line, Suggestion: "compression"})
			continue
		}
		s := admin.PolicySummary{Line: i + 1, Text: line, State: "active"}
		if strings.Contains(line, "WHEN") {
			s.State, s.Reason = "pending", "metric conditions are not executed yet"
		}
		res.Policies = append(res.Policies, s)
	}
	res.Valid = len(res.Errors) == 0
	return res, nil
}

func (l *langFake) Apply(ctx context.Context, text string) ([]meta.Policy, admin.ValidateResult, error) {
	res, err := l.Validate(ctx, text)
	if err != nil || !res.Valid {
		return nil, res, err
	}
	var nps []meta.NewPolicy
	for _, s := range res.Policies {
		nps = append(nps, meta.NewPolicy{Text: s.Text, Line: s.Line, State: meta.PolicyState(s.State), Reason: s.Reason})
	}
	ps, err := l.store.AddPolicies(ctx, nps)
	return ps, res, err
}

func (l *langFake) Explain(_ context.Context, q admin.ExplainQuery) (admin.Explanation, error) {
	l.mu.Lock()
	l.asked = append(l.asked, q)
	l.mu.Unlock()
	return admin.Explanation{
		Tenant: q.Tenant, Bucket: q.Bucket, Key: q.Key, Version: 3,
		Pipelines: []admin.Pipeline{
			{Method: "PUT", Stage: "gateway", Filters: []admin.ExplainStep{
				{Filter: "compression", Params: map[string]string{"level": "3", "engine": "zstd"}, Policy: "p2", Level: "tenant", Target: "TENANT t1"},
			}},
			{Method: "PUT", Stage: "storage", Filters: []admin.ExplainStep{
				{Filter: "encryption", Policy: "p1", PolicyName: "crypt", Level: "group", Target: "GROUP gold"},
			}},
			{Method: "GET", Stage: "storage"},
		},
		Removed: []admin.ExplainStep{{Filter: "noop", Policy: "p3", Level: "all", Target: "ALL", Note: "DELETE noop by p4 on BUCKET t1/docs"}},
		Pending: []string{"p5"},
	}, nil
}

func (l *langFake) Filters(context.Context) ([]admin.FilterInfo, error) {
	lo, hi := 1.0, 22.0
	return []admin.FilterInfo{
		{Name: "compression", Version: 1, Kind: "native", Methods: []string{"PUT", "GET"}, Stages: []string{"gateway", "storage"}, Reversible: true,
			Params: []admin.FilterParam{
				{Name: "engine", Type: "enum", Default: "zstd", Enum: []string{"gzip", "zstd", "lz4"}},
				{Name: "level", Type: "int", Default: "3", Min: &lo, Max: &hi, Doc: "engine level"},
			}},
		{Name: "noop", Version: 1, Kind: "native", Methods: []string{"PUT"}, Stages: []string{"gateway"}, Params: []admin.FilterParam{}},
	}, nil
}

type usageFake struct{}

func (usageFake) TenantUsage(context.Context, string) (admin.Usage, error) {
	return admin.Usage{StoredBytes: 400, LogicalBytes: 1000, Objects: 2}, nil
}

// newControlEnv is newEnv with a policy service and a usage source.
func newControlEnv(t *testing.T) (*env, *langFake) {
	t.Helper()
	lang := &langFake{}
	e := newEnvWith(t, func(st *meta.Store, cfg *admin.Config) {
		lang.store = st
		cfg.Policies, cfg.Usage = lang, usageFake{}
	})
	return e, lang
}

func lines(s string) []string { return strings.Split(strings.TrimRight(s, "\n"), "\n") }

func TestGroupCommands(t *testing.T) {
	e, _ := newControlEnv(t)
	out := mustOK(t, e.ctl(t, "group", "create", "gold", "t2", "t1/photos"))
	if l := lines(out); len(l) != 2 || strings.Join(strings.Fields(l[1]), " ") != "gold t1/photos,t2" {
		t.Fatalf("create: %q", out)
	}
	mustOK(t, e.ctl(t, "group", "create", "empty"))
	out = mustOK(t, e.ctl(t, "group", "add", "gold", "t3", "t1"))
	if !strings.Contains(out, "t1,t1/photos,t2,t3") {
		t.Fatalf("add: %q", out)
	}
	out = mustOK(t, e.ctl(t, "group", "remove", "gold", "t2", "t1"))
	if !strings.Contains(out, "t1/photos,t3") {
		t.Fatalf("remove: %q", out)
	}
	out = mustOK(t, e.ctl(t, "group", "list"))
	if l := lines(out); len(l) != 3 || !strings.HasPrefix(l[0], "NAME") || !strings.HasPrefix(l[1], "empty ") || !strings.Contains(l[1], " - ") || !strings.HasPrefix(l[2], "gold ") {
		t.Fatalf("list: %q", out)
	}
	var g admin.Group
	decodeOne(t, mustOK(t, e.ctl(t, "group", "get", "gold", "-o", "json")), &g)
	if g.Name != "gold" || len(g.Members) != 2 {
		t.Fatalf("get: %+v", g)
	}

	r := e.ctl(t, "group", "remove", "gold", "t9")
	if r.err == nil || !strings.Contains(r.stderr, `"t9" is not in group "gold"`) {
		t.Fatalf("remove non-member: %v %q", r.err, r.stderr)
	}
	r = e.ctl(t, "group", "create", "bad", "T1")
	if r.err == nil || !strings.Contains(r.stderr, `invalid group member "T1"`) {
		t.Fatalf("bad member: %v %q", r.err, r.stderr)
	}
	if r := e.ctl(t, "group", "add", "gold"); r.err == nil || !strings.Contains(r.stdout+r.stderr, "Usage:") {
		t.Fatalf("add without members: %v", r.err)
	}
	m := oneJSONObject(t, mustOK(t, e.ctl(t, "group", "delete", "gold", "-o", "json")))
	if m["deleted"] != true || m["group"] != "gold" {
		t.Fatalf("delete: %v", m)
	}
	if _, err := e.store.GetGroup(t.Context(), "gold"); err == nil {
		t.Fatal("group survived delete")
	}
}

func TestPolicyAddListDelete(t *testing.T) {
	ctx := t.Context()
	e, _ := newControlEnv(t)

	out := mustOK(t, e.ctl(t, "policy", "add", "FOR TENANT t1 DO SET compression WITH engine=gzip"))
	if l := lines(out); len(l) != 2 || strings.Join(strings.Fields(l[1]), " ") != "p1 - active FOR TENANT t1 DO SET compression WITH engine=gzip" {
		t.Fatalf("add: %q", out)
	}

	// A file of two policies, one with a metric condition.
	file := filepath.Join(t.TempDir(), "policies.txt")
	text := "FOR TENANT t1 DO SET encryption ON STORAGE\nFOR TENANT t2 WHEN get_ops > 5 DO SET compression\n"
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	var applied admin.PolicyApplied
	decodeOne(t, mustOK(t, e.ctl(t, "policy", "add", "-f", file, "-o", "json")), &applied)
	if len(applied.Policies) != 2 || applied.Policies[1].Line != 2 || applied.Policies[1].State != "pending" {
		t.Fatalf("add -f: %+v", applied)
	}

	// Standard input.
	cmd := NewCommand()
	cmd.SetArgs([]string{"--admin", e.url, "--token", token, "policy", "add", "-f", "-"})
	cmd.SetIn(strings.NewReader("FOR TENANT t3 DO SET noop\n"))
	var so, se strings.Builder
	cmd.SetOut(&so)
	cmd.SetErr(&se)
	if err := cmd.ExecuteContext(ctx); err != nil || !strings.Contains(so.String(), "p4") {
		t.Fatalf("add -f -: %v %q %q", err, so.String(), se.String())
	}

	// policy list says which are pending and why.
	out = mustOK(t, e.ctl(t, "policy", "list"))
	l := lines(out)
	if len(l) != 5 || !strings.HasPrefix(l[3], "p3 ") || !strings.Contains(l[3], "pending (metric conditions are not executed yet)") {
		t.Fatalf("list: %q", out)
	}
	if out := mustOK(t, e.ctl(t, "policy", "get", "p2")); !strings.Contains(out, "ON STORAGE") {
		t.Fatalf("get: %q", out)
	}
	mustOK(t, e.ctl(t, "policy", "delete", "p2"))
	if _, err := e.store.GetPolicy(ctx, "p2"); err == nil {
		t.Fatal("policy survived delete")
	}
	r := e.ctl(t, "policy", "delete", "p2")
	if r.err == nil || !strings.Contains(r.stderr, `policy "p2" does not exist (NoSuchPolicy)`) {
		t.Fatalf("second delete: %v %q", r.err, r.stderr)
	}

	for _, args := range [][]string{
		{"policy", "add"},
		{"policy", "add", "FOR ALL DO SET noop", "-f", file},
		{"policy", "add", "-f", filepath.Join(t.TempDir(), "missing")},
	} {
		if r := e.ctl(t, args...); r.err == nil {
			t.Fatalf("%v succeeded", args)
		}
	}
	if ps, _ := e.store.ListPolicies(ctx); len(ps) != 3 {
		t.Fatalf("%d policies stored", len(ps))
	}
}

// DSL errors are printed as the server gives them: position, source line,
// a caret under the column, the suggestion. Nothing is stored.
func TestPolicyErrorsPrinted(t *testing.T) {
	e, _ := newControlEnv(t)
	file := filepath.Join(t.TempDir(), "p.txt")
	if err := os.WriteFile(file, []byte("FOR TENANT t1 DO SET noop\n\tFOR TENANT t1 DO SET compresion WITH level=3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := e.ctl(t, "policy", "add", "-f", file)
	if r.err == nil || r.stdout != "" {
		t.Fatalf("invalid add: err %v, stdout %q", r.err, r.stdout)
	}
	// Column 23: the tab counts as one character, and stays a tab under it.
	want := file + ":2:23: error: unknown filter \"compresion\"\n" +
		"    \tFOR TENANT t1 DO SET compresion WITH level=3\n" +
		"    \t                     ^\n" +
		"    did you mean \"compression\"?\n"
	if !strings.HasPrefix(r.stderr, want) {
		t.Fatalf("stderr:\n%s\nwant it to start with:\n%s", r.stderr, want)
	}
	if !strings.Contains(r.err.Error(), "nothing was stored") {
		t.Fatalf("error %v", r.err)
	}
	if ps, _ := e.store.ListPolicies(t.Context()); len(ps) != 0 {
		t.Fatalf("an invalid text stored %d policies", len(ps))
	}

	// validate: the same diagnostics; exit status tells.
	r = e.ctl(t, "policy", "validate", "FOR TENANT t1 DO SET compresion")
	if r.err == nil || !strings.Contains(r.stderr, "<policy>:1:22: error: unknown filter \"compresion\"\n    FOR TENANT t1 DO SET compresion\n                         ^\n") {
		t.Fatalf("validate invalid: %v %q", r.err, r.stderr)
	}
	out := mustOK(t, e.ctl(t, "policy", "validate", "FOR TENANT t1 WHEN put_ops > 1 DO SET noop"))
	if !strings.Contains(out, "pending (metric conditions are not executed yet)") {
		t.Fatalf("validate valid: %q", out)
	}
	var vr admin.ValidateResult
	r = e.ctl(t, "policy", "validate", "FOR TENANT t1 DO SET compresion", "-o", "json")
	decodeOne(t, r.stdout, &vr)
	if r.err == nil || vr.Valid || len(vr.Errors) != 1 || vr.Errors[0].Column != 22 {
		t.Fatalf("validate -o json: %v %+v", r.err, vr)
	}
	if ps, _ := e.store.ListPolicies(t.Context()); len(ps) != 0 {
		t.Fatal("validate stored policies")
	}
}

func TestPolicyExplain(t *testing.T) {
	e, lang := newControlEnv(t)
	mustOK(t, e.ctl(t, "tenant", "create", "t1"))
	out := mustOK(t, e.ctl(t, "policy", "explain", "--tenant", "t1", "--bucket", "docs", "--key", "a/b c.pdf", "--size", "1.5MiB", "--type", "application/pdf"))
	lang.mu.Lock()
	got := lang.asked[len(lang.asked)-1]
	lang.mu.Unlock()
	if got != (admin.ExplainQuery{Tenant: "t1", Bucket: "docs", Key: "a/b c.pdf", Size: 1572864, Type: "application/pdf"}) {
		t.Fatalf("server was asked %+v", got)
	}
	l := lines(out)
	wantRows := []string{
		"METHOD STAGE # FILTER PARAMS POLICY LEVEL TARGET",
		"PUT gateway 1 compression engine=zstd,level=3 p2 tenant TENANT t1",
		"PUT storage 1 encryption - p1 (crypt) group GROUP gold",
		"GET storage - (none)",
		"removed: noop from p3 (all ALL): DELETE noop by p4 on BUCKET t1/docs",
		"pending (metric conditions, not activated): p5",
	}
	if len(l) != len(wantRows) {
		t.Fatalf("explain output:\n%s", out)
	}
	for i, w := range wantRows {
		if got := strings.Join(strings.Fields(l[i]), " "); got != w {
			t.Fatalf("explain line %d = %q, want %q", i, got, w)
		}
	}
	var ex admin.Explanation
	decodeOne(t, mustOK(t, e.ctl(t, "policy", "explain", "--tenant", "t1", "-o", "json")), &ex)
	if ex.Version != 3 || len(ex.Pipelines) != 3 {
		t.Fatalf("explain -o json: %+v", ex)
	}
	if r := e.ctl(t, "policy", "explain", "--bucket", "b"); r.err == nil || !strings.Contains(r.err.Error(), "tenant") {
		t.Fatalf("explain without --tenant: %v", r.err)
	}
	if r := e.ctl(t, "policy", "explain", "--tenant", "t1", "--size", "12 parsecs"); r.err == nil || !strings.Contains(r.err.Error(), "--size") {
		t.Fatalf("bad size: %v", r.err)
	}
	if r := e.ctl(t, "policy", "explain", "--tenant", "ghost"); r.err == nil || !strings.Contains(r.stderr, "NoSuchTenant") {
		t.Fatalf("unknown tenant: %v %q", r.err, r.stderr)
	}
}

func TestFilterCommands(t *testing.T) {
	e, _ := newControlEnv(t)
	l := lines(mustOK(t, e.ctl(t, "filter", "list")))
	if len(l) != 3 || strings.Join(strings.Fields(l[1]), " ") != "compression native 1 - PUT,GET gateway,storage true engine,level" ||
		strings.Join(strings.Fields(l[2]), " ") != "noop native 1 - PUT gateway false -" {
		t.Fatalf("filter list: %q", l)
	}
	out := mustOK(t, e.ctl(t, "filter", "show", "compression"))
	if !strings.Contains(out, "compression (native, version 1): methods PUT,GET, stages gateway,storage, reversible true") ||
		!strings.Contains(strings.Join(strings.Fields(out), " "), "level int 3 1..22 - engine level") ||
		!strings.Contains(out, "gzip,zstd,lz4") {
		t.Fatalf("filter show: %q", out)
	}
	var fi admin.FilterInfo
	decodeOne(t, mustOK(t, e.ctl(t, "filter", "show", "noop", "-o", "json")), &fi)
	if fi.Name != "noop" {
		t.Fatalf("filter show -o json: %+v", fi)
	}
	if r := e.ctl(t, "filter", "show", "nope"); r.err == nil || !strings.Contains(r.stderr, `filter "nope" does not exist`) {
		t.Fatalf("unknown filter: %v %q", r.err, r.stderr)
	}
}

func TestDataKeyAndUsageCommands(t *testing.T) {
	e, _ := newControlEnv(t)
	mustOK(t, e.ctl(t, "tenant", "create", "acme"))
	var before admin.DataKeys
	decodeOne(t, mustOK(t, e.ctl(t, "key", "data", "acme", "-o", "json")), &before)
	out := mustOK(t, e.ctl(t, "key", "rotate-data", "acme"))
	l := lines(out)
	if len(l) != 3 || !strings.HasPrefix(l[1], before.Current+" ") || strings.Contains(l[1], "current") || !strings.HasSuffix(l[2], "current") {
		t.Fatalf("rotate-data: %q", out)
	}
	dk, err := e.store.DataKeys(t.Context(), "acme")
	if err != nil || dk.Current == before.Current || !strings.HasPrefix(l[2], dk.Current+" ") {
		t.Fatalf("store after rotate: %+v %v", dk, err)
	}
	if r := e.ctl(t, "key", "rotate-data", "ghost"); r.err == nil || !strings.Contains(r.stderr, "NoSuchTenant") {
		t.Fatalf("rotate for unknown tenant: %v", r.err)
	}

	out = mustOK(t, e.ctl(t, "tenant", "usage", "acme"))
	if l := lines(out); len(l) != 2 || strings.Join(strings.Fields(l[1]), " ") != "acme 2 1000 400 600 60.0%" {
		t.Fatalf("usage: %q", out)
	}
	var u admin.TenantUsage
	decodeOne(t, mustOK(t, e.ctl(t, "tenant", "usage", "acme", "-o", "json")), &u)
	if u.Savings != 0.6 || u.StoredBytes != 400 {
		t.Fatalf("usage -o json: %+v", u)
	}
}

// Against a server without a policy service, the CLI reports 501 plainly.
func TestNotImplemented(t *testing.T) {
	e := newEnv(t)
	r := e.ctl(t, "policy", "validate", "FOR ALL DO SET noop")
	if r.err == nil || !strings.Contains(r.stderr, "NotImplemented") {
		t.Fatalf("%v %q", r.err, r.stderr)
	}
}

func TestCaretAndSize(t *testing.T) {
	for _, tc := range []struct {
		src  string
		col  int
		want string
	}{
		{"abc", 1, ""}, {"abc", 3, "  "}, {"\tab", 3, "\t "}, {"é€x", 3, "  "}, {"ab", 9, "  "},
	} {
		if got := caretPad(tc.src, tc.col); got != tc.want {
			t.Errorf("caretPad(%q, %d) = %q, want %q", tc.src, tc.col, got, tc.want)
		}
	}
	for in, want := range map[string]int64{"0": 0, "512": 512, "10MB": 10_000_000, "1.5GiB": 1610612736, "4 KiB": 4096, "2kb": 2000} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "MB", "-1", "1XB", "1e30TB"} {
		if _, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q) accepted", in)
		}
	}
}
