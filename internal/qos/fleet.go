package qos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/facet-sds/facet/internal/bus"
	"github.com/facet-sds/facet/internal/controller"
)

// ControllerName is the global bandwidth controller's name: its
// assignments go out on controller.AssignmentSubject(ControllerName).
const ControllerName = "bandwidth"

// ReportSubject is where node publishes its NodeReport every period.
func ReportSubject(node string) string { return "facet.qos.report." + bus.EscapeToken(node) }

// reportPattern matches every node's reports.
const reportPattern = "facet.qos.report.*"

// Agent is a gateway's side of the fleet: every period it publishes its
// limiter's report, and it applies the bandwidth controller's
// assignments for its node as they arrive.
type Agent struct {
	l      *Limiter
	b      bus.Bus
	period time.Duration
	log    *slog.Logger
	// before, when set, runs at the start of every period (the server
	// refreshes its cached SLO records there).
	before func(context.Context)
	// host describes the node for its reports (Describe).
	host atomic.Pointer[func(context.Context) json.RawMessage]
	// devices reports the node's devices in every report (ReportDevices).
	devices atomic.Pointer[func(context.Context) []DeviceStatus]

	// term is the highest lease term seen in an assignment; stale counts
	// the messages refused for an older one.
	termMu sync.Mutex
	term   uint64
	stale  atomic.Uint64
}

// StaleAssignments counts the assignment messages refused because their
// lease term was older than one already seen.
func (a *Agent) StaleAssignments() uint64 { return a.stale.Load() }

// assign applies an assignment message unless it comes from a holder
// whose lease term is older than one seen: a controller that lost its
// lease may still have a message in flight. A message without a term
// (term 0, a serve role's) is taken only until a term has been seen.
func (a *Agent) assign(data []byte) {
	msg, rates, ops, err := decodeAssignments(data, a.l.Node())
	if err != nil {
		a.log.Warn("bandwidth assignment refused", "err", err)
		return
	}
	a.termMu.Lock()
	defer a.termMu.Unlock()
	if msg.Term < a.term {
		a.stale.Add(1)
		a.log.Debug("bandwidth assignment of an older lease term ignored", "term", msg.Term, "seen", a.term, "instance", msg.Instance)
		return
	}
	a.term = msg.Term
	// Applied under termMu, so that a message of an older term cannot
	// pass the check and land after a newer one.
	a.l.ApplyOps(msg.Instance, msg.Seq, rates, ops)
}

// ReportDevices makes every report carry what devices returns.
func (a *Agent) ReportDevices(devices func(context.Context) []DeviceStatus) {
	a.devices.Store(&devices)
}

// HostEvery is how often, in reports, a node describes itself (Host):
// devices change rarely, and every 10th report of 500 ms is every 5 s.
const HostEvery = 10

// Describe makes the agent describe its node in every HostEvery-th
// report (the first included) with what host returns.
func (a *Agent) Describe(host func(context.Context) json.RawMessage) { a.host.Store(&host) }

