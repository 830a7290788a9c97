package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"math"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/facet-sds/facet/internal/qos"
)

// The QoS benchmark (facet bench qos): bandwidth differentiation across two
// gateways in the style of the sources' Table 9.4a and Crystal's Fig. 7.
// Gateway A runs the bandwidth controller and embeds the bus; gateway B
// joins that bus without controllers. Three tenants read 1 MiB objects
// through both gateways, saturating; SLOs change from phase to phase under
// continuous load.

// QoSOptions configure RunQoS.
type QoSOptions struct {
	// CapacityPerNode is each gateway's configured capacity (bytes/s).
	CapacityPerNode float64
	// Phase is how long each SLO setting runs; Settle is the start of a
	// phase left out of its means (convergence).
	Phase, Settle time.Duration
	// Streams is GET streams per tenant per gateway.
	Streams int
	// Overhead configures the shaping-cost rounds (RunQoSOverhead).
	Overhead QoSOverheadOptions
	// Algorithm is the bandwidth controller's (crystal when empty).
	Algorithm string
	Log       io.Writer
}

func (o *QoSOptions) defaults() {
	if o.CapacityPerNode <= 0 {
		o.CapacityPerNode = 25e6
	}
	if o.Phase <= 0 {
		o.Phase = 12 * time.Second
	}
	if o.Settle <= 0 || o.Settle >= o.Phase {
		o.Settle = o.Phase / 3
	}
	if o.Streams <= 0 {
		o.Streams = 2
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.Algorithm == "" {
		o.Algorithm = "crystal"
	}
}

// qosTenants are the benchmark's tenants.
var qosTenants = []string{"t1", "t2", "t3"}

// QoSPhase is one SLO setting: reservations per tenant in MB/s (0: no SLO).
type QoSPhase struct {
	Name string
	SLO  []float64
}

// DefaultQoSPhases scale Table 9.4a's rows to a 2×25 MB/s fleet.
var DefaultQoSPhases = []QoSPhase{
	{"No SLO", []float64{0, 0, 0}},
	{"One SLO: 25/-/-", []float64{25, 0, 0}},
	{"BW Diff: 15/20/15", []float64{15, 20, 15}},
	{"BW Diff: 25/15/-", []float64{25, 15, 0}},
}

// QoSRow is one phase's outcome after convergence.
type QoSRow struct {
	Phase string
	// Want is reservation plus fair spare (Crystal's Algorithm 1 on the
	// ideal demand), Mean the measured MB/s with a 95% confidence
	// interval over per-second samples.
	Want, Mean, CI []float64
	Total          float64
	// Median is each tenant's median per-second MB/s: robust to the
	// seconds a loaded machine starves every process alike.
	Median []float64
	// Utilisation is Total over the fleet's capacity; MaxErr the largest
	// |Mean-Want|/Want; Jain the fairness index over the tenants. The
	// Median variants are the same on the medians.
	Utilisation, MaxErr, Jain       float64
	MedianUtilisation, MedianMaxErr float64
	// Convergence is how long after the SLO change every tenant's 1 s
	// throughput stayed within ±10% of Want (0: the first phase).
	Convergence time.Duration
}

// QoSResult is RunQoS's outcome.
type QoSResult struct {
	Capacity float64 // MB/s, the fleet's
	Rows     []QoSRow
	// Timeline is MB/s per tenant per second over all phases; Marks the
	// seconds at which phases start.
	Timeline [][]float64
	Marks    []int
	Overhead []QoSOverhead
}

type qosClient struct {
	g      *gateway
	bucket string
}

// RunQoS runs the phases over two gateways, then the overhead rounds.
func RunQoS(ctx context.Context, dir string, phases []QoSPhase, o QoSOptions) (QoSResult, error) {
	o.defaults()
	res := QoSResult{Capacity: 2 * o.CapacityPerNode / 1e6}
	alg, err := qos.AlgorithmByName(o.Algorithm)
	if err != nil {
		return res, err
	}
	busAddr, err := freeAddr()
	if err != nil {
		return res, err
	}
	const token = "bench-token-0123456789abcdef0123456789"
	capFlag := fmt.Sprintf("%.0f", o.CapacityPerNode)
	common := []string{"--s3-addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0", "--admin-token", token, "--unsafe-no-fsync",
		"--log-level", "info", "--qos-capacity", capFlag, "--no-workload-metrics", "--qos-algorithm", o.Algorithm}
	var nodes [2][2]string
	for i, extra := range [][]string{
		{"--data", filepath.Join(dir, "a"), "--node", "gw-a", "--bus-listen", busAddr},
		{"--data", filepath.Join(dir, "b"), "--node", "gw-b", "--bus", "nats://" + busAddr, "--controllers=false"},
	} {
		s3, admin, stop, _, err := startFacetProcess(nil, append(append([]string{"serve"}, extra...), common...)...)
		if err != nil {
			return res, err
		}
		defer stop()
		nodes[i] = [2]string{s3, admin}
	}
	payload := bytes.Repeat([]byte("facet qos bench "), (1<<20)/16)
	clients := make([][]qosClient, len(qosTenants)) // tenant -> node
	for ti, t := range qosTenants {
		for _, n := range nodes {
			g, err := tenantGateway(ctx, n[0], n[1], token, t)
			if err != nil {
				return res, err
			}
			c := qosClient{g: g, bucket: t + "-data"}
			if err := g.do(ctx, http.MethodPut, "/"+c.bucket, nil, 0, nil); err != nil {
				return res, err
			}
			if err := g.do(ctx, http.MethodPut, "/"+c.bucket+"/obj", payload, int64(len(payload)), nil); err != nil {
				return res, err
			}
			clients[ti] = append(clients[ti], c)
		}
	}

	counters := make([]atomic.Int64, len(qosTenants))
	lctx, stopLoad := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for ti := range qosTenants {
		for _, c := range clients[ti] {
			for range o.Streams {
				wg.Add(1)
				go func() { defer wg.Done(); getLoad(lctx, c, &counters[ti]) }()
			}
		}
	}
	defer func() { stopLoad(); wg.Wait() }()

	const tick = 250 * time.Millisecond
	perTick := int(time.Second / tick)
	// Every flow is unlimited until the controller's first assignment:
	// let that pass before measuring.
	time.Sleep(2 * time.Second)
	var samples [][]float64 // MB/s per tenant per tick
	var ends []time.Time    // when each tick ended
	prev := make([]int64, len(qosTenants))
	last := time.Now()
	for i := range counters {
		prev[i] = counters[i].Load()
	}
	sample := func() {
		time.Sleep(tick - time.Since(last)%tick)
		now := time.Now()
		el := now.Sub(last).Seconds()
		row := make([]float64, len(qosTenants))
		for i := range counters {
			n := counters[i].Load()
			row[i] = float64(n-prev[i]) / el / 1e6
			prev[i] = n
		}
		samples, ends, last = append(samples, row), append(ends, now), now
	}
	for pi, ph := range phases {
		changed := time.Now()
		for ti, t := range qosTenants {
			for _, n := range nodes {
				if err := setSLO(ctx, n[1], token, t, ph.SLO[ti]); err != nil {
					return res, err
				}
			}
		}
		fmt.Fprintf(o.Log, "qos bench: phase %q\n", ph.Name)
		start := len(samples)
		res.Marks = append(res.Marks, start/perTick)
		for time.Since(changed) < o.Phase {
			sample()
		}
		want := expectedShares(alg, ph.SLO, o.CapacityPerNode, o.Streams)
		settled := start
		for settled < len(samples) && ends[settled].Sub(changed) < o.Settle {
			settled++
		}
		row := qosSummary(ph.Name, want, samples[settled:], perTick, res.Capacity)
		if pi > 0 {
			row.Convergence = convergence(samples[start:], ends[start:], changed, want, perTick)
		}
		res.Rows = append(res.Rows, row)
	}
	for s := 0; s+perTick <= len(samples); s += perTick {
		res.Timeline = append(res.Timeline, meanRows(samples[s:s+perTick]))
	}
	stopLoad()
	wg.Wait()

	if o.Overhead.Log == nil {
		o.Overhead.Log = o.Log
	}
	res.Overhead, err = RunQoSOverhead(ctx, dir, o.Overhead)
	return res, err
}

// tenantGateway creates tenant on a gateway and returns its client.
func tenantGateway(ctx context.Context, s3Addr, adminAddr, token, tenant string) (*gateway, error) {
	var created struct {
		AccessKey string `json:"access_key"`
		SecretKey string `json:"secret_key"`
	}
	if err := adminJSON(ctx, http.MethodPost, "http://"+adminAddr+"/v1/tenants", token, map[string]string{"name": tenant}, &created); err != nil {
		return nil, err
	}
	g, err := newGatewayFor(s3Addr, adminAddr, token, created.AccessKey, created.SecretKey)
	return g, err
}

// setSLO sets a tenant's GET reservation in MB/s, or removes its SLO (0).
func setSLO(ctx context.Context, adminAddr, token, tenant string, mbps float64) error {
	url := "http://" + adminAddr + "/v1/slos/" + tenant
	if mbps <= 0 {
		err := adminJSON(ctx, http.MethodDelete, url, token, nil, nil)
		if err != nil && strings.Contains(err.Error(), "404") {
			return nil
		}
		return err
	}
	return adminJSON(ctx, http.MethodPut, url, token, map[string]any{"get": fmt.Sprintf("%gMB/s", mbps)}, nil)
}

func adminJSON(ctx context.Context, method, url, token string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("%s %s: %d %s", method, url, resp.StatusCode, msg)
	}
	if out != nil {
		return json.NewDecoder(resp.Body).Decode(out)
	}
	return nil
}

