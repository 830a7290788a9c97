// Package promexp owns Facet's Prometheus exposition: the metric families
// served on the admin listener's /metrics, the obs.Observer and
// dataplane.StepObserver that feed them from the request path, and the
// hooks other parts of the gateway call (throttling, controller restarts).
//
// Everything lives in one registry of the Exporter's own (no process-wide
// default registerer), so tests and several gateways in one process never
// share counters. Label values are bounded: tenants are authenticated
// names, operations and error codes are fixed sets, and bucket names are
// labelled only when asked for (Config.BucketLabels) and only for buckets a
// request was allowed to use. "-" stands for "not known" (a refused
// request's tenant, an unparsed operation).
//
// Cost on the request path: a few map lookups and atomic adds per request
// (see BenchmarkPut4KiB / BenchmarkGet4KiB), two clock reads per filter
// boundary per Read when filters run, nothing per byte otherwise.
package promexp

import (
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/facet-sds/facet/internal/buildinfo"
	"github.com/facet-sds/facet/internal/dataplane"
	"github.com/facet-sds/facet/internal/filter"
	"github.com/facet-sds/facet/internal/obs"
)

// VersionSource reports the version of the policy table the data path
// runs with; control.Service is one.
type VersionSource interface {
	Version() uint64
}

// Config configures an Exporter.
type Config struct {
	// BucketLabels adds a bucket label to the request and byte counters.
	// Off by default: every bucket multiplies the series of its tenant.
	BucketLabels bool
	// Policies, when set, is exposed as facet_policy_table_version.
	Policies VersionSource
	// Logger receives exposition errors; nil discards them.
	Logger *slog.Logger
	// Build is exposed as facet_build_info; zero: the running binary's.
	Build buildinfo.Info
}

// unknown is the label value for what a request did not get to tell.
const unknown = "-"

// Exporter collects Facet's metrics and serves them.
type Exporter struct {
	reg          *prometheus.Registry
	handler      http.Handler
	bucketLabels bool

	requests      *prometheus.CounterVec
	bytes         *prometheus.CounterVec
	duration      *prometheus.HistogramVec
	active        prometheus.Gauge
	filterSeconds *prometheus.CounterVec
	filterBytes   *prometheus.CounterVec
	throttled     *prometheus.CounterVec
	restarts      *prometheus.CounterVec
	filterFails   *prometheus.CounterVec
	wasmCPU       *prometheus.CounterVec
	wasmWaits     *prometheus.CounterVec
	quotaRefusals *prometheus.CounterVec

	// Handles resolved once, so a request costs map reads, not label
	// hashing under the vectors' locks.
	tenants  sync.Map // tenant -> *tenantCounters
	ops      sync.Map // op -> prometheus.Observer
	outcomes sync.Map // outcome -> prometheus.Counter
	steps    sync.Map // stepKey -> *stepMeter
}

type tenantCounters struct {
	in, out prometheus.Counter
}

// outcome keys facet_s3_requests_total's series.
type outcome struct {
	op, tenant, code, class, bucket string
}

// PolicyTableVersion is the facet_policy_table_version gauge of p. A
// server registers it once its policy service exists: the exporter is
// built before the policy service (the WASM runtime counts its filter
// failures in it, and the policy service loads WASM filters).
func PolicyTableVersion(p VersionSource) prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "facet_policy_table_version",
		Help: "Version of the policy table the data path runs with.",
	}, func() float64 { return float64(p.Version()) })
}

