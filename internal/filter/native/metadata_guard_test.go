package native

import (
	"context"
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/facet-sds/facet/internal/filter"
)

func TestMetadataGuard(t *testing.T) {
	g := newFilter(t, testRegistry(), "metadata_guard",
		filter.Params{"strip": "x-amz-meta-internal:Debug-*", "deny": "x-amz-meta-owner|secret"}, filter.Env{}).(*MetadataGuard)
	meta := map[string]string{"internal": "1", "debug-trace": "2", "debugx": "3", "keep": "4"}
	if err := g.EditMeta(context.Background(), testReq, nil, meta); err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"debugx": "3", "keep": "4"}; !maps.Equal(meta, want) {
		t.Fatalf("after strip: %v, want %v", meta, want)
	}
	meta = map[string]string{"secret": "s", "owner": "o", "internal": "1"}
	err := g.EditMeta(context.Background(), testReq, nil, meta)
	var r *filter.Refusal
	if !errors.As(err, &r) || !strings.Contains(r.Message, "x-amz-meta-owner") {
		t.Fatalf("refusal %v", err)
	}
	if len(meta) != 3 {
		t.Fatalf("a refused request's metadata changed: %v", meta)
	}
}

func TestMetadataGuardParams(t *testing.T) {
	in, _ := testRegistry().Lookup("metadata_guard")
	if _, err := in.New(filter.Params{"deny": "a*b"}, filter.Env{}); err == nil {
		t.Fatal("'*' inside a name accepted")
	}
}

func FuzzMetaKeyList(f *testing.F) {
	f.Add("x-amz-meta-a:b*|c;D", "b-1")
	f.Add("*", "anything")
	f.Add(":::", "")
	f.Fuzz(func(t *testing.T, list, key string) {
		pats, err := metaKeyList(list)
		if err != nil {
			return
		}
		for _, p := range pats {
			if p == "" || strings.Contains(strings.TrimSuffix(p, "*"), "*") {
				t.Fatalf("pattern %q from %q", p, list)
			}
			if p != strings.ToLower(p) {
				t.Fatalf("pattern %q not lower case", p)
			}
		}
		_ = metaKeyMatches(pats, strings.ToLower(key))
	})
}
