package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/facet-sds/facet/internal/qos"
)

// The two scenarios of issue 25 that the SLO phases do not show:
//
//   - asymmetric: two gateways of 25 MB/s, t1 reserving 20 MB/s and
//     GETting through gateway b only, t2 reserving 10 and t3 with no SLO
//     GETting through both. The model's fleet-wide shares (with its 5%
//     minimum per node) are 22.5/18.75/8.75; the per-node algorithm it
//     replaced gave 20/20/10, and t3 0.02 MB/s on gateway b.
//   - idle reservation: one facet serve without --qos-capacity; a tenant
//     with a 20 MB/s GET reservation and one without GET in turns, each
//     alone. The model: the same speed (a reservation is a floor).

// QoSScenarios is RunQoSScenarios's outcome.
type QoSScenarios struct {
	// Asymmetric: MB/s per tenant per node (a, b) measured and the
	// model's, over Window.
	Window         time.Duration
	Tenants        []string
	Measured, Want [][2]float64
	// MaxErr is the largest |measured-model|/model of a tenant's
	// fleet-wide MB/s; MinShare the least MB/s a flow with demand moved
	// on a node, as a share of the node's capacity.
	MaxErr, MinShare float64
	Capacity         float64 // per node, MB/s

	// Idle reservation: median MB/s of a GET with and without the
	// reservation, and the error against the model (the same speed):
	// |plain/reserved - 1|.
	Reserved, Plain, IdleErr float64
	ObjectMiB                int
}

// RunQoSScenarios runs the asymmetric and the idle-reservation scenarios.
// window is how long the asymmetric fleet is measured once settled
// (default 8 s).
func RunQoSScenarios(ctx context.Context, dir string, o QoSOptions, window time.Duration) (QoSScenarios, error) {
	o.defaults()
	if window <= 0 {
		window = 8 * time.Second
	}
	res := QoSScenarios{Window: window, Tenants: qosTenants, Capacity: o.CapacityPerNode / 1e6}
	if err := runAsymmetric(ctx, filepath.Join(dir, "asym"), o, &res); err != nil {
		return res, fmt.Errorf("asymmetric: %w", err)
	}
	if err := runIdleReservation(ctx, filepath.Join(dir, "idle"), o, &res); err != nil {
		return res, fmt.Errorf("idle reservation: %w", err)
	}
	return res, nil
}

// asymSLO and asymNodes: t1 reserves 20 MB/s through gateway b only.
var asymSLO = []float64{20, 10, 0}

func asymUses(tenant, node int) bool { return tenant != 0 || node == 1 }