// New returns an Exporter with every Facet family registered, plus the Go
// runtime and process collectors.
func New(cfg Config) *Exporter {
	e := &Exporter{reg: prometheus.NewRegistry(), bucketLabels: cfg.BucketLabels}
	reqLabels, byteLabels := []string{"op", "tenant", "code", "class"}, []string{"direction", "tenant"}
	if cfg.BucketLabels {
		reqLabels, byteLabels = append(reqLabels, "bucket"), append(byteLabels, "bucket")
	}
	e.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "facet_s3_requests_total",
		Help: "S3 requests answered, by operation, tenant, S3 error code (OK when none) and class: ok, " +
			"client_error (4xx, and 501 NotImplemented: an S3 operation Facet lacks) or server_error (5xx).",
	}, reqLabels)
	e.bytes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "facet_s3_request_bytes_total",
		Help: "S3 payload bytes by direction: in is what clients sent (before filters), out what they were sent.",
	}, byteLabels)
	e.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "facet_s3_request_duration_seconds",
		Help:    "Time from a request's arrival to the end of its response, by operation.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300},
	}, []string{"op"})
	e.active = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "facet_active_requests",
		Help: "Authenticated S3 requests in progress.",
	})
	e.filterSeconds = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "facet_filter_seconds_total",
		Help: "Time filters spent on request streams, each filter's own (not its source's, destination's or other filters'). " +
			"stage is - on GET, where decoders run wherever the object is read back.",
	}, []string{"filter", "stage", "method"})
	e.filterBytes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "facet_filter_bytes_total",
		Help: "Bytes filters produced (encoded on PUT, decoded on GET).",
	}, []string{"filter", "stage", "method"})
	e.throttled = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "facet_throttled_seconds_total",
		Help: "Time requests were held back by QoS throttling, by tenant.",
	}, []string{"tenant"})
	e.restarts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "facet_controller_restarts_total",
		Help: "Restarts of supervised controllers after a failure or panic.",
	}, []string{"controller"})
	e.filterFails = newFilterFailures()
	e.wasmCPU, e.wasmWaits = newWasmCPU(), newWasmWaits()
	e.quotaRefusals = newQuotaRefusals()
	build := cfg.Build
	if build == (buildinfo.Info{}) {
		build = buildinfo.Get()
	}
	e.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name:        "facet_build_info",
		Help:        "Always 1; its labels say which Facet build this instance runs (facet version).",
		ConstLabels: prometheus.Labels{"version": build.Version, "commit": build.Commit, "goversion": build.GoVersion},
	}, func() float64 { return 1 }))
	e.reg.MustRegister(e.requests, e.bytes, e.duration, e.active, e.filterSeconds, e.filterBytes, e.throttled, e.restarts, e.filterFails, e.wasmCPU, e.wasmWaits, e.quotaRefusals,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if cfg.Policies != nil {
		e.reg.MustRegister(PolicyTableVersion(cfg.Policies))
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	e.handler = promhttp.InstrumentMetricHandler(e.reg, promhttp.HandlerFor(e.reg, promhttp.HandlerOpts{
		ErrorLog:      slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		ErrorHandling: promhttp.ContinueOnError,
		Registry:      e.reg,
	}))
	return e
}

// Handler serves the exposition; the admin listener mounts it on /metrics
// behind its token.
func (e *Exporter) Handler() http.Handler { return e.handler }

// Registry is where other parts of the process register collectors of
// their own.
func (e *Exporter) Registry() *prometheus.Registry { return e.reg }

var (
	_ obs.Observer           = (*Exporter)(nil)
	_ dataplane.StepObserver = (*Exporter)(nil)
)

// Started counts the request as active and makes sure its tenant's series
// exist, at 0 when nothing happened yet (throttling included).
func (e *Exporter) Started(o *obs.Observation) {
	e.tenant(o.Tenant)
	e.active.Inc()
}

// Body leaves the payload alone: s3api counts its bytes already.
func (e *Exporter) Body(_ *obs.Observation, r io.Reader) io.Reader { return r }

// Done counts the finished request.
func (e *Exporter) Done(o *obs.Observation) {
	// Done also comes for requests refused before Started; only routed
	// ones were counted as active.
	if o.Routed {
		e.active.Dec()
	}
	op, tenant, code, bucket := orUnknown(o.Op), orUnknown(o.Tenant), o.ErrCode, unknown
	if code == "" {
		code = "OK"
	}
	if e.bucketLabels && o.Tenant != "" && o.Bucket != "" && o.Status < 400 {
		// Only a bucket the request was allowed to use: a refused name
		// may be anything a client made up.
		bucket = o.Bucket
	}
	e.outcome(outcome{op, tenant, code, string(obs.ClassOf(o.Status, o.ErrCode)), bucket}).Inc()
	e.op(op).Observe(o.Duration.Seconds())
	if o.BytesIn == 0 && o.BytesOut == 0 {
		return
	}
	if e.bucketLabels {
		if o.BytesIn > 0 {
			e.bytes.WithLabelValues("in", tenant, bucket).Add(float64(o.BytesIn))
		}
		if o.BytesOut > 0 {
			e.bytes.WithLabelValues("out", tenant, bucket).Add(float64(o.BytesOut))
		}
		return
	}
	tc := e.tenant(o.Tenant)
	if o.BytesIn > 0 {
		tc.in.Add(float64(o.BytesIn))
	}
	if o.BytesOut > 0 {
		tc.out.Add(float64(o.BytesOut))
	}
}

func orUnknown(s string) string {
	if s == "" {
		return unknown
	}
	return s
}

func (e *Exporter) tenant(name string) *tenantCounters {
	if tc, ok := e.tenants.Load(name); ok {
		return tc.(*tenantCounters)
	}
	label := orUnknown(name)
	var tc *tenantCounters
	if e.bucketLabels {
		// Per-bucket byte series are made as buckets show up.
		tc = &tenantCounters{}
	} else {
		tc = &tenantCounters{in: e.bytes.WithLabelValues("in", label), out: e.bytes.WithLabelValues("out", label)}
	}
	if name != "" {
		e.throttled.WithLabelValues(label)
	}
	got, _ := e.tenants.LoadOrStore(name, tc)
	return got.(*tenantCounters)
}

func (e *Exporter) op(op string) prometheus.Observer {
	if h, ok := e.ops.Load(op); ok {
		return h.(prometheus.Observer)
	}
	h, _ := e.ops.LoadOrStore(op, e.duration.WithLabelValues(op))
	return h.(prometheus.Observer)
}

func (e *Exporter) outcome(k outcome) prometheus.Counter {
	if c, ok := e.outcomes.Load(k); ok {
		return c.(prometheus.Counter)
	}
	labels := []string{k.op, k.tenant, k.code, k.class}
	if e.bucketLabels {
		labels = append(labels, k.bucket)
	}
	c, _ := e.outcomes.LoadOrStore(k, e.requests.WithLabelValues(labels...))
	return c.(prometheus.Counter)
}

// Step hands the data plane the meter of one filter step.
func (e *Exporter) Step(name string, stage filter.Stage, method filter.Method) dataplane.StepMeter {
	k := stepKey{name, stage, method}
	if m, ok := e.steps.Load(k); ok {
		return m.(*stepMeter)
	}
	st := orUnknown(string(stage))
	m, _ := e.steps.LoadOrStore(k, &stepMeter{
		seconds: e.filterSeconds.WithLabelValues(name, st, string(method)),
		bytes:   e.filterBytes.WithLabelValues(name, st, string(method)),
	})
	return m.(*stepMeter)
}

type stepKey struct {
	filter string
	stage  filter.Stage
	method filter.Method
}

type stepMeter struct {
	seconds, bytes prometheus.Counter
}

func (m *stepMeter) Add(d time.Duration, n int64) {
	if d > 0 {
		m.seconds.Add(d.Seconds())
	}
	if n > 0 {
		m.bytes.Add(float64(n))
	}
}

// Throttled adds time a tenant's request waited for QoS tokens.
func (e *Exporter) Throttled(tenant string, d time.Duration) {
	if d > 0 {
		e.throttled.WithLabelValues(orUnknown(tenant)).Add(d.Seconds())
	}
}

// ControllerStarted makes a supervised controller's restart series exist,
// at 0, so dashboards see it before its first failure.
func (e *Exporter) ControllerStarted(controller string) {
	e.restarts.WithLabelValues(controller)
}

// ControllerRestarted counts one restart of a supervised controller.
func (e *Exporter) ControllerRestarted(controller string) {
	e.restarts.WithLabelValues(controller).Inc()
}

// ControllerRemoved drops a deleted controller's series.
func (e *Exporter) ControllerRemoved(controller string) {
	e.restarts.DeleteLabelValues(controller)
}
