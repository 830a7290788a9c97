package dataplane

import (
	"testing"

	"github.com/facet-sds/facet/internal/s3err"
)

func TestParseOpenRange(t *testing.T) {
	cases := []struct {
		h       string
		want    openRange
		ok      bool
		notImpl bool
	}{
		{"bytes=0-9", openRange{0, 9}, true, false},
		{"bytes=5-", openRange{5, -1}, true, false},
		{" bytes= 7-7 ", openRange{7, 7}, true, false},
		{"bytes=9-3", openRange{}, false, false},
		{"bytes=-3", openRange{}, false, true},
		{"bytes=0-1,4-5", openRange{}, false, false},
		{"items=0-1", openRange{}, false, false},
		{"bytes=x-1", openRange{}, false, false},
		{"bytes=-x", openRange{}, false, false},
	}
	for _, c := range cases {
		got, ok, err := parseOpenRange(c.h)
		if c.notImpl {
			if err == nil || s3err.As(err).Code.Name != s3err.NotImplemented.Name {
				t.Errorf("%q: err %v, want NotImplemented", c.h, err)
			}
			continue
		}
		if err != nil || ok != c.ok || got != c.want {
			t.Errorf("%q: %+v %v %v, want %+v %v", c.h, got, ok, err, c.want, c.ok)
		}
	}
}

func FuzzParseOpenRange(f *testing.F) {
	for _, s := range []string{"bytes=0-9", "bytes=5-", "bytes=-3", "bytes=1-0", "bytes=", "bytes=--", "bytes=99999999999999999999-"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		r, ok, err := parseOpenRange(h)
		if err != nil && ok {
			t.Fatalf("%q: ok with an error", h)
		}
		if ok && (r.start < 0 || r.end != -1 && r.end < r.start) {
			t.Fatalf("%q: invalid range %+v", h, r)
		}
	})
}
