package ui

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/facet-sds/facet/internal/admin"
	"github.com/facet-sds/facet/internal/metrics"
)

// seriesMetrics are the workload metrics the live plots show, in the
// order of a Point's arrays: bytes/s read and written, reads and writes
// per second.
var seriesMetrics = [4]string{"get_bw", "put_bw", "get_ops", "put_ops"}

// Point is one period of the live plots: per tenant and per node, the
// four series in seriesMetrics order.
type Point struct {
	// T is the start of the period, in Unix milliseconds.
	T       int64                 `json:"t"`
	Tenants map[string][4]float64 `json:"tenants"`
	Nodes   map[string][4]float64 `json:"nodes,omitempty"`
}

// Marker is a policy switching on or off, for the plots' time axis.
type Marker struct {
	T      int64  `json:"t"`
	Policy string `json:"policy"`
	Name   string `json:"name,omitempty"`
	// Kind is "on" (triggered) or "off" (switched off again).
	Kind    string `json:"kind"`
	Because string `json:"because,omitempty"`
	On      string `json:"on,omitempty"`
	// Tenant is the tenant it fired on.
	Tenant string `json:"tenant,omitempty"`
	text   string // the policy, to decide who may see the marker
	seq    uint64 // order of addition, for the streams to find new ones
}

// Hello is the first event of a stream: the history the ring buffer
// holds, within the session's scope.
type Hello struct {
	PeriodMs  int64    `json:"period_ms"`
	HistoryMs int64    `json:"history_ms"`
	Series    []string `json:"series"`
	Points    []Point  `json:"points"`
	Markers   []Marker `json:"markers"`
}

// Tick is each later event: one new period and the markers since the
// last one.
type Tick struct {
	Point
	Markers []Marker `json:"markers,omitempty"`
}

// Event stream limits: maxStreams bounds the open streams of the whole
// dashboard; tenants together may hold all but adminReserved of them, and
// each tenant at most maxTenantStreams, so that no tenant takes the
// administrator's dashboard (or the other tenants') away.
const (
	maxStreams       = 256
	adminReserved    = 16
	maxTenantStreams = 8
)

// live keeps the last History of the plots' series, sampled from the
// aggregator once per period, and the policy markers, and wakes the
// event streams when a period is added.
type live struct {
	src     Snapshotter
	store   Store
	period  time.Duration
	history time.Duration
	now     func() time.Time
	log     *slog.Logger
	done    chan struct{} // closed when run ends

	mu      sync.Mutex
	points  []Point
	markers []Marker
	wake    chan struct{} // closed and replaced at each new point
	streams int
	// tenantStreams counts the open streams of tenants' sessions, in all
	// and per tenant.
	tenantStreams int
	perTenant     map[string]int
	lastT         int64
	seq           uint64            // the last marker's seq
	shown         map[string]string // policy id: its last state shown
	polled        bool
}

func newLive(src Snapshotter, store Store, period, history time.Duration, now func() time.Time, log *slog.Logger) *live {
	if period <= 0 {
		period = time.Second
	}
	if history <= 0 {
		history = 5 * time.Minute
	}
	return &live{src: src, store: store, period: period, history: history, now: now, log: log,
		done: make(chan struct{}), wake: make(chan struct{}), shown: map[string]string{}}
}

func (l *live) run(ctx context.Context) {
	defer close(l.done)
	if l.src == nil {
		<-ctx.Done()
		return
	}
	// Look four times a period, so that a new merged period is shown soon
	// after the aggregator has it; only a new one costs a snapshot.
	t := time.NewTicker(l.period / 4)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			l.sample(ctx)
		}
	}
}

