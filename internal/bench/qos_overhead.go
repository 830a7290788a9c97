package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

// The cost of shaping (issue 6's goal: unthrottled flows through the QoS
// layer ≥ 0.97× QoS off). Two `facet serve` processes run side by side,
// one with QoS on and no SLO (every flow unlimited, through the context
// stage and the limiter) and one with --qos-off (no shaping stage at
// all). They are loaded in turns, never together, in short windows whose
// order alternates round by round (on-off, off-on, ...), so that a change
// in the machine's load hits both alike; the ratio is the median of the
// rounds' ratios. Sequential runs of one server after the other gave
// 1.023×, 0.682× and 1.146× on this loaded 2-core machine.

// QoSOverheadOptions configure RunQoSOverhead.
type QoSOverheadOptions struct {
	// Sizes are the object sizes GET in turn (default 1 MiB and 4 KiB:
	// the byte path and the per-request path).
	Sizes []int
	// Rounds per size (default 8; each round measures both servers).
	Rounds int
	// Window is how long each server is measured per round (default 3 s).
	Window time.Duration
	// Streams is GET streams per tenant (default 4).
	Streams int
	Log     io.Writer
}

func (o *QoSOverheadOptions) defaults() {
	if len(o.Sizes) == 0 {
		o.Sizes = []int{1 << 20, 4 << 10}
	}
	if o.Rounds <= 0 {
		o.Rounds = 8
	}
	if o.Window <= 0 {
		o.Window = 3 * time.Second
	}
	if o.Streams <= 0 {
		o.Streams = 4
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
}

// QoSOverhead compares unthrottled flows through QoS with QoS off, for
// one object size.
type QoSOverhead struct {
	Size    int
	Streams int // GET streams per tenant (3 tenants)
	Rounds  int
	Window  time.Duration
	On, Off []float64 // MB/s per round
	// Ratio is the median over rounds of On/Off (each round measures both
	// servers back to back); Min and Max bound the rounds' ratios.
	Ratio, Min, Max float64
	// CPUOn, CPUOff are the server's own CPU time per GET (µs), medians
	// over rounds: what a busy machine disturbs least.
	CPUOn, CPUOff float64
}

type overheadServer struct {
	off     bool
	proc    *serveProcess
	clients []qosClient
}

// RunQoSOverhead measures the cost of shaping, interleaved.
func RunQoSOverhead(ctx context.Context, dir string, o QoSOverheadOptions) ([]QoSOverhead, error) {
	o.defaults()
	const token = "bench-token-0123456789abcdef0123456789"
	var servers [2]*overheadServer
	for i, off := range []bool{false, true} {
		args := []string{"serve", "--data", filepath.Join(dir, fmt.Sprintf("ovh-%t", off)), "--s3-addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0",
			"--admin-token", token, "--unsafe-no-fsync", "--log-level", "info", "--no-workload-metrics"}
		if off {
			args = append(args, "--qos-off")
		}
		s3, admin, stop, proc, err := startFacetProcess(nil, args...)
		if err != nil {
			return nil, err
		}
		defer stop()
		srv := &overheadServer{off: off, proc: proc}
		for _, t := range qosTenants {
			g, err := tenantGateway(ctx, s3, admin, token, t)
			if err != nil {
				return nil, err
			}
			c := qosClient{g: g, bucket: t + "-data"}
			if err := g.do(ctx, http.MethodPut, "/"+c.bucket, nil, 0, nil); err != nil {
				return nil, err
			}
			for _, size := range o.Sizes {
				payload := bytes.Repeat([]byte("facet qos bench "), size/16)
				if err := g.do(ctx, http.MethodPut, fmt.Sprintf("/%s/obj-%d", c.bucket, size), payload, int64(len(payload)), nil); err != nil {
					return nil, err
				}
			}
			srv.clients = append(srv.clients, c)
		}
		servers[i] = srv
	}
	var out []QoSOverhead
	for _, size := range o.Sizes {
		r := QoSOverhead{Size: size, Streams: o.Streams, Rounds: o.Rounds, Window: o.Window}
		// Warm both (connections, page cache, first flows) before counting.
		for _, s := range servers {
			if _, _, err := s.window(ctx, size, o.Streams, time.Second); err != nil {
				return nil, err
			}
		}
		var ratios, cpuOn, cpuOff []float64
		for round := range o.Rounds {
			order := []*overheadServer{servers[0], servers[1]}
			if round%2 == 1 {
				order[0], order[1] = order[1], order[0]
			}
			var on, off, cOn, cOff float64
			for _, s := range order {
				mbps, cpu, err := s.window(ctx, size, o.Streams, o.Window)
				if err != nil {
					return nil, err
				}
				if s.off {
					off, cOff = mbps, cpu
				} else {
					on, cOn = mbps, cpu
				}
			}
			fmt.Fprintf(o.Log, "qos overhead: %d KiB round %d/%d: on %.1f MB/s (%.0f µs CPU/GET), off %.1f MB/s (%.0f µs CPU/GET), ratio %.3f\n",
				size>>10, round+1, o.Rounds, on, cOn, off, cOff, on/off)
			r.On, r.Off = append(r.On, on), append(r.Off, off)
			ratios, cpuOn, cpuOff = append(ratios, on/off), append(cpuOn, cOn), append(cpuOff, cOff)
		}
		r.Ratio, r.CPUOn, r.CPUOff = median(ratios), median(cpuOn), median(cpuOff)
		r.Min, r.Max = ratios[0], ratios[0]
		for _, x := range ratios {
			r.Min, r.Max = min(r.Min, x), max(r.Max, x)
		}
		out = append(out, r)
	}
	return out, nil
}

// window loads the server with every tenant's GETs of size-byte objects
// for d (after a short ramp) and returns MB/s and the server's CPU time
// per GET in µs.
func (s *overheadServer) window(ctx context.Context, size, streams int, d time.Duration) (mbps, cpuPerGet float64, err error) {
	var moved, gets atomic.Int64
	lctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, c := range s.clients {
		key := fmt.Sprintf("/%s/obj-%d", c.bucket, size)
		for range streams {
			wg.Add(1)
			go func() {
				defer wg.Done()
				w := countingWriter{&moved}
				for lctx.Err() == nil {
					err := c.g.do(lctx, http.MethodGet, key, nil, 0, func(r io.Reader) error {
						_, err := io.Copy(w, r)
						return err
					})
					if err == nil {
						gets.Add(1)
					}
				}
			}()
		}
	}
	time.Sleep(200 * time.Millisecond)
	b0, g0, c0, t0 := moved.Load(), gets.Load(), s.proc.cpu(), time.Now()
	time.Sleep(d)
	b1, g1, c1, el := moved.Load(), gets.Load(), s.proc.cpu(), time.Since(t0)
	stop()
	wg.Wait()
	if g1 == g0 {
		return 0, 0, fmt.Errorf("qos overhead: no GET completed in %v (qos off=%t)", d, s.off)
	}
	return float64(b1-b0) / el.Seconds() / 1e6, float64((c1 - c0).Microseconds()) / float64(g1-g0), nil
}

// WriteQoSOverhead prints the comparison as Markdown.
func WriteQoSOverhead(w io.Writer, rs []QoSOverhead) {
	fmt.Fprintf(w, "| GET size | rounds × window | QoS on MB/s (median) | QoS off MB/s (median) | on/off (median of rounds) | min–max | server CPU per GET on / off |\n|---|---|---|---|---|---|---|\n")
	for _, r := range rs {
		fmt.Fprintf(w, "| %d KiB | %d × %v | %.1f | %.1f | %.3f× | %.3f–%.3f | %.0f / %.0f µs (%+.1f%%) |\n", r.Size>>10, r.Rounds, r.Window,
			median(r.On), median(r.Off), r.Ratio, r.Min, r.Max, r.CPUOn, r.CPUOff, 100*(r.CPUOn/r.CPUOff-1))
	}
}
