package metrics

import (
	"math"
	"math/bits"
	"sync/atomic"
	"time"
)

// Building blocks for modules' cells. Each is a few atomics: the request
// path adds, the collector swaps them out once per period. A Sample with
// zero Value and zero Weight is "nothing happened": the collector leaves
// the target out of the period's message.

// Counter counts events; its value is their rate per second.
type Counter struct{ n atomic.Int64 }

// Add counts n events (or bytes).
func (c *Counter) Add(n int64) { c.n.Add(n) }

// Flush implements Cell.
func (c *Counter) Flush(elapsed time.Duration) Sample {
	n := c.n.Swap(0)
	if n == 0 {
		return Sample{}
	}
	return Sample{Value: float64(n) / seconds(elapsed), Weight: float64(n)}
}

// Gauge is a level (requests in flight); its value is the level when the
// period ends.
type Gauge struct{ n atomic.Int64 }

// Add moves the level by d.
func (g *Gauge) Add(d int64) { g.n.Add(d) }

// Flush implements Cell.
func (g *Gauge) Flush(time.Duration) Sample {
	return Sample{Value: float64(g.n.Load())}
}

// Ratio accumulates a numerator and a denominator; its value is their
// ratio, weighted by the denominator, so that the aggregator's weighted
// mean over nodes is the ratio of the sums.
type Ratio struct{ num, den atomic.Int64 }

// Add adds to both sides.
func (r *Ratio) Add(num, den int64) {
	if num != 0 {
		r.num.Add(num)
	}
	r.den.Add(den)
}

// Flush implements Cell.
func (r *Ratio) Flush(time.Duration) Sample {
	num, den := r.num.Swap(0), r.den.Swap(0)
	if den <= 0 {
		return Sample{}
	}
	return Sample{Value: float64(num) / float64(den), Weight: float64(den)}
}

// Mean averages observations (durations in nanoseconds, say); Scale
// converts the mean to the metric's unit (1e-9 for seconds).
type Mean struct {
	Scale    float64
	sum, cnt atomic.Int64
}

// Observe adds one observation.
func (m *Mean) Observe(v int64) {
	m.sum.Add(v)
	m.cnt.Add(1)
}

// Flush implements Cell.
func (m *Mean) Flush(time.Duration) Sample {
	sum, n := m.sum.Swap(0), m.cnt.Swap(0)
	if n <= 0 {
		return Sample{}
	}
	return Sample{Value: float64(sum) / float64(n) * m.Scale, Weight: float64(n)}
}

// Quantile estimates a quantile of observations (durations in
// nanoseconds) from a log-linear histogram: 8 buckets per power of two,
// so an estimate is within 1/16 of the true value. Values from 1 µs to
// about 18 minutes are resolved; smaller ones count as 1 µs, larger ones
// as the top bucket. It is about 2 KiB.
type Quantile struct {
	Q     float64 // 0.99
	Scale float64 // 1e-9: report seconds
	b     [qBuckets]atomic.Uint64
}

const (
	qMinExp  = 10 // 2^10 ns ~ 1 µs
	qMaxExp  = 39 // 2^40 ns ~ 18 min
	qSub     = 8
	qBuckets = (qMaxExp-qMinExp+1)*qSub + 1
)

func qIndex(v int64) int {
	if v < 1<<qMinExp {
		return 0
	}
	e := bits.Len64(uint64(v)) - 1
	if e > qMaxExp {
		return qBuckets - 1
	}
	sub := int(uint64(v)>>(e-3)) & (qSub - 1)
	return (e-qMinExp)*qSub + sub + 1
}

// qValue is the middle of bucket i.
func qValue(i int) float64 {
	if i == 0 {
		return 1 << qMinExp
	}
	i--
	e, sub := i/qSub+qMinExp, i%qSub
	lo := float64(qSub+sub) * math.Exp2(float64(e-3))
	return lo + math.Exp2(float64(e-3))/2
}

// Observe adds one observation.
func (q *Quantile) Observe(v int64) { q.b[qIndex(v)].Add(1) }

// Flush implements Cell.
func (q *Quantile) Flush(time.Duration) Sample {
	var counts [qBuckets]uint64
	var total uint64
	for i := range q.b {
		counts[i] = q.b[i].Swap(0)
		total += counts[i]
	}
	if total == 0 {
		return Sample{}
	}
	rank := uint64(math.Ceil(q.Q * float64(total)))
	if rank == 0 {
		rank = 1
	}
	var seen uint64
	for i, c := range counts {
		seen += c
		if seen >= rank {
			return Sample{Value: qValue(i) * q.Scale, Weight: float64(total)}
		}
	}
	return Sample{Value: qValue(qBuckets-1) * q.Scale, Weight: float64(total)}
}

func seconds(d time.Duration) float64 {
	if d <= 0 {
		return 1 // a period of no length: report counts as they are
	}
	return d.Seconds()
}
