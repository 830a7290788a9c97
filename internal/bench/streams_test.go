package bench

import (
	"io"
	"math"
	"testing"
)

func TestJain(t *testing.T) {
	for _, tc := range []struct {
		xs   []float64
		want float64
	}{
		{[]float64{5, 5, 5, 5}, 1},
		{[]float64{1, 0, 0, 0}, 0.25},
		{[]float64{3, 1}, 0.8},
	} {
		if got := Jain(tc.xs); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("Jain(%v) = %v, want %v", tc.xs, got, tc.want)
		}
	}
}

// A small run of both models completes and reports every stream.
func TestRunStreamsSmall(t *testing.T) {
	rows, err := RunStreams(t.Context(), StreamsOptions{Dir: t.TempDir(), Size: 3 << 20, Concurrency: []int{2, 3}, PoolThreads: 2}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 {
		t.Fatalf("%d rows", len(rows))
	}
	for _, r := range rows {
		if len(r.PerStream) != r.Streams || r.Jain <= 0 || r.Jain > 1+1e-9 || r.TotalMBps <= 0 || r.CacheMethod != "fadvise-dontneed" {
			t.Fatalf("%+v", r)
		}
	}
	if h, r := ClassifyCost(1000); h <= 0 || r <= 0 {
		t.Fatalf("classification cost %v %v", h, r)
	}
}
