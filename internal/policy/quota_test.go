package policy

import (
	"errors"
	"maps"
	"testing"

	"github.com/facet-sds/facet/internal/filter"
)

func TestCheckQuotaValues(t *testing.T) {
	p := checkOne(t, "FOR TENANT t1 DO SET quota WITH bytes=1TiB, objects=10M, buckets=20, uploads=1k")
	want := filter.Params{"bytes": "1099511627776", "objects": "10000000", "buckets": "20", "uploads": "1000"}
	if a := p.Actions[0]; a.SLO != SLOQuota || !maps.Equal(a.Values, want) {
		t.Fatalf("quota action: %s %v", a.SLO, a.Values)
	}
	checkOne(t, "FOR ALL TENANTS DO SET quota WITH bytes=500GB")
	checkOne(t, "FOR TENANT t1 DO DELETE quota")
}

// Malformed quota parameters are refused at their line and column, like
// every other DSL error.
func TestCheckQuotaErrors(t *testing.T) {
	tests := []struct{ src, want string }{
		{"FOR TENANT t1 DO SET quota WITH bytes=1TiX", `pol:1:39: unknown unit "TiX" in 1TiX (` + unitHelp + `)
FOR TENANT t1 DO SET quota WITH bytes=1TiX
                                      ^~~~`},
		{"FOR TENANT t1 DO SET quota WITH objects=10m", `pol:1:41: parameter objects of quota wants a count such as 1000 or 10M (suffixes k, M, G, T), found 10m
FOR TENANT t1 DO SET quota WITH objects=10m
                                        ^~~`},
		{"FOR TENANT t1 DO SET quota WITH bytes=0", `pol:1:39: parameter bytes of quota must be between 1B and 1048576TiB, found 0
FOR TENANT t1 DO SET quota WITH bytes=0
                                      ^`},
		{"FOR TENANT t1 DO SET quota WITH objets=10", `pol:1:33: unknown parameter "objets" for quota (did you mean objects?)
FOR TENANT t1 DO SET quota WITH objets=10
                                ^~~~~~`},
		{"FOR TENANT t1 DO SET quota WITH uploads=99999999999999999999", `pol:1:41: 99999999999999999999 is too large
FOR TENANT t1 DO SET quota WITH uploads=99999999999999999999
                                        ^~~~~~~~~~~~~~~~~~~~`},
		{"FOR BUCKET t1/b1 DO SET quota WITH bytes=1GB", `pol:1:5: quota is a tenant's: its targets are TENANT, GROUP or ALL TENANTS, not BUCKET (a bucket's quota is set with facet ctl quota set --bucket)
FOR BUCKET t1/b1 DO SET quota WITH bytes=1GB
    ^~~~~~`},
		{"FOR TENANT t1 DO SET quota", `pol:1:22: SET quota needs parameters (bytes, objects, buckets, uploads)
FOR TENANT t1 DO SET quota
                     ^~~~~`},
		{"FOR TENANT t1 DO SET quota WITH bytes=1GB ON OBJECT", `pol:1:46: quota is an SLO, not a pipeline filter: ON is not allowed
FOR TENANT t1 DO SET quota WITH bytes=1GB ON OBJECT
                                             ^~~~~~`},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			ps, err := Parse("pol", tt.src)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			err = Check(ps, testVocab())
			if err == nil {
				t.Fatalf("Check succeeded")
			}
			if err.Error() != tt.want {
				t.Errorf("error:\n%s\nwant:\n%s", err, tt.want)
			}
		})
	}
}

func TestParseQuotaLimit(t *testing.T) {
	for _, tt := range []struct {
		field, raw string
		want       int64
	}{
		{"bytes", "1TiB", 1 << 40}, {"bytes", "4096", 4096}, {"bytes", "0", 0}, {"bytes", "1.5KB", 1500},
		{"objects", "10M", 10_000_000}, {"objects", "0", 0}, {"uploads", "1k", 1000}, {"buckets", "3", 3},
	} {
		if got, err := ParseQuotaLimit(tt.field, tt.raw); err != nil || got != tt.want {
			t.Errorf("%s=%s: %d, %v; want %d", tt.field, tt.raw, got, err, tt.want)
		}
	}
	for _, bad := range [][2]string{{"bytes", "1.5B"}, {"bytes", "-1"}, {"bytes", "2EB"}, {"objects", "1.5M"}, {"objects", "10m"},
		{"objects", "M"}, {"objects", ""}, {"uploads", "1200000T"}, {"files", "1"}, {"bytes", "1MB/s"}} {
		if got, err := ParseQuotaLimit(bad[0], bad[1]); !errors.Is(err, ErrBadQuota) {
			t.Errorf("%s=%s: %d, %v; want ErrBadQuota", bad[0], bad[1], got, err)
		}
	}
}

// The table answers the most specific quota record for a tenant.
func TestQuotaInTable(t *testing.T) {
	c := compile(t, "FOR ALL TENANTS DO SET quota WITH uploads=50\nFOR TENANT t1 DO SET quota WITH bytes=1GiB", nil)
	if s, ok := c.Static().SLO(SLOQuota, "t1"); !ok || s.Params["bytes"] != "1073741824" {
		t.Fatalf("t1: %v %v", s, ok)
	}
	if s, ok := c.Static().SLO(SLOQuota, "t2"); !ok || s.Params["uploads"] != "50" {
		t.Fatalf("t2: %v %v", s, ok)
	}
}

func FuzzParseQuotaLimit(f *testing.F) {
	for _, s := range []string{"1TiB", "10M", "0", "1.5KB", "99999999999999999999", "1e3", "10m"} {
		f.Add("bytes", s)
		f.Add("objects", s)
	}
	f.Fuzz(func(t *testing.T, field, raw string) {
		n, err := ParseQuotaLimit(field, raw)
		if err == nil && (n < 0 || n > maxQuota) {
			t.Fatalf("%s=%q parsed to %d", field, raw, n)
		}
		if err != nil && !errors.Is(err, ErrBadQuota) {
			t.Fatalf("%s=%q: error %v not ErrBadQuota", field, raw, err)
		}
	})
}
