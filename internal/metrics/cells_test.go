package metrics

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// The histogram's quantile is within 1/16 of the exact one, over the
// range it resolves.
func TestQuantileAccuracy(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, q := range []float64{0.5, 0.9, 0.99} {
		for trial := range 20 {
			cell := &Quantile{Q: q, Scale: 1}
			n := 1 + r.IntN(5000)
			vs := make([]int64, n)
			for i := range vs {
				// Log-uniform from 2 µs to 100 s.
				vs[i] = int64(math.Exp(math.Log(2e3) + r.Float64()*(math.Log(1e11)-math.Log(2e3))))
				cell.Observe(vs[i])
			}
			slices.Sort(vs)
			exact := float64(vs[int(math.Ceil(q*float64(n)))-1])
			got := cell.Flush(time.Second)
			if math.Abs(got.Value-exact) > exact/16 || got.Weight != float64(n) {
				t.Fatalf("q=%v trial %d n=%d: estimate %v, exact %v", q, trial, n, got.Value, exact)
			}
		}
	}
}

func TestQuantileBounds(t *testing.T) {
	cell := &Quantile{Q: 0.99, Scale: 1}
	cell.Observe(-5)
	cell.Observe(1)
	if v := cell.Flush(time.Second).Value; v != 1<<qMinExp {
		t.Fatalf("tiny values: %v", v)
	}
	cell.Observe(math.MaxInt64)
	if v := cell.Flush(time.Second).Value; v < 1<<qMaxExp {
		t.Fatalf("huge values: %v", v)
	}
	if s := cell.Flush(time.Second); s != (Sample{}) {
		t.Fatalf("empty: %+v", s)
	}
}

func TestCounterRate(t *testing.T) {
	var c Counter
	c.Add(10)
	if s := c.Flush(4 * time.Second); s.Value != 2.5 {
		t.Fatalf("%+v", s)
	}
	if s := c.Flush(time.Second); s != (Sample{}) {
		t.Fatalf("after flush: %+v", s)
	}
}