// sample adds a point when the aggregator has merged a new period, or a
// zero point when it has merged nothing for three periods (an idle or
// silent fleet still moves the time axis).
func (l *live) sample(ctx context.Context) {
	now := l.now()
	var start int64
	fresh := false
	if agg, ok := l.src.Latest(seriesMetrics[0]); ok {
		start = agg.StartMs
		fresh = now.Sub(time.UnixMilli(agg.StartMs+agg.PeriodMs)) < 3*l.period
	}
	l.mu.Lock()
	lastT := l.lastT
	l.mu.Unlock()
	var p Point
	switch {
	case fresh && start > lastT:
		p = pointOf(start, l.src.Snapshot())
	case !fresh && now.Add(-2*l.period).UnixMilli() >= lastT+l.period.Milliseconds():
		p = Point{T: now.Add(-2 * l.period).Truncate(l.period).UnixMilli(), Tenants: map[string][4]float64{}}
		if p.T <= lastT {
			return
		}
	default:
		return
	}
	marks := l.pollPolicies(ctx, now)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lastT = p.T
	l.points = append(l.points, p)
	cut := p.T - l.history.Milliseconds()
	i := 0
	for i < len(l.points) && l.points[i].T <= cut {
		i++
	}
	if i > 0 {
		l.points = append(l.points[:0:0], l.points[i:]...)
	}
	for _, m := range marks {
		l.seq++
		m.seq = l.seq
		l.markers = append(l.markers, m)
	}
	j := 0
	for j < len(l.markers) && l.markers[j].T <= cut {
		j++
	}
	if j > 0 {
		l.markers = append(l.markers[:0:0], l.markers[j:]...)
	}
	close(l.wake)
	l.wake = make(chan struct{})
}

// pointOf reads one period out of a snapshot: tenant targets' merged
// values, and per node the sum over its tenant targets.
func pointOf(start int64, snap []metrics.SnapshotValue) Point {
	p := Point{T: start, Tenants: map[string][4]float64{}, Nodes: map[string][4]float64{}}
	for _, v := range snap {
		idx := -1
		for i, m := range seriesMetrics {
			if v.Metric == m {
				idx = i
			}
		}
		if idx < 0 || v.Period.UnixMilli() != start {
			continue
		}
		t, err := metrics.ParseTarget(v.Target)
		if err != nil || t.Kind != metrics.KindTenant {
			continue
		}
		if v.Node == "" {
			a := p.Tenants[t.Tenant]
			a[idx] = v.Value
			p.Tenants[t.Tenant] = a
		} else {
			a := p.Nodes[v.Node]
			a[idx] += v.Value
			p.Nodes[v.Node] = a
		}
	}
	return p
}

// pollPolicies reads the policies' states and returns a marker for each
// that switched on or off since the last poll. At the first poll, the
// switches within the history become markers too.
func (l *live) pollPolicies(ctx context.Context, now time.Time) []Marker {
	if l.store == nil {
		return nil
	}
	ps, err := l.store.ListPolicies(ctx)
	if err != nil {
		l.log.Warn("dashboard: reading policy states", "err", err)
		return nil
	}
	var out []Marker
	seen := make(map[string]string, len(ps))
	for _, mp := range ps {
		v := viewOf(admin.Policy{ID: mp.ID, Name: mp.Name, Text: mp.Text, State: string(mp.State), Reason: mp.Reason}, "")
		state := v.Show + "|" + mp.Reason
		seen[mp.ID] = state
		prev, known := l.shown[mp.ID]
		if known && prev == state {
			continue
		}
		if !known && !l.polled && (v.At == nil || now.Sub(*v.At) > l.history) {
			continue
		}
		kind := ""
		switch {
		case v.Show == showTriggered:
			kind = "on"
		case v.At != nil && (v.Show == showArmed || v.Show == showPending):
			kind = "off"
		default:
			continue
		}
		at := now
		if v.At != nil {
			at = *v.At
		}
		out = append(out, Marker{T: at.UnixMilli(), Policy: mp.ID, Name: mp.Name, Kind: kind, Because: v.Because, On: v.On,
			Tenant: tenantOfTarget(v.On), text: mp.Text})
	}
	l.shown, l.polled = seen, true
	return out
}

// snapshot returns the history, the last marker's seq and the channel
// that closes at the next point.
func (l *live) snapshot() ([]Point, []Marker, uint64, chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.points, l.markers, l.seq, l.wake
}

// since returns the points after t, the markers after seq, the last
// marker's seq, and the channel that closes at the next point.
func (l *live) since(t int64, seq uint64) ([]Point, []Marker, uint64, chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	i := len(l.points)
	for i > 0 && l.points[i-1].T > t {
		i--
	}
	j := len(l.markers)
	for j > 0 && l.markers[j-1].seq > seq {
		j--
	}
	return l.points[i:], l.markers[j:], l.seq, l.wake
}