// countingWriter adds what it is given to n.
type countingWriter struct{ n *atomic.Int64 }

func (w countingWriter) Write(p []byte) (int, error) { w.n.Add(int64(len(p))); return len(p), nil }

// getLoad GETs the tenant's object on one gateway until ctx ends.
func getLoad(ctx context.Context, c qosClient, n *atomic.Int64) {
	w := countingWriter{n}
	for ctx.Err() == nil {
		err := c.g.do(ctx, http.MethodGet, "/"+c.bucket+"/obj", nil, 0, func(r io.Reader) error {
			_, err := io.Copy(w, r)
			return err
		})
		if err != nil && ctx.Err() == nil {
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// expectedShares is each tenant's share on the ideal demand (every flow
// saturating) by the algorithm's definition, in MB/s: for crystal its
// reservation plus a fair part of the spare.
func expectedShares(alg qos.Algorithm, slo []float64, capPerNode float64, streams int) []float64 {
	slos := qos.SLOMap{}
	p := qos.Problem{Capacity: map[string]float64{"a": capPerNode, "b": capPerNode}, SLOs: slos}
	for i, t := range qosTenants {
		if slo[i] > 0 {
			slos[t] = qos.SLO{Get: slo[i] * 1e6}
		}
		for _, n := range []string{"a", "b"} {
			p.Demands = append(p.Demands, qos.Demand{Tenant: t, Class: qos.ClassGet, Node: n, Streams: streams, Want: math.Inf(1)})
		}
	}
	alloc := alg.Allocate(p)
	out := make([]float64, len(qosTenants))
	for i, t := range qosTenants {
		for _, n := range []string{"a", "b"} {
			out[i] += alloc[qos.UnitKey{Tenant: t, Class: qos.ClassGet, Node: n}] / 1e6
		}
	}
	return out
}

func meanRows(rows [][]float64) []float64 {
	out := make([]float64, len(rows[0]))
	for _, r := range rows {
		for i, v := range r {
			out[i] += v / float64(len(rows))
		}
	}
	return out
}

// qosSummary makes a table row from the settled ticks of a phase.
func qosSummary(name string, want []float64, ticks [][]float64, perTick int, capacity float64) QoSRow {
	row := QoSRow{Phase: name, Want: want}
	var secs [][]float64
	for s := 0; s+perTick <= len(ticks); s += perTick {
		secs = append(secs, meanRows(ticks[s:s+perTick]))
	}
	var sum, sumSq float64
	for i := range want {
		var xs []float64
		for _, s := range secs {
			xs = append(xs, s[i])
		}
		m, ci := meanCI(xs)
		md := median(xs)
		row.Median = append(row.Median, md)
		row.MedianUtilisation += md / capacity
		if want[i] > 0 {
			row.MedianMaxErr = math.Max(row.MedianMaxErr, math.Abs(md-want[i])/want[i])
		}
		row.Mean = append(row.Mean, m)
		row.CI = append(row.CI, ci)
		row.Total += m
		sum += m
		sumSq += m * m
		if want[i] > 0 {
			row.MaxErr = math.Max(row.MaxErr, math.Abs(m-want[i])/want[i])
		}
	}
	row.Utilisation = row.Total / capacity
	if sumSq > 0 {
		row.Jain = sum * sum / (float64(len(want)) * sumSq)
	}
	return row
}

// meanCI is the mean and the half-width of its 95% confidence interval
// (normal approximation).
func meanCI(xs []float64) (float64, float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	var m float64
	for _, x := range xs {
		m += x
	}
	m /= float64(len(xs))
	if len(xs) < 2 {
		return m, 0
	}
	var v float64
	for _, x := range xs {
		v += (x - m) * (x - m)
	}
	v /= float64(len(xs) - 1)
	return m, 1.96 * math.Sqrt(v/float64(len(xs)))
}

// convergence is the time from an SLO change until every tenant's
// trailing 1 s throughput is within ±10% of want and stays so for 2 s (or
// the phase's end); the phase's length when it never is.
func convergence(ticks [][]float64, ends []time.Time, changed time.Time, want []float64, perTick int) time.Duration {
	ok := make([]bool, len(ticks))
	for i := perTick - 1; i < len(ticks); i++ {
		w := meanRows(ticks[i-perTick+1 : i+1])
		ok[i] = true
		for t := range want {
			if math.Abs(w[t]-want[t]) > 0.1*math.Max(want[t], 0.5) {
				ok[i] = false
			}
		}
	}
	hold := 2 * perTick
	for i := range ok {
		if ok[i] && !slices.Contains(ok[i:min(i+hold, len(ok))], false) {
			return ends[i].Sub(changed)
		}
	}
	return ends[len(ends)-1].Sub(changed)
}

// WriteQoS prints the table, the convergence times, the overhead and the
// timeline.
func WriteQoS(w io.Writer, r QoSResult) {
	fmt.Fprintf(w, "| experiment | %s | total MB/s | expected | max error | utilisation | Jain | convergence | medians | max error | utilisation |\n", strings.Join(qosTenants, " | "))
	fmt.Fprintf(w, "|---|%s---|---|---|---|---|---|---|---|---|\n", strings.Repeat("---|", len(qosTenants)))
	for _, row := range r.Rows {
		var cells, want []string
		for i := range row.Mean {
			cells = append(cells, fmt.Sprintf("%.1f±%.1f", row.Mean[i], row.CI[i]))
			want = append(want, fmt.Sprintf("%.1f", row.Want[i]))
		}
		conv := "-"
		if row.Convergence > 0 {
			conv = fmt.Sprintf("%.2f s", row.Convergence.Seconds())
		}
		var meds []string
		for _, m := range row.Median {
			meds = append(meds, fmt.Sprintf("%.1f", m))
		}
		fmt.Fprintf(w, "| %s | %s | %.1f | %s | %.1f%% | %.1f%% | %.3f | %s | %s | %.1f%% | %.1f%% |\n", row.Phase, strings.Join(cells, " | "), row.Total,
			strings.Join(want, "/"), 100*row.MaxErr, 100*row.Utilisation, row.Jain, conv,
			strings.Join(meds, "/"), 100*row.MedianMaxErr, 100*row.MedianUtilisation)
	}
	fmt.Fprintf(w, "\nShaping cost: two servers side by side (QoS on with no SLO, --qos-off), loaded in turns, 3 tenants, alternating order:\n\n")
	WriteQoSOverhead(w, r.Overhead)
	fmt.Fprintf(w, "\nTimeline, MB/s per second (%s; phases start at seconds %v):\n\n", strings.Join(qosTenants, "/"), r.Marks)
	WriteQoSASCII(w, r, 60)
}

func fmtList(xs []float64) string {
	var s []string
	for _, x := range xs {
		s = append(s, fmt.Sprintf("%.1f", x))
	}
	return strings.Join(s, ", ")
}

// WriteQoSASCII draws the timeline as rows of text: one line per second,
// a bar per tenant scaled to width columns for the fleet's capacity.
func WriteQoSASCII(w io.Writer, r QoSResult, width int) {
	marks := map[int]string{}
	for i, m := range r.Marks {
		if i < len(r.Rows) {
			marks[m] = r.Rows[i].Phase
		}
	}
	glyphs := []byte{'1', '2', '3'}
	for s, row := range r.Timeline {
		if name, ok := marks[s]; ok {
			fmt.Fprintf(w, "      -- %s\n", name)
		}
		var b strings.Builder
		for i, v := range row {
			n := int(math.Round(v / r.Capacity * float64(width)))
			b.WriteString(strings.Repeat(string(glyphs[i%len(glyphs)]), max(n, 0)))
		}
		fmt.Fprintf(w, "%4ds %s %s\n", s, b.String(), fmtList(row))
	}
}

// WriteQoSSVG draws the timeline (Crystal's Fig. 7 style): MB/s per tenant
// per second, phases marked.
func WriteQoSSVG(w io.Writer, r QoSResult) error {
	const W, H, left, right, top, bottom = 860, 320, 50, 20, 20, 40
	n := len(r.Timeline)
	if n < 2 {
		return fmt.Errorf("bench: timeline too short to plot")
	}
	ymax := 0.0
	for _, row := range r.Timeline {
		for _, v := range row {
			ymax = math.Max(ymax, v)
		}
	}
	ymax = math.Ceil(ymax/5)*5 + 5
	x := func(s float64) float64 { return left + s/float64(n-1)*(W-left-right) }
	y := func(v float64) float64 { return H - bottom - v/ymax*(H-top-bottom) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">`+"\n", W, H)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", W, H)
	for v := 0.0; v <= ymax; v += 5 {
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/><text x="%d" y="%.1f" text-anchor="end">%g</text>`+"\n", left, W-right, y(v), y(v), left-4, y(v)+4, v)
	}
	fmt.Fprintf(&b, `<text x="12" y="%d" transform="rotate(-90 12 %d)" text-anchor="middle">MB/s</text>`+"\n", H/2, H/2)
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">seconds (dotted: expected share)</text>`+"\n", (W+left)/2, H-8)
	for i, m := range r.Marks {
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#888" stroke-dasharray="4 3"/>`+"\n", x(float64(m)), x(float64(m)), top, H-bottom)
		if i < len(r.Rows) {
			fmt.Fprintf(&b, `<text x="%.1f" y="%d">%s</text>`+"\n", x(float64(m))+3, top+10, html.EscapeString(r.Rows[i].Phase))
		}
	}
	for sec := 0; sec < n; sec += 5 {
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%d</text>`+"\n", x(float64(sec)), H-bottom+14, sec)
	}
	colors := []string{"#d62728", "#1f77b4", "#2ca02c"}
	// What each tenant should get, dotted, phase by phase.
	for i, row := range r.Rows {
		from, to := float64(r.Marks[i]), float64(n-1)
		if i+1 < len(r.Marks) {
			to = float64(r.Marks[i+1])
		}
		for t, v := range row.Want {
			fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s" stroke-width="1" stroke-dasharray="2 3" opacity="0.8"/>`+"\n",
				x(from), x(to), y(v), y(v), colors[t%len(colors)])
		}
	}
	for t := range qosTenants {
		var pts []string
		for s, row := range r.Timeline {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(float64(s)), y(row[t])))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", colors[t%len(colors)], strings.Join(pts, " "))
		fmt.Fprintf(&b, `<text x="%d" y="%d" fill="%s">%s</text>`+"\n", W-right-40*(len(qosTenants)-t), H-bottom+28, colors[t%len(colors)], html.EscapeString(qosTenants[t]))
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// newGatewayFor is a client of an existing tenant's key on a gateway.
func newGatewayFor(s3Addr, adminAddr, token, accessKey, secret string) (*gateway, error) {
	if accessKey == "" || secret == "" {
		return nil, fmt.Errorf("bench: no access key for the tenant")
	}
	return &gateway{
		adminURL: "http://" + adminAddr, token: token,
		s3URL: "http://" + s3Addr, accessKey: accessKey, secret: secret,
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true}},
		signer: v4.NewSigner(), stop: func() {},
	}, nil
}