func runAsymmetric(ctx context.Context, dir string, o QoSOptions, res *QoSScenarios) error {
	busAddr, err := freeAddr()
	if err != nil {
		return err
	}
	const token = "bench-token-0123456789abcdef0123456789"
	common := []string{"--s3-addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0", "--admin-token", token, "--unsafe-no-fsync",
		"--log-level", "info", "--qos-capacity", fmt.Sprintf("%.0f", o.CapacityPerNode), "--no-workload-metrics", "--qos-algorithm", o.Algorithm}
	var nodes [2][2]string
	for i, extra := range [][]string{
		{"--data", filepath.Join(dir, "a"), "--node", "gw-a", "--bus-listen", busAddr},
		{"--data", filepath.Join(dir, "b"), "--node", "gw-b", "--bus", "nats://" + busAddr, "--controllers=false"},
	} {
		s3, admin, stop, _, err := startFacetProcess(nil, append(append([]string{"serve"}, extra...), common...)...)
		if err != nil {
			return err
		}
		defer stop()
		nodes[i] = [2]string{s3, admin}
	}
	payload := bytes.Repeat([]byte("facet qos bench "), (1<<20)/16)
	counters := make([][2]atomic.Int64, len(qosTenants))
	lctx, stopLoad := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { stopLoad(); wg.Wait() }()
	for ti, t := range qosTenants {
		for ni, n := range nodes {
			g, err := tenantGateway(ctx, n[0], n[1], token, t)
			if err != nil {
				return err
			}
			if err := setSLO(ctx, n[1], token, t, asymSLO[ti]); err != nil {
				return err
			}
			if !asymUses(ti, ni) {
				continue
			}
			c := qosClient{g: g, bucket: t + "-data"}
			if err := g.do(ctx, http.MethodPut, "/"+c.bucket, nil, 0, nil); err != nil {
				return err
			}
			if err := g.do(ctx, http.MethodPut, "/"+c.bucket+"/obj", payload, int64(len(payload)), nil); err != nil {
				return err
			}
			for range o.Streams {
				wg.Add(1)
				go func() { defer wg.Done(); getLoad(lctx, c, &counters[ti][ni]) }()
			}
		}
	}
	fmt.Fprintf(o.Log, "qos bench: asymmetric fleet (t1 through gw-b only)\n")
	time.Sleep(4 * time.Second) // the controller's first periods
	start := make([][2]int64, len(qosTenants))
	for ti := range counters {
		for ni := range 2 {
			start[ti][ni] = counters[ti][ni].Load()
		}
	}
	t0 := time.Now()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(res.Window):
	}
	el := time.Since(t0).Seconds()
	res.Measured = make([][2]float64, len(qosTenants))
	for ti := range counters {
		for ni := range 2 {
			res.Measured[ti][ni] = float64(counters[ti][ni].Load()-start[ti][ni]) / el / 1e6
		}
	}
	res.Want = asymModel(o)
	res.MinShare = math.Inf(1)
	for ti := range qosTenants {
		var got, want float64
		for ni := range 2 {
			got += res.Measured[ti][ni]
			want += res.Want[ti][ni]
			if asymUses(ti, ni) {
				res.MinShare = math.Min(res.MinShare, res.Measured[ti][ni]/res.Capacity)
			}
		}
		res.MaxErr = math.Max(res.MaxErr, math.Abs(got-want)/want)
	}
	return nil
}

// asymModel is the algorithm's allocation on the asymmetric fleet's ideal
// demand (every flow saturating), MB/s per tenant and node.
func asymModel(o QoSOptions) [][2]float64 {
	alg, err := qos.AlgorithmByName(o.Algorithm)
	if err != nil {
		alg = qos.Crystal{}
	}
	slos := qos.SLOMap{}
	p := qos.Problem{Capacity: map[string]float64{"a": o.CapacityPerNode, "b": o.CapacityPerNode}, SLOs: slos}
	for ti, t := range qosTenants {
		if asymSLO[ti] > 0 {
			slos[t] = qos.SLO{Get: asymSLO[ti] * 1e6}
		}
		for ni, n := range []string{"a", "b"} {
			if asymUses(ti, ni) {
				p.Demands = append(p.Demands, qos.Demand{Tenant: t, Class: qos.ClassGet, Node: n, Streams: o.Streams, Want: math.Inf(1)})
			}
		}
	}
	alloc := alg.Allocate(p)
	out := make([][2]float64, len(qosTenants))
	for ti, t := range qosTenants {
		for ni, n := range []string{"a", "b"} {
			out[ti][ni] = alloc[qos.UnitKey{Tenant: t, Class: qos.ClassGet, Node: n}] / 1e6
		}
	}
	return out
}

