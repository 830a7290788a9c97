package qos

import (
	"math"
	"testing"
)

func TestParseRate(t *testing.T) {
	for in, want := range map[string]float64{
		"80MB/s": 80e6, "80mb/s": 80e6, "1.5GiB/s": 1.5 * (1 << 30), "10MBps": 10e6, "4096": 4096, " 2kb ": 2000, "0": 0,
	} {
		got, err := ParseRate(in)
		if err != nil || got != want {
			t.Errorf("ParseRate(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "MB/s", "-1MB/s", "1XB/s", "1..2MB", "1e400", "9e307TB"} {
		if got, err := ParseRate(bad); err == nil {
			t.Errorf("ParseRate(%q) = %v, want an error", bad, got)
		}
	}
	if got := FormatRate(30e6); got != "30MB/s" {
		t.Errorf("FormatRate = %q", got)
	}
}

func FuzzParseRate(f *testing.F) {
	for _, s := range []string{"80MB/s", "1.5GiB/s", "10MBps", "4096", "", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRate(s)
		if err != nil {
			return
		}
		if r < 0 || math.IsNaN(r) || math.IsInf(r, 0) {
			t.Fatalf("ParseRate(%q) = %v", s, r)
		}
	})
}