// NewAgent returns an agent for l on b reporting every period (500 ms
// when 0). before, if not nil, runs at the start of each period.
func NewAgent(l *Limiter, b bus.Bus, period time.Duration, before func(context.Context), logger *slog.Logger) *Agent {
	if period <= 0 {
		period = 500 * time.Millisecond
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Agent{l: l, b: b, period: period, before: before, log: logger}
}

// Run subscribes to assignments and reports every period until ctx ends.
func (a *Agent) Run(ctx context.Context) error {
	sub, err := a.b.Subscribe(controller.AssignmentSubject(ControllerName), func(_ string, data []byte) { a.assign(data) })
	if err != nil {
		return fmt.Errorf("qos: subscribe to assignments: %w", err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	t := time.NewTicker(a.period)
	defer t.Stop()
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if a.before != nil {
			a.before(ctx)
		}
		rep := a.l.Report()
		if h := a.host.Load(); h != nil && n%HostEvery == 0 {
			rep.Host = (*h)(ctx)
		}
		if d := a.devices.Load(); d != nil {
			rep.Devices = (*d)(ctx)
		}
		data, err := json.Marshal(rep)
		if err != nil {
			a.log.Error("qos report encoding", "err", err)
			continue
		}
		if err := a.b.Publish(ReportSubject(rep.Node), data); err != nil {
			a.log.Debug("qos report not published", "err", err)
		}
	}
}

// DecodeAssignments reads an assignment message and returns node's byte
// rates (assignments for every node, Node "", included).
func DecodeAssignments(data []byte, node string) (instance string, seq uint64, rates Rates, err error) {
	instance, seq, rates, _, err = DecodeAllAssignments(data, node)
	return instance, seq, rates, err
}

// DecodeAllAssignments is DecodeAssignments with the operations rates
// (keys "<class>_ops").
func DecodeAllAssignments(data []byte, node string) (instance string, seq uint64, rates, ops Rates, err error) {
	msg, rates, ops, err := decodeAssignments(data, node)
	return msg.Instance, msg.Seq, rates, ops, err
}

// decodeAssignments is DecodeAllAssignments returning the message
// (Assignments included, for every node).
func decodeAssignments(data []byte, node string) (msg controller.AssignmentMessage, rates, ops Rates, err error) {
	if err := json.Unmarshal(data, &msg); err != nil {
		return msg, nil, nil, fmt.Errorf("qos: assignments: %w", err)
	}
	if msg.V != controller.AssignmentVersion {
		return msg, nil, nil, fmt.Errorf("qos: assignments: version %d, want %d", msg.V, controller.AssignmentVersion)
	}
	rates, ops = Rates{}, Rates{}
	for _, a := range msg.Assignments {
		if a.Node != "" && a.Node != node {
			continue
		}
		tenant, ok := strings.CutPrefix(a.Target, "tenant:")
		if !ok {
			continue
		}
		into := rates
		cls, ok := strings.CutSuffix(a.Key, "_bw")
		if !ok {
			if cls, ok = strings.CutSuffix(a.Key, "_ops"); !ok {
				continue
			}
			into = ops
		}
		c, err := ParseClass(cls)
		if err != nil || !(a.Value >= 0) || math.IsInf(a.Value, 0) {
			continue
		}
		if into[tenant] == nil {
			into[tenant] = map[Class]float64{}
		}
		into[tenant][c] = a.Value
	}
	return msg, rates, ops, nil
}

// Fleet is the fleet-wide view of QoS: every node's latest report and the
// latest assignments. The bandwidth controller reads its snapshots, the
// /bw views its nodes. Safe for concurrent use.
type Fleet struct {
	expire time.Duration
	now    func() time.Time

	mu      sync.Mutex
	reports map[string]fleetNode
	assign  *controller.AssignmentMessage
	// peak is each node's highest total served bytes/s in the estimation
	// window, for capacity estimates.
	peak map[string][]peakSample
}

type fleetNode struct {
	rep  NodeReport
	seen time.Time
	// host is the node's latest description (reports carry one every
	// HostEvery).
	host     json.RawMessage
	hostSeen time.Time
}

type peakSample struct {
	at time.Time
	v  float64
}

// peakWindow is how far back a node's capacity estimate looks.
const peakWindow = 30 * time.Second

// NewFleet returns an empty view; reports older than expire are dropped
// (default 5 s).
func NewFleet(expire time.Duration) *Fleet {
	if expire <= 0 {
		expire = 5 * time.Second
	}
	return &Fleet{expire: expire, now: time.Now, reports: map[string]fleetNode{}, peak: map[string][]peakSample{}}
}

// Subscribe feeds the view from b until the returned subscriptions are
// ended.
func (f *Fleet) Subscribe(b bus.Bus, log *slog.Logger) (stop func(), err error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s1, err := b.Subscribe(reportPattern, func(_ string, data []byte) {
		rep, err := DecodeReport(data)
		if err != nil {
			log.Warn("qos report refused", "err", err)
			return
		}
		f.Add(rep)
	})
	if err != nil {
		return nil, fmt.Errorf("qos: subscribe to reports: %w", err)
	}
	s2, err := b.Subscribe(controller.AssignmentSubject(ControllerName), func(_ string, data []byte) {
		var msg controller.AssignmentMessage
		if err := json.Unmarshal(data, &msg); err != nil || msg.V != controller.AssignmentVersion {
			return
		}
		f.mu.Lock()
		// As a gateway does: a deposed holder's late message is not the
		// assignment in force.
		if f.assign == nil || msg.Term >= f.assign.Term {
			f.assign = &msg
		}
		f.mu.Unlock()
	})
	if err != nil {
		_ = s1.Unsubscribe()
		return nil, fmt.Errorf("qos: subscribe to assignments: %w", err)
	}
	return func() { _ = s1.Unsubscribe(); _ = s2.Unsubscribe() }, nil
}

// DecodeReport reads a NodeReport from the bus, refusing other versions,
// a report without a node name, and values that are not finite and
// non-negative.
func DecodeReport(data []byte) (NodeReport, error) {
	var rep NodeReport
	if err := json.Unmarshal(data, &rep); err != nil {
		return NodeReport{}, fmt.Errorf("qos: report: %w", err)
	}
	if rep.V != ReportVersion {
		return NodeReport{}, fmt.Errorf("qos: report: version %d, want %d", rep.V, ReportVersion)
	}
	if rep.Node == "" {
		return NodeReport{}, fmt.Errorf("qos: report without a node")
	}
	ok := func(f float64) bool { return f >= 0 && !math.IsInf(f, 0) && !math.IsNaN(f) }
	if !ok(rep.Capacity) || rep.PeriodMS < 0 {
		return NodeReport{}, fmt.Errorf("qos: report of %s: bad capacity or period", rep.Node)
	}
	switch h := bytes.TrimSpace(rep.Host); {
	case len(h) == 0 || string(h) == "null":
		rep.Host = nil
	case h[0] != '{' || len(h) > maxHost:
		return NodeReport{}, fmt.Errorf("qos: report of %s: host must be a JSON object of at most %d bytes", rep.Node, maxHost)
	}
	if len(rep.Devices) > maxDevices {
		return NodeReport{}, fmt.Errorf("qos: report of %s: %d devices, at most %d", rep.Node, len(rep.Devices), maxDevices)
	}
	for _, d := range rep.Devices {
		if d.Device == "" || len(d.Streams) > maxDeviceStreams || !(ok(d.Served) || d.Served == -1) || !ok(d.Asked) {
			return NodeReport{}, fmt.Errorf("qos: report of %s: bad device %q", rep.Node, d.Device)
		}
		for _, t := range d.Streams {
			if t.TID < 0 || !ok(t.Need) || !ok(t.Served) {
				return NodeReport{}, fmt.Errorf("qos: report of %s: bad stream %+v on %s", rep.Node, t, d.Device)
			}
		}
	}
	for _, fl := range rep.Flows {
		if _, err := ParseClass(string(fl.Class)); err != nil || fl.Tenant == "" || fl.Streams < 0 || fl.Active < 0 ||
			!ok(fl.Rate) || !ok(fl.Served) || !ok(fl.Waited) || !ok(fl.Ops) || !ok(fl.Rejected) || !ok(fl.OpsRate) {
			return NodeReport{}, fmt.Errorf("qos: report of %s: bad flow %+v", rep.Node, fl)
		}
	}
	return rep, nil
}

// maxHost bounds a node's description in its reports.
const maxHost = 64 << 10

// maxDevices and maxDeviceStreams bound the device part of a report.
const (
	maxDevices       = 64
	maxDeviceStreams = 4096
)

// Add records a node's report.
func (f *Fleet) Add(rep NodeReport) {
	now := f.now()
	var total float64
	for _, fl := range rep.Flows {
		total += fl.Served
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	fn := fleetNode{rep: rep, seen: now, host: rep.Host, hostSeen: now}
	if rep.Host == nil {
		old := f.reports[rep.Node]
		fn.host, fn.hostSeen = old.host, old.hostSeen
	}
	fn.rep.Host = nil
	f.reports[rep.Node] = fn
	ps := append(f.peak[rep.Node], peakSample{now, total})
	ps = slices.DeleteFunc(ps, func(p peakSample) bool { return now.Sub(p.at) > peakWindow })
	f.peak[rep.Node] = ps
}

// Nodes returns the live nodes' latest reports, by node name.
func (f *Fleet) Nodes() []NodeReport {
	now := f.now()
	f.mu.Lock()
	defer f.mu.Unlock()
	out := []NodeReport{}
	for n, r := range f.reports {
		if now.Sub(r.seen) > f.expire {
			delete(f.reports, n)
			delete(f.peak, n)
			continue
		}
		out = append(out, r.rep)
	}
	slices.SortFunc(out, func(a, b NodeReport) int { return strings.Compare(a.Node, b.Node) })
	return out
}

// NodeHost is a live node's latest description of itself.
type NodeHost struct {
	Node string
	Host json.RawMessage
	// Seen is when the description arrived.
	Seen time.Time
}

// Hosts returns the live nodes' latest descriptions, by node name; nodes
// that have not described themselves yet are left out.
func (f *Fleet) Hosts() []NodeHost {
	now := f.now()
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []NodeHost
	for n, r := range f.reports {
		if now.Sub(r.seen) <= f.expire && r.host != nil {
			out = append(out, NodeHost{Node: n, Host: r.host, Seen: r.hostSeen})
		}
	}
	slices.SortFunc(out, func(a, b NodeHost) int { return strings.Compare(a.Node, b.Node) })
	return out
}

// Assignments returns the latest assignment message seen, or nil.
func (f *Fleet) Assignments() *controller.AssignmentMessage {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.assign
}

// estimate is a node's capacity estimated from saturation: the highest
// total it served in the window, with 10% room to find out more.
func (f *Fleet) estimate(node string) float64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	var m float64
	for _, p := range f.peak[node] {
		m = max(m, p.v)
	}
	return m * 1.1
}

// The snapshot's metric names: per node ("node:N" targets) and per flow
// ("tenant:T" targets, one metric per class and quantity).
const (
	metricCapacity  = "qos_capacity"
	metricEstimated = "qos_capacity_estimate"
	metricPeriod    = "qos_period"
)

func flowMetric(c Class, what string) string { return "qos_" + string(c) + "_" + what }

// Snapshot implements controller.SnapshotSource: the live nodes' reports
// as samples, per node, plus the fleet-wide sums per tenant and class.
func (f *Fleet) Snapshot(context.Context) (controller.MetricSnapshot, error) {
	now := f.now()
	snap := controller.MetricSnapshot{Time: now}
	merged := map[[2]string]float64{}
	for _, rep := range f.Nodes() {
		nt := "node:" + rep.Node
		add := func(metric, target string, v float64) {
			snap.Samples = append(snap.Samples, controller.Sample{Metric: metric, Target: target, Node: rep.Node, Value: v, Period: rep.Time})
		}
		add(metricCapacity, nt, rep.Capacity)
		add(metricEstimated, nt, f.estimate(rep.Node))
		add(metricPeriod, nt, float64(rep.PeriodMS)/1000)
		for _, fl := range rep.Flows {
			tt := "tenant:" + fl.Tenant
			add(flowMetric(fl.Class, "streams"), tt, float64(fl.Streams))
			add(flowMetric(fl.Class, "served"), tt, fl.Served)
			add(flowMetric(fl.Class, "waited"), tt, fl.Waited)
			add(flowMetric(fl.Class, "ops"), tt, fl.Ops)
			add(flowMetric(fl.Class, "rejected"), tt, fl.Rejected)
			add(flowMetric(fl.Class, "opsrate"), tt, fl.OpsRate)
			merged[[2]string{flowMetric(fl.Class, "served"), tt}] += fl.Served
		}
	}
	for k, v := range merged {
		snap.Samples = append(snap.Samples, controller.Sample{Metric: k[0], Target: k[1], Value: v, Period: now})
	}
	slices.SortFunc(snap.Samples, func(a, b controller.Sample) int {
		return strings.Compare(a.Node+a.Metric+a.Target, b.Node+b.Metric+b.Target)
	})
	return snap, nil
}
