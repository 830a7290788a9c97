package bench

import (
	"bytes"
	"encoding/xml"
	"io"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/facet-sds/facet/internal/qos"
)

func TestQoSExpectedShares(t *testing.T) {
	for _, c := range []struct {
		alg  qos.Algorithm
		slo  []float64
		want []float64
	}{
		{qos.Crystal{}, []float64{0, 0, 0}, []float64{50.0 / 3, 50.0 / 3, 50.0 / 3}},
		{qos.Crystal{}, []float64{25, 0, 0}, []float64{25 + 25.0/3, 25.0 / 3, 25.0 / 3}},
		{qos.Crystal{}, []float64{15, 20, 15}, []float64{15, 20, 15}},
		{qos.MaxMin{}, []float64{25, 0, 0}, []float64{50.0 / 3, 50.0 / 3, 50.0 / 3}},
	} {
		got := expectedShares(c.alg, c.slo, 25e6, 2)
		for i := range got {
			if math.Abs(got[i]-c.want[i]) > 1e-6 {
				t.Errorf("%s %v: %v, want %v", c.alg.Name(), c.slo, got, c.want)
			}
		}
	}
}

func TestQoSSummaryAndConvergence(t *testing.T) {
	// 4 ticks a second: 2 s off target, then on target for 4 s.
	var ticks [][]float64
	var ends []time.Time
	t0 := time.Unix(100, 0)
	for i := range 24 {
		row := []float64{10, 10, 10}
		if i >= 8 {
			row = []float64{20, 20, 10}
		}
		ticks = append(ticks, row)
		ends = append(ends, t0.Add(time.Duration(i+1)*250*time.Millisecond))
	}
	want := []float64{20, 20, 10}
	if c := convergence(ticks, ends, t0, want, 4); c != 3*time.Second {
		t.Fatalf("convergence %v, want 3 s (the first trailing second wholly on target ends then)", c)
	}
	row := qosSummary("x", want, ticks[8:], 4, 50)
	if row.MaxErr > 1e-9 || math.Abs(row.Utilisation-1) > 1e-9 || row.Median[0] != 20 || row.CI[0] != 0 {
		t.Fatalf("summary %+v", row)
	}
	if j := qosSummary("x", []float64{1, 1}, [][]float64{{5, 5}, {5, 5}, {5, 5}, {5, 5}}, 4, 10).Jain; math.Abs(j-1) > 1e-9 {
		t.Fatalf("Jain of equal tenants = %v", j)
	}
}

func TestQoSWriters(t *testing.T) {
	r := QoSResult{Capacity: 50, Marks: []int{0, 2},
		Rows:     []QoSRow{{Phase: "a & b", Want: []float64{1, 2, 3}, Mean: []float64{1, 2, 3}, CI: []float64{0, 0, 0}, Median: []float64{1, 2, 3}}, {Phase: "c", Want: []float64{3, 2, 1}}},
		Timeline: [][]float64{{1, 2, 3}, {1, 2, 3}, {3, 2, 1}, {3, 2, 1}},
		Overhead: []QoSOverhead{{Size: 1 << 20, On: []float64{1}, Off: []float64{1}, Ratio: 1, Min: 1, Max: 1, Streams: 4, Rounds: 1}}}
	var svg bytes.Buffer
	if err := WriteQoSSVG(&svg, r); err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(&svg)
	for {
		if _, err := dec.Token(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("the SVG is not well-formed XML: %v", err)
		}
	}
	var txt strings.Builder
	WriteQoS(&txt, r)
	if !strings.Contains(txt.String(), "| a & b |") {
		t.Fatalf("table:\n%s", txt.String())
	}
}

// The asymmetric scenario's model is the worked example of docs/qos.md:
// 22.5 (gw-b), 17.5 + 1.25, 7.5 + 1.25; the table prints each error.
func TestQoSAsymmetricModel(t *testing.T) {
	o := QoSOptions{CapacityPerNode: 25e6}
	o.defaults()
	got := asymModel(o)
	want := [][2]float64{{0, 22.5}, {17.5, 1.25}, {7.5, 1.25}}
	for i := range want {
		for n := range 2 {
			if math.Abs(got[i][n]-want[i][n]) > 1e-6 {
				t.Fatalf("model %v, want %v", got, want)
			}
		}
	}
	r := QoSScenarios{Window: 8 * time.Second, Tenants: qosTenants, Capacity: 25, Want: got,
		Measured: [][2]float64{{0, 22.3}, {17.5, 1.25}, {7.5, 1.25}}, MaxErr: 0.009, MinShare: 0.05, Reserved: 1900, Plain: 1950, IdleErr: 0.026, ObjectMiB: 64}
	var b bytes.Buffer
	WriteQoSScenarios(&b, r)
	for _, s := range []string{"| t1 | 0.00 | 22.30 | 22.30 | 0.00/22.50/22.50 | 0.9% |", "max error fleet-wide 0.9%", "error against the model (the same speed) 2.6%"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("missing %q in\n%s", s, b.String())
		}
	}
}
