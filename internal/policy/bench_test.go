package policy

import (
	"fmt"
	"strings"
	"testing"

	"github.com/facet-sds/facet/internal/filter"
)

// benchPolicies writes n policies over 200 tenants, 10 groups and every
// level, a tenth of them with object conditions.
func benchPolicies(n int) (string, map[string][]string) {
	var b strings.Builder
	groups := map[string][]string{}
	for g := 0; g < 10; g++ {
		for m := 0; m < 20; m++ {
			groups[fmt.Sprintf("g%d", g)] = append(groups[fmt.Sprintf("g%d", g)], fmt.Sprintf("t%d", g*20+m))
		}
	}
	b.WriteString("FOR ALL DO SET noop\nFOR ALL DO SET encryption ON storage TO OBJECT_SIZE > 1KB\n")
	for i := 2; i < n; i++ {
		t := i % 200
		switch i % 10 {
		case 0, 1:
			fmt.Fprintf(&b, "FOR TENANT t%d DO SET compression WITH level=%d ON gateway\n", t, 1+i%9)
		case 2, 3:
			fmt.Fprintf(&b, "FOR TENANT t%d DO SET encryption ON storage\n", t)
		case 4, 5:
			fmt.Fprintf(&b, "FOR BUCKET t%d/b%d DO DELETE compression\n", t, i%7)
		case 6:
			fmt.Fprintf(&b, "FOR BUCKET t%d/b%d DO SET compression WITH level=9 TO OBJECT_TYPE=LOGS\n", t, i%5)
		case 7:
			fmt.Fprintf(&b, "FOR OBJECT t%d/b%d/k%d DO SET compression WITH engine=gzip\n", t, i%5, i)
		case 8:
			fmt.Fprintf(&b, "FOR TENANT t%d WHEN OBJECT_TYPE=DOCS AND OBJECT_SIZE < 10MB DO SET scanner\n", t)
		case 9:
			fmt.Fprintf(&b, "FOR G:g%d DO SET caching WITH ttl=%dm\n", i%10, 1+i%30)
		}
	}
	return b.String(), groups
}

func benchTable(b *testing.B, text string, groups map[string][]string) *Table {
	v := testVocab()
	v.AnyTarget = true
	ps, err := ParseAndCheck("bench", text, v)
	if err != nil {
		b.Fatal(err)
	}
	c, err := Compile(ps, groups)
	if err != nil {
		b.Fatal(err)
	}
	return c.Static()
}

// BenchmarkResolve is the per-request cost with 1000 policies (goal:
// under 2µs).
func BenchmarkResolve(b *testing.B) {
	text, groups := benchPolicies(1000)
	tb := benchTable(b, text, groups)
	queries := []Query{
		{Tenant: "t17", Bucket: "b3", Key: "logs/app.log", Size: 4096, Method: filter.MethodPut},
		{Tenant: "t42", Bucket: "b0", Key: "report.pdf", Size: 1 << 20, ContentType: "application/pdf", Method: filter.MethodPut},
		{Tenant: "t7", Bucket: "b2", Key: "k7", Size: 100, Method: filter.MethodGet},
		{Tenant: "t199", Bucket: "new", Key: "x", Size: -1},
		{Tenant: "stranger", Bucket: "b", Key: "x", Size: 10},
	}
	for _, q := range queries {
		if tb.Resolve(q).Len() == 0 {
			b.Fatalf("%+v resolves to nothing", q)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tb.Resolve(queries[i%len(queries)])
	}
}

// BenchmarkResolveOneTenant puts all 1000 policies on one tenant and its
// buckets, most with object conditions: the worst case for a request.
func BenchmarkResolveOneTenant(b *testing.B) {
	var sb strings.Builder
	filters := []string{"compression", "encryption", "noop", "scanner", "caching"}
	for i := 0; i < 1000; i++ {
		f := filters[i%len(filters)]
		switch i % 4 {
		case 0:
			fmt.Fprintf(&sb, "FOR TENANT t1 DO SET %s TO OBJECT_SIZE > %d\n", f, i)
		case 1:
			fmt.Fprintf(&sb, "FOR BUCKET t1/b1 WHEN OBJECT_NAME=\"*.%d\" DO SET %s\n", i, f)
		case 2:
			fmt.Fprintf(&sb, "FOR TENANT t1 WHEN OBJECT_TAG=k%d DO DELETE %s\n", i, f)
		case 3:
			fmt.Fprintf(&sb, "FOR BUCKET t1/b1 DO SET %s TO OBJECT_TYPE=DOCS\n", f)
		}
	}
	tb := benchTable(b, sb.String(), nil)
	q := Query{Tenant: "t1", Bucket: "b1", Key: "data/x.bin", Size: 500, Method: filter.MethodPut}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tb.Resolve(q)
	}
}

func BenchmarkCompile1000(b *testing.B) {
	text, groups := benchPolicies(1000)
	v := testVocab()
	v.AnyTarget = true
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		ps, err := ParseAndCheck("bench", text, v)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Compile(ps, groups); err != nil {
			b.Fatal(err)
		}
	}
}
