package native

import (
	"context"
	"maps"
	"strings"
	"testing"

	"github.com/facet-sds/facet/internal/filter"
)

func tagging(t *testing.T, p filter.Params) *Tagging {
	t.Helper()
	return newFilter(t, testRegistry(), "tagging", p, filter.Env{}).(*Tagging)
}

func TestTaggingOnKey(t *testing.T) {
	f := tagging(t, filter.Params{"regex": `^logs/(?P<app>[a-z]+)/`, "tag": "x-amz-meta-App=${app}-log"})
	if f.Peek() != 0 {
		t.Fatalf("a key match peeks %d bytes", f.Peek())
	}
	for key, want := range map[string]map[string]string{
		"logs/nginx/2026-03-01.gz": {"app": "nginx-log", "keep": "1"},
		"img/cat.jpg":              {"keep": "1"},
	} {
		meta := map[string]string{"keep": "1"}
		if err := f.EditMeta(context.Background(), &filter.Request{Key: key}, nil, meta); err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(meta, want) {
			t.Errorf("%s: meta %v, want %v", key, meta, want)
		}
	}
}

func TestTaggingOnContent(t *testing.T) {
	f := tagging(t, filter.Params{"regex": `^%PDF-(\d\.\d)`, "tag": "type=pdf-$1", "match": "content", "peek": "16"})
	if f.Peek() != 16 {
		t.Fatalf("peek %d", f.Peek())
	}
	meta := map[string]string{}
	f.EditMeta(context.Background(), &filter.Request{Key: "a.bin"}, []byte("%PDF-1.7\n%âãÏÓ"), meta)
	if meta["type"] != "pdf-1.7" {
		t.Fatalf("meta %v", meta)
	}
	// Expanded values stay header-safe.
	g := tagging(t, filter.Params{"regex": `^(.*)$`, "tag": "first=$1", "match": "content"})
	meta = map[string]string{}
	g.EditMeta(context.Background(), &filter.Request{}, []byte("a\x00b\xffc"), meta)
	if meta["first"] != "a_b_c" {
		t.Fatalf("unsafe bytes kept: %q", meta["first"])
	}
}

func TestTaggingRefusesBadParams(t *testing.T) {
	in, _ := testRegistry().Lookup("tagging")
	for _, p := range []filter.Params{
		{"regex": "(", "tag": "a=b"},
		{"regex": "x"},
		{"regex": "x", "tag": "novalue"},
		{"regex": "x", "tag": "Bad Name=1"},
		{"regex": "x", "tag": "a=b", "match": "size"},
	} {
		if _, err := in.New(p, filter.Env{}); err == nil {
			t.Errorf("%v accepted", p)
		}
	}
}

func FuzzTaggingParams(f *testing.F) {
	f.Add(`^logs/(\w+)`, "app=$1", "logs/x/y")
	f.Add(`(`, "=", "")
	f.Add(`.*`, "a=${0}${1}${name}", "\xff\x00")
	in, _ := testRegistry().Lookup("tagging")
	f.Fuzz(func(t *testing.T, re, tag, key string) {
		flt, err := in.New(filter.Params{"regex": re, "tag": tag}, filter.Env{})
		if err != nil {
			return
		}
		meta := map[string]string{}
		if err := flt.(*Tagging).EditMeta(context.Background(), &filter.Request{Key: key}, nil, meta); err != nil {
			t.Fatal(err)
		}
		for k, v := range meta {
			if !metaNameRE.MatchString(k) || len(v) > 256 || strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r > 0x7e }) {
				t.Fatalf("unsafe metadata %q=%q", k, v)
			}
		}
	})
}
