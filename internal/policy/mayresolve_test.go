package policy

import (
	"testing"

	"github.com/facet-sds/facet/internal/filter"
)

// TestMayResolveBoundsResolve: whenever Resolve returns a step for some
// object, MayResolve of the same target and method is true; it is false
// where no filter of the method is declared.
func TestMayResolveBoundsResolve(t *testing.T) {
	c := compile(t, `FOR TENANT t1 DO SET compression
FOR BUCKET t1/b1 DO SET caching TO OBJECT_SIZE >= 1MB
FOR BUCKET t1/b1 DO DELETE caching TO OBJECT_TYPE=IMAGES
FOR BUCKET t2/b2 DO SET noop TO OBJECT_TYPE=DOCS
FOR BUCKET b1 DO SET noop
FOR OBJECT t1/c1/hot DO SET caching`, nil)
	tb := c.Static()
	objects := []Query{
		{Key: "k", Size: -1},
		{Key: "a.pdf", Size: 2 << 20, ContentType: "application/pdf"},
		{Key: "cat.png", Size: 2 << 20, ContentType: "image/png"},
		{Key: "hot", Size: 10},
	}
	targets := []struct {
		tenant, bucket, key string
		get                 bool // MayResolve on GET
	}{
		{"t1", "c1", "k", false}, // compression does not run on GET
		{"t1", "c1", "hot", true},
		{"t1", "b1", "k", true},
		{"t2", "b2", "k", true},
		{"t3", "b1", "k", true}, // bare bucket
		{"t3", "b2", "k", false},
	}
	for _, tg := range targets {
		for _, m := range []filter.Method{filter.MethodGet, filter.MethodPut} {
			q := Query{Tenant: tg.tenant, Bucket: tg.bucket, Key: tg.key, Method: m}
			may := tb.MayResolve(q)
			if m == filter.MethodGet && may != tg.get {
				t.Errorf("%+v: MayResolve = %v, want %v", q, may, tg.get)
			}
			for _, o := range objects {
				oq := q
				oq.Size, oq.ContentType = o.Size, o.ContentType
				if o.Key == tg.key || o.Key != "hot" {
					if r := tb.Resolve(oq); r.Len() > 0 && !may {
						t.Errorf("%+v resolves to %s but MayResolve is false", oq, pipeline(r))
					}
				}
			}
		}
	}
}
