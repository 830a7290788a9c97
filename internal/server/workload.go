package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/facet-sds/facet/internal/admin"
	"github.com/facet-sds/facet/internal/bus"
	"github.com/facet-sds/facet/internal/control"
	"github.com/facet-sds/facet/internal/metrics"
	"github.com/facet-sds/facet/internal/obs"
)

// workload is a gateway's bus and workload metrics: the NATS bus (embedded
// or joined), the collector that measures this node's requests, and the
// aggregator that merges every node's samples for the controllers and the
// control API.
type workload struct {
	reg       *metrics.Registry
	server    *bus.Server // embedded bus; nil when joined
	bus       *bus.NATS
	collector *metrics.Collector // nil when workload metrics are off
	agg       *metrics.Aggregator
	log       *slog.Logger
}

// openWorkload connects the bus and builds the workload metrics; their
// loops run from Start, and the bus closes at Shutdown, after them.
// Joining an external bus never fails for the bus being down: the
// connection keeps retrying, and the data path goes on meanwhile.
func (s *Server) openWorkload(opts Options) (*workload, error) {
	logger := s.log
	node := opts.Node
	if node == "" {
		node = defaultNode()
	}
	w := &workload{reg: metrics.NewBuiltinRegistry(), log: logger}
	var err error
	if opts.BusURL == "" {
		w.server, err = bus.StartServer(bus.ServerOptions{Name: node, Addr: opts.BusListen, Logger: logger, TLS: s.busTLS()})
		if err != nil {
			return nil, err
		}
		if u := w.server.URL(); u != "" {
			logger.Info("bus listening", "url", u)
		}
		w.bus, err = w.server.Connect(node)
	} else {
		if opts.BusListen != "" {
			return nil, errors.New("--bus-listen is for the embedded bus; with --bus, run `facet bus` or a NATS cluster")
		}
		w.bus, err = bus.Dial(opts.BusURL, node, opts.BusCA, logger)
	}
	if err != nil {
		w.close()
		return nil, err
	}
	s.closeLater("bus", func() error { w.close(); return nil })
	w.agg = metrics.NewAggregator(metrics.AggregatorConfig{Registry: w.reg, Bus: w.bus, Period: opts.MetricsPeriod, Logger: logger})
	if err := w.agg.Listen(s.ctx); err != nil {
		return nil, fmt.Errorf("metric aggregator: %w", err)
	}
	s.later("metric aggregator", w.agg.Run)
	if !opts.NoWorkloadMetrics {
		w.collector = metrics.NewCollector(metrics.CollectorConfig{Node: node, Registry: w.reg, Bus: w.bus, Period: opts.MetricsPeriod, Logger: logger})
		if err := w.collector.Listen(s.ctx); err != nil {
			return nil, fmt.Errorf("metric collector: %w", err)
		}
		s.later("metric collector", w.collector.Run)
	}
	logger.Info("workload metrics", "node", node, "collect", w.collector != nil, "bus", busName(opts))
	return w, nil
}

func busName(opts Options) string {
	if opts.BusURL == "" {
		return "embedded"
	}
	return "external"
}

// observer is what the S3 front end tells about requests; nil when
// workload metrics are off.
func (w *workload) observer() obs.Observer {
	if w.collector == nil {
		return nil
	}
	return w.collector
}

// feed is the automation controllers' metric feed.
func (w *workload) feed() control.Feed { return control.FeedOf(w.agg.Subscribe, w.agg.Healthy) }

// source is the control API's view of the metrics.
func (w *workload) source() admin.MetricsSource { return workloadSource{w.reg, w.agg} }

func (w *workload) close() {
	if w.bus != nil {
		if err := w.bus.Close(); err != nil {
			w.log.Warn("bus close", "err", err)
		}
	}
	if w.server != nil {
		w.server.Close()
	}
}

// workloadSource adapts the registry and the aggregator to the control
// API.
type workloadSource struct {
	reg *metrics.Registry
	agg *metrics.Aggregator
}

func (s workloadSource) Metrics(context.Context) ([]admin.MetricInfo, error) {
	var out []admin.MetricInfo
	for _, in := range s.reg.Infos() {
		out = append(out, admin.MetricInfo{Name: in.Name, Unit: string(in.Unit), Doc: in.Doc, Merge: string(in.Merge)})
	}
	return out, nil
}

func (s workloadSource) MetricValues(_ context.Context, metric, target string) (admin.MetricValues, error) {
	info, ok := s.reg.Lookup(metric)
	if !ok && !s.agg.Known(metric) {
		return admin.MetricValues{}, fmt.Errorf("metric %q: %w", metric, admin.ErrUnknownMetric)
	}
	var tg metrics.Target
	if target != "" {
		var err error
		if tg, err = metrics.ParseTarget(target); err != nil {
			return admin.MetricValues{}, fmt.Errorf("%w: %v", admin.ErrInvalidInput, err)
		}
	}
	out := admin.MetricValues{Metric: metric, Unit: string(info.Unit), Values: []admin.MetricValue{}}
	agg, ok := s.agg.Latest(metric)
	if ok {
		p := time.UnixMilli(agg.StartMs).UTC()
		out.Period, out.PeriodSeconds, out.Nodes = &p, float64(agg.PeriodMs)/1000, agg.Nodes
	}
	if target != "" {
		out.Values = append(out.Values, admin.MetricValue{Target: tg.String(), Value: agg.Values[tg.String()]})
		return out, nil
	}
	for _, t := range slices.Sorted(maps.Keys(agg.Values)) {
		out.Values = append(out.Values, admin.MetricValue{Target: t, Value: agg.Values[t]})
	}
	return out, nil
}