func runIdleReservation(ctx context.Context, dir string, o QoSOptions, res *QoSScenarios) error {
	const token = "bench-token-0123456789abcdef0123456789"
	s3, admin, stop, _, err := startFacetProcess(nil, "serve", "--data", dir, "--node", "idle", "--s3-addr", "127.0.0.1:0",
		"--admin-addr", "127.0.0.1:0", "--admin-token", token, "--unsafe-no-fsync", "--log-level", "info", "--no-workload-metrics")
	if err != nil {
		return err
	}
	defer stop()
	res.ObjectMiB = 64
	payload := bytes.Repeat([]byte("facet qos bench "), res.ObjectMiB<<20/16)
	var cs []qosClient
	for i, t := range []string{"acme", "plain"} {
		g, err := tenantGateway(ctx, s3, admin, token, t)
		if err != nil {
			return err
		}
		c := qosClient{g: g, bucket: t + "-data"}
		if err := g.do(ctx, http.MethodPut, "/"+c.bucket, nil, 0, nil); err != nil {
			return err
		}
		if err := g.do(ctx, http.MethodPut, "/"+c.bucket+"/obj", payload, int64(len(payload)), nil); err != nil {
			return err
		}
		if i == 0 {
			if err := setSLO(ctx, admin, token, t, 20); err != nil {
				return err
			}
		}
		cs = append(cs, c)
	}
	fmt.Fprintf(o.Log, "qos bench: idle reservation (acme reserves 20 MB/s, plain none; each alone)\n")
	// A GET read slowly for 1.5 s (the controller sees the flow), then
	// GETs back to back for 2 s: their MB/s each.
	rate := func(c qosClient) ([]float64, error) {
		err := c.g.do(ctx, http.MethodGet, "/"+c.bucket+"/obj", nil, 0, func(r io.Reader) error {
			buf := make([]byte, 256<<10)
			for range 6 {
				if _, err := io.ReadFull(r, buf); err != nil {
					return err
				}
				time.Sleep(250 * time.Millisecond)
			}
			_, err := io.Copy(io.Discard, r)
			return err
		})
		if err != nil {
			return nil, err
		}
		var rates []float64
		for t0 := time.Now(); time.Since(t0) < 2*time.Second; {
			t1 := time.Now()
			var n int64
			err := c.g.do(ctx, http.MethodGet, "/"+c.bucket+"/obj", nil, 0, func(r io.Reader) error {
				var err error
				n, err = io.Copy(io.Discard, r)
				return err
			})
			if err != nil {
				return nil, err
			}
			rates = append(rates, float64(n)/time.Since(t1).Seconds()/1e6)
		}
		return rates, nil
	}
	// Three turns each, alternating; the median of every GET's MB/s.
	var got [2][]float64
	for range 3 {
		for i, c := range cs {
			time.Sleep(1200 * time.Millisecond) // the other tenant's flow gone
			rs, err := rate(c)
			if err != nil {
				return err
			}
			got[i] = append(got[i], rs...)
		}
	}
	res.Reserved, res.Plain = median(got[0]), median(got[1])
	res.IdleErr = math.Abs(res.Plain/res.Reserved - 1)
	return nil
}

// WriteQoSScenarios prints the two scenarios with their errors against
// the model.
func WriteQoSScenarios(w io.Writer, r QoSScenarios) {
	fmt.Fprintf(w, "Asymmetric fleet: 2 gateways × %.0f MB/s; t1 reserves %.0f MB/s through gw-b only, t2 %.0f, t3 none (both gateways); %v window:\n\n",
		r.Capacity, asymSLO[0], asymSLO[1], r.Window)
	fmt.Fprintf(w, "| tenant | gw-a MB/s | gw-b MB/s | fleet MB/s | model (gw-a/gw-b/fleet) | error |\n|---|---|---|---|---|---|\n")
	for ti, t := range r.Tenants {
		got := r.Measured[ti][0] + r.Measured[ti][1]
		want := r.Want[ti][0] + r.Want[ti][1]
		fmt.Fprintf(w, "| %s | %.2f | %.2f | %.2f | %.2f/%.2f/%.2f | %.1f%% |\n", t, r.Measured[ti][0], r.Measured[ti][1], got,
			r.Want[ti][0], r.Want[ti][1], want, 100*math.Abs(got-want)/want)
	}
	fmt.Fprintf(w, "\nmax error fleet-wide %.1f%% (goal ≤ 10%%); least share of a node a flow with demand moved %.1f%% (goal ≥ 5%%)\n\n", 100*r.MaxErr, 100*r.MinShare)
	fmt.Fprintf(w, "Idle reservation: one facet serve without --qos-capacity, %d MiB GETs, each tenant alone (3 turns each): with a 20 MB/s reservation %.0f MB/s, without %.0f MB/s (median GET), %.2f× the time; error against the model (the same speed) %.1f%% (goal ≤ 10%%)\n",
		r.ObjectMiB, r.Reserved, r.Plain, r.Plain/r.Reserved, 100*r.IdleErr)
}
