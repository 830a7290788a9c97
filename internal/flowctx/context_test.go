package flowctx

import (
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for in, want := range map[string]Context{
		"workflow=etl-42; class=compaction": {Class: "compaction", Workflow: "etl-42"},
		" class=flush ;":                    {Class: "flush"},
		"workflow=a;level=0;db=rocks":       {Workflow: "a", Other: []Pair{{"level", "0"}, {"db", "rocks"}}},
		"class=l0.compaction_1":             {Class: "l0.compaction_1"},
	} {
		got, err := Parse(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%q: %+v %v, want %+v", in, got, err, want)
		}
		again, err := Parse(got.String())
		if err != nil || !reflect.DeepEqual(again, got) {
			t.Errorf("%q: String %q re-parses to %+v %v", in, got.String(), again, err)
		}
	}
	for in, msg := range map[string]string{
		"":                                    "empty",
		"class":                               "no '='",
		"class=":                              "value of class",
		"Class=x":                             `key "Class"`,
		"class=Compaction":                    `class "Compaction"`,
		"class=a; class=b":                    "class given twice",
		"a=1;;b=2":                            "empty pair",
		"workflow=a b":                        "value of workflow",
		"x=1;x=2":                             "x given twice",
		strings.Repeat("a=1;", 200):           "bytes, at most",
		"a=1;b=1;c=1;d=1;e=1;f=1;g=1;h=1;i=1": "more than 8 pairs",
	} {
		_, err := Parse(in)
		if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), msg) {
			t.Errorf("%q: %v, want an error saying %q", in, err, msg)
		}
	}
}

func TestRules(t *testing.T) {
	r, err := ParseRules([]byte(`{"default":"fg","rules":[
		{"prefix":"logs/tmp/","class":"scratch"},
		{"user_agent":"rocksdb","meta":"level=0","class":"l0"},
		{"meta":"job","class":"batch"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	c := Compile(r)
	meta := func(h http.Header) func(string) string {
		return func(n string) string { return h.Get("X-Amz-Meta-" + n) }
	}
	for _, tc := range []struct {
		req   Request
		class string
		src   Source
	}{
		{Request{Present: true, Context: Context{Class: "compaction"}, BucketKey: "logs/tmp/x"}, "compaction", SourceHeader},
		{Request{Present: true, Context: Context{Workflow: "w"}, BucketKey: "logs/tmp/x"}, "scratch", SourceRule},
		{Request{BucketKey: "logs/x", UserAgent: "app rocksdb/8", Meta: meta(http.Header{"X-Amz-Meta-Level": {"0"}})}, "l0", SourceRule},
		{Request{BucketKey: "logs/x", UserAgent: "app rocksdb/8", Meta: meta(http.Header{"X-Amz-Meta-Level": {"1"}})}, "fg", SourceDefault},
		{Request{BucketKey: "b/k", Meta: meta(http.Header{"X-Amz-Meta-Job": {"any"}})}, "batch", SourceRule},
		{Request{BucketKey: "b/k"}, "fg", SourceDefault},
	} {
		if cl, src := c.Classify(&tc.req); cl != tc.class || src != tc.src {
			t.Errorf("%+v: %s (%s), want %s (%s)", tc.req, cl, src, tc.class, tc.src)
		}
	}
	var none *Classifier
	if cl, src := none.Classify(&Request{}); cl != DefaultClass || src != SourceDefault {
		t.Errorf("no rules: %s %s", cl, src)
	}
	for in, msg := range map[string]string{
		`{"rules":[{"class":"x"}]}`:                  "matches everything",
		`{"rules":[{"prefix":"a","class":"X"}]}`:     `class "X"`,
		`{"default":"-x","rules":[]}`:                "default class",
		`{"rules":[{"meta":"Level=0","class":"x"}]}`: "meta",
		`{"rules":[],"extra":1}`:                     "unknown field",
		`{"rules":[]} {}`:                            "trailing",
	} {
		if _, err := ParseRules([]byte(in)); !errors.Is(err, ErrInvalidRules) || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: %v, want %q", in, err, msg)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"workflow=etl-42; class=compaction", "class=flush;", "a=1;b=2", "class=", ";", "x=y=z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		c, err := Parse(h)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("%q: unwrapped error %v", h, err)
			}
			return
		}
		if c.Class != "" && !ValidClass(c.Class) {
			t.Fatalf("%q: invalid class %q accepted", h, c.Class)
		}
		again, err := Parse(c.String())
		if c.String() == "" {
			return
		}
		if err != nil || !reflect.DeepEqual(again, c) {
			t.Fatalf("%q -> %q -> %+v %v", h, c.String(), again, err)
		}
	})
}

func FuzzParseRules(f *testing.F) {
	f.Add(`{"default":"fg","rules":[{"prefix":"a/","class":"x"},{"meta":"k=v","class":"y"}]}`)
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRules([]byte(s))
		if err != nil {
			return
		}
		c := Compile(r)
		cl, _ := c.Classify(&Request{BucketKey: s, UserAgent: s, Meta: func(string) string { return s }})
		if !ValidClass(cl) {
			t.Fatalf("class %q from valid rules", cl)
		}
	})
}

// The per-request cost: parse the header and classify against a tenant's
// rules (the last rule matches, so every rule is tried). Goal: <= 1 µs.
func BenchmarkClassify(b *testing.B) {
	var rs Rules
	for i := range 8 {
		rs.Rules = append(rs.Rules, Rule{Prefix: "data/" + string(rune('a'+i)) + "/", UserAgent: "spark", Class: "c" + string(rune('a'+i))})
	}
	rs.Rules = append(rs.Rules, Rule{Meta: "job=etl", Class: "etl"})
	c := Compile(rs)
	h := http.Header{"X-Amz-Meta-Job": {"etl"}, "User-Agent": {"aws-sdk-go-v2/1.30 spark"}}
	meta := func(n string) string { return h.Get("X-Amz-Meta-" + n) }
	b.Run("header", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			ctx, err := Parse("workflow=etl-42; class=compaction")
			if err != nil {
				b.Fatal(err)
			}
			r := Request{Context: ctx, Present: true, BucketKey: "data/z/k", UserAgent: h.Get("User-Agent"), Meta: meta}
			if cl, _ := c.Classify(&r); cl != "compaction" {
				b.Fatal(cl)
			}
		}
	})
	b.Run("rules", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			r := Request{BucketKey: "data/z/k", UserAgent: h.Get("User-Agent"), Meta: meta}
			if cl, _ := c.Classify(&r); cl != "etl" {
				b.Fatal(cl)
			}
		}
	})
}