// openStream counts a new stream of tenant's session ("" for the
// administrator), or says why there is no room for it.
func (l *live) openStream(tenant string) (ok bool, why string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.streams >= maxStreams {
		return false, "too many open dashboards"
	}
	if tenant != "" {
		if l.perTenant[tenant] >= maxTenantStreams {
			return false, fmt.Sprintf("this tenant has %d open dashboards, the most it may have; close one", maxTenantStreams)
		}
		if l.tenantStreams >= maxStreams-adminReserved {
			return false, "too many open dashboards"
		}
		if l.perTenant == nil {
			l.perTenant = map[string]int{}
		}
		l.perTenant[tenant]++
		l.tenantStreams++
	}
	l.streams++
	return true, ""
}

func (l *live) closeStream(tenant string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.streams--
	if tenant != "" {
		l.tenantStreams--
		if l.perTenant[tenant]--; l.perTenant[tenant] <= 0 {
			delete(l.perTenant, tenant)
		}
	}
}

// scope narrows points and markers to what a session may see: the admin
// sees everything; a tenant its own series, no nodes, and the markers of
// policies about it alone.
type scope struct {
	tenant string
	vis    *visibility
}

func (s scope) point(p Point) Point {
	if s.vis == nil {
		return p
	}
	out := Point{T: p.T, Tenants: map[string][4]float64{}}
	if v, ok := p.Tenants[s.tenant]; ok {
		out.Tenants[s.tenant] = v
	}
	return out
}

func (s scope) markers(ms []Marker) []Marker {
	out := []Marker{}
	for _, m := range ms {
		if s.vis == nil || (m.Tenant == s.tenant && s.vis.of(m.text) == visFull) {
			out = append(out, m)
		}
	}
	return out
}

const (
	keepAlive   = 15 * time.Second
	revalidate  = 10 * time.Second
	sendTimeout = 10 * time.Second
)

// serveEvents streams the plots' data as server-sent events: "hello" with
// the history, then "tick" at each new period. A stream ends when the
// client goes, the server stops, or the session ends (checked by valid
// every few seconds); a client that stops reading is dropped.
func (l *live) serveEvents(w http.ResponseWriter, r *http.Request, sess session, valid func() bool) {
	owner := ""
	if sess.role == roleTenant {
		owner = sess.tenant
	}
	if ok, why := l.openStream(owner); !ok {
		writeErr(w, http.StatusServiceUnavailable, "TooManyStreams", why)
		return
	}
	defer l.closeStream(owner)
	sc := scope{}
	if sess.role == roleTenant {
		sc = scope{tenant: sess.tenant, vis: &visibility{ctx: r.Context(), me: sess.tenant, store: l.store,
			owners: map[string]string{}, groups: map[string]bool{}}}
	}
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)

	send := func(event string, v any) bool {
		data, err := json.Marshal(v)
		if err != nil {
			return false
		}
		_ = rc.SetWriteDeadline(time.Now().Add(sendTimeout))
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, data); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	points, markers, seq, wake := l.snapshot()
	hello := Hello{PeriodMs: l.period.Milliseconds(), HistoryMs: l.history.Milliseconds(), Series: seriesMetrics[:],
		Points: make([]Point, 0, len(points)), Markers: sc.markers(markers)}
	var lastT int64
	for _, p := range points {
		hello.Points = append(hello.Points, sc.point(p))
		lastT = p.T
	}
	if !send("hello", hello) {
		return
	}
	ping := time.NewTicker(keepAlive)
	defer ping.Stop()
	check := time.NewTicker(revalidate)
	defer check.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-l.done:
			return
		case <-check.C:
			if !valid() {
				send("bye", map[string]string{"reason": "the session ended"})
				return
			}
		case <-ping.C:
			_ = rc.SetWriteDeadline(time.Now().Add(sendTimeout))
			if _, err := fmt.Fprint(w, ": ping\n\n"); err != nil || rc.Flush() != nil {
				return
			}
		case <-wake:
			var ps []Point
			var ms []Marker
			ps, ms, seq, wake = l.since(lastT, seq)
			ms = sc.markers(ms)
			for i, p := range ps {
				tick := Tick{Point: sc.point(p)}
				if i == len(ps)-1 {
					tick.Markers = ms
				}
				if !send("tick", tick) {
					return
				}
				lastT = p.T
			}
		}
	}
}
