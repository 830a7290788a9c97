package policy

import (
	"testing"

	"github.com/facet-sds/facet/internal/filter"
)

// MayResolveOther leaves the named filters out of MayResolve's bound and
// only them.
func TestMayResolveOtherLeavesOutNamedFilters(t *testing.T) {
	c := compile(t, `FOR BUCKET t1/b1 DO SET caching TO OBJECT_SIZE >= 1MB
FOR BUCKET t1/b2 DO SET caching
FOR BUCKET t1/b2 DO SET noop
FOR OBJECT t1/c1/hot DO SET caching`, nil)
	tb := c.Static()
	for _, tc := range []struct {
		bucket, key      string
		may, mayNonCache bool
	}{
		{"b1", "k", true, false},
		{"b2", "k", true, true},
		{"c1", "hot", true, false},
		{"c1", "k", false, false},
	} {
		q := Query{Tenant: "t1", Bucket: tc.bucket, Key: tc.key, Method: filter.MethodGet}
		if got := tb.MayResolve(q); got != tc.may {
			t.Errorf("%s/%s: MayResolve %v, want %v", tc.bucket, tc.key, got, tc.may)
		}
		if got := tb.MayResolveOther(q, "caching"); got != tc.mayNonCache {
			t.Errorf("%s/%s: MayResolveOther(caching) %v, want %v", tc.bucket, tc.key, got, tc.mayNonCache)
		}
		if got := tb.MayResolveOther(q); got != tc.may {
			t.Errorf("%s/%s: MayResolveOther() %v, want MayResolve's %v", tc.bucket, tc.key, got, tc.may)
		}
	}
}
