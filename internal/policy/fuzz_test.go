package policy

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/facet-sds/facet/internal/filter"
)

var fuzzSeeds = []string{
	"FOR TENANT:t1 DO SET compression",
	"FOR CONTAINER:t1/c1 DO SET encryption",
	"FOR TENANT T1 WHEN OBJECT_TYPE=DOCS DO SET COMPRESSION ON PROXY, SET ENCRYPTION",
	"FOR G:1 DO SET caching",
	"FOR TENANT t1 WHEN put_ops > 3 DO SET compression TRANSIENT",
	"FOR BUCKET t1/b1 DO DELETE compression",
	"p1: FOR ALL TENANTS DO SET encryption",
	"FOR TENANT t1 DO SET bandwidth WITH get=30MB/s, put=10MB/s",
	"FOR VOLUME v1 DO SET throttle WITH read_bw=3MB/s, write_bw=3MB/s, read_iops=3000, write_iops=3000",
	"FOR TENANT t1 DO SET compression TO OBJECT_TYPE=DOCS, OBJECT_SIZE>10MB",
	"for tenant t1 when get_ops >= 5 and (put_bw < 10MBps or get_lat > 300ms) do set caching with ttl=5m on gateway persistent",
	"FOR OBJECT t1/b1/logs/a.log, TENANT t2 DO SET compression WITH engine=gzip, level=9 ON object, SET encryption ON storage",
	"FOR ALL BUCKETS WHEN OBJECT_NAME=\"*.[ch]\" AND OBJECT_TAG=x-amz-meta-class:cold DO SET noop CALLABLE",
	"a: FOR TENANT t1 DO SET x,\n  SET y \\\n  TO OBJECT_SIZE != 0 # c\n\nb: FOR ALL VOLUMES DO SET xor",
	propertyPolicies,
	"FOR TENANT \"t\\\"1\" DO SET \"é\"",
}

// FuzzParse: the parser never panics; an error is an *Error positioned
// inside the input; a parsed policy renders to text that parses back to
// the same rendering.
func FuzzParse(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		ps, err := Parse("f", text)
		if err != nil {
			checkErrorPosition(t, text, err)
			return
		}
		for _, p := range ps {
			if p.Pos < 0 || int(p.Pos) > len(text) || p.Line < 1 {
				t.Fatalf("policy position %d line %d out of range", p.Pos, p.Line)
			}
			s := p.String()
			again, err := Parse("again", s)
			if err != nil {
				t.Fatalf("rendering %q of %q does not parse: %v", s, text, err)
			}
			if len(again) != 1 || again[0].String() != s {
				t.Fatalf("rendering %q re-parses to %v", s, again)
			}
		}
		v := testVocab()
		v.AnyTarget = true
		if err := Check(ps, v); err != nil {
			checkErrorPosition(t, text, err)
		}
	})
}

func checkErrorPosition(t *testing.T, text string, err error) {
	t.Helper()
	var pe *Error
	if !errors.As(err, &pe) {
		t.Fatalf("error %v is %T, not *Error", err, err)
	}
	if pe.Pos < 0 || int(pe.Pos) > len(text) {
		t.Fatalf("error %q at %d, outside [0,%d]", pe.Msg, pe.Pos, len(text))
	}
	line := 1 + strings.Count(text[:pe.Pos], "\n")
	col := 1 + utf8.RuneCountInString(text[strings.LastIndexByte(text[:pe.Pos], '\n')+1:pe.Pos])
	if pe.Line != line || pe.Col != col {
		t.Fatalf("error at %d says %d:%d, want %d:%d", pe.Pos, pe.Line, pe.Col, line, col)
	}
	if !strings.Contains(pe.Snippet, "^") || pe.Msg == "" {
		t.Fatalf("error without caret or message: %+v", pe)
	}
}

// FuzzCompile: whatever checks compiles, with every dynamic policy active
// or not, and the request-time Resolve agrees with Explain on requests
// aimed at the policies' own targets.
func FuzzCompile(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s, "k.log", int64(100))
	}
	f.Fuzz(func(t *testing.T, text, key string, size int64) {
		ps, err := Parse("f", text)
		if err != nil {
			return
		}
		v := testVocab()
		v.AnyTarget = true
		if Check(ps, v) != nil {
			return
		}
		c, err := Compile(ps, map[string][]string{"1": {"t1"}, "gold": {"t2", "t1/b2"}, "web": {"t1/b1"}})
		if err != nil {
			if strings.HasPrefix(err.Error(), "policy: duplicate policy id") {
				return
			}
			t.Fatalf("Compile: %v", err)
		}
		var ids []string
		for _, p := range c.Dynamic() {
			ids = append(ids, p.ID)
		}
		all, err := c.Table(ids...)
		if err != nil {
			t.Fatalf("Table(%v): %v", ids, err)
		}
		queries := []Query{{Tenant: "t1", Bucket: "b1", Key: key, Size: size}, {Tenant: "zz", Key: key, Size: size}}
		for _, p := range ps {
			for _, tg := range p.Targets {
				queries = append(queries, Query{Tenant: tg.Tenant, Bucket: tg.Bucket, Key: tg.Key, Size: size, ContentType: key},
					Query{Tenant: tg.Tenant, Bucket: tg.Bucket, Key: key, Size: -1, Method: filter.MethodPut})
			}
		}
		for _, tb := range []*Table{c.Static(), all} {
			for _, q := range queries {
				if fast, slow := tb.Resolve(q), tb.Explain(q).Resolution; !reflect.DeepEqual(fast, slow) {
					t.Fatalf("%+v: Resolve %s, Explain %s", q, pipeline(fast), pipeline(slow))
				}
			}
			tb.ResolveVolume("v1", "")
			tb.SLO(SLOBandwidth, "t1")
		}
	})
}
