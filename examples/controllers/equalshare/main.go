// Command equalshare is a runnable out-of-process Facet controller, the
// example of docs/controllers.md. It talks to Facet only over the bus
// (NATS) and imports nothing of Facet, so it reads as a program in any
// language would be written:
//
//   - it subscribes to the merged workload metrics facet.metric.<class>_bw;
//   - every period, each class's capacity is shared equally among the
//     tenants that moved bytes of that class lately;
//   - the complete set of shares is published on
//     facet.controller.<name>.assignments when it changes, and at least
//     every -refresh (gateways fall back to their static rates when
//     assignments stop);
//   - a heartbeat goes out on facet.controller.<name>.heartbeat every
//     -heartbeat, so that `facet ctl controller list` shows it.
//
// Named "bandwidth" (the default), its assignments replace those of the
// built-in bandwidth controller: start the server with
// --disable-controller bandwidth so that the two do not compete.
//
//	go run ./examples/controllers/equalshare -bus nats://127.0.0.1:4222 -capacity 50MB/s
package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
)

// aggregate is a facet.metric.<metric> message (docs/bus.md): one
// period's values of every target, merged over the nodes.
type aggregate struct {
	V      int                `json:"v"`
	Metric string             `json:"metric"`
	Values map[string]float64 `json:"values"`
}

// assignment is one entry of an assignment message; an empty node means
// every node.
type assignment struct {
	Node   string  `json:"node,omitempty"`
	Target string  `json:"target"`
	Key    string  `json:"key"`
	Value  float64 `json:"value"`
}

// assignments is the message on facet.controller.<name>.assignments.
type assignments struct {
	V           int          `json:"v"`
	Controller  string       `json:"controller"`
	Instance    string       `json:"instance"`
	Seq         uint64       `json:"seq"`
	Time        time.Time    `json:"time"`
	Assignments []assignment `json:"assignments"`
}

// heartbeat is the message on facet.controller.<name>.heartbeat.
type heartbeat struct {
	V          int       `json:"v"`
	Controller string    `json:"controller"`
	Instance   string    `json:"instance"`
	Time       time.Time `json:"time"`
	IntervalMs int64     `json:"interval_ms"`
	Status     string    `json:"status,omitempty"`
}

type config struct {
	bus, name         string
	classes           []string
	capacity          float64 // bytes/s per class, fleet-wide
	period, refresh   time.Duration
	heartbeat, linger time.Duration
}

func main() {
	var cfg config
	var classes, capacity string
	flag.StringVar(&cfg.bus, "bus", "nats://127.0.0.1:4222", "the bus: facet serve --bus-listen, or facet bus")
	flag.StringVar(&cfg.name, "name", "bandwidth", "controller name; gateways apply the assignments of \"bandwidth\"")
	flag.StringVar(&classes, "classes", "get,put", "request classes to share (get, put, background), comma-separated")
	flag.StringVar(&capacity, "capacity", "100MB/s", "bandwidth each class shares among its busy tenants (fleet-wide)")
	flag.DurationVar(&cfg.period, "period", time.Second, "how often the shares are computed")
	flag.DurationVar(&cfg.refresh, "refresh", 2*time.Second, "republish unchanged assignments this often")
	flag.DurationVar(&cfg.heartbeat, "heartbeat", time.Second, "heartbeat interval")
	flag.DurationVar(&cfg.linger, "linger", 5*time.Second, "how long a tenant keeps its share after its last bytes")
	flag.Parse()
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	var err error
	if cfg.capacity, err = parseRate(capacity); err != nil || cfg.capacity <= 0 {
		log.Error("bad -capacity", "value", capacity, "err", err)
		os.Exit(2)
	}
	cfg.classes = strings.Split(classes, ",")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg, log); err != nil {
		log.Error("equalshare stopped", "err", err)
		os.Exit(1)
	}
}

// controller is the state of one run: when each tenant of each class last
// moved bytes, and what was last published.
type controller struct {
	cfg      config
	instance string

	mu       sync.Mutex
	lastBusy map[string]map[string]time.Time // class -> tenant -> last seen busy
	status   string
}

func run(ctx context.Context, cfg config, log *slog.Logger) error {
	nc, err := nats.Connect(cfg.bus, nats.Name("facet-equalshare"), nats.MaxReconnects(-1))
	if err != nil {
		return fmt.Errorf("connect %s: %w", cfg.bus, err)
	}
	defer nc.Close()
	c := &controller{cfg: cfg, instance: newInstance(), lastBusy: map[string]map[string]time.Time{}}
	for _, class := range cfg.classes {
		c.lastBusy[class] = map[string]time.Time{}
		if _, err := nc.Subscribe("facet.metric."+class+"_bw", c.observe(class, log)); err != nil {
			return fmt.Errorf("subscribe: %w", err)
		}
	}
	log.Info("equalshare running", "controller", cfg.name, "instance", c.instance, "bus", cfg.bus,
		"classes", cfg.classes, "capacity", cfg.capacity)
	tick := time.NewTicker(cfg.period)
	defer tick.Stop()
	beat := time.NewTicker(cfg.heartbeat)
	defer beat.Stop()
	var (
		seq       uint64
		last      []assignment
		published time.Time
	)
	c.beat(nc, log) // listed at once, not a heartbeat later
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-beat.C:
			c.beat(nc, log)
		case now := <-tick.C:
			as := c.shares(now)
			if last != nil && slices.Equal(as, last) && now.Sub(published) < cfg.refresh {
				continue
			}
			seq++
			data, err := json.Marshal(assignments{V: 1, Controller: cfg.name, Instance: c.instance, Seq: seq, Time: now.UTC(), Assignments: as})
			if err == nil {
				err = nc.Publish("facet.controller."+cfg.name+".assignments", data)
			}
			if err != nil {
				log.Warn("assignments not published; retried next period", "err", err)
				continue
			}
			if !slices.Equal(as, last) {
				log.Info("assignments published", "seq", seq, "assignments", as)
			}
			last, published = as, now
		}
	}
}

// observe records the tenants that moved bytes of class in a period.
func (c *controller) observe(class string, log *slog.Logger) nats.MsgHandler {
	return func(m *nats.Msg) {
		var a aggregate
		if err := json.Unmarshal(m.Data, &a); err != nil || a.V != 1 {
			log.Warn("metric message refused", "subject", m.Subject, "v", a.V, "err", err)
			return
		}
		now := time.Now()
		c.mu.Lock()
		defer c.mu.Unlock()
		for target, v := range a.Values {
			if tenant, ok := strings.CutPrefix(target, "tenant:"); ok && v > 0 {
				c.lastBusy[class][tenant] = now
			}
		}
	}
}

// shares divides each class's capacity equally among its tenants busy
// within -linger; the result is sorted, so that equal sets compare equal.
func (c *controller) shares(now time.Time) []assignment {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := []assignment{}
	var status []string
	for _, class := range c.cfg.classes {
		var busy []string
		for tenant, at := range c.lastBusy[class] {
			if now.Sub(at) <= c.cfg.linger {
				busy = append(busy, tenant)
			} else {
				delete(c.lastBusy[class], tenant)
			}
		}
		slices.Sort(busy)
		for _, t := range busy {
			out = append(out, assignment{Target: "tenant:" + t, Key: class + "_bw", Value: c.cfg.capacity / float64(len(busy))})
		}
		status = append(status, fmt.Sprintf("%s: %d tenants share %.1f MB/s", class, len(busy), c.cfg.capacity/1e6))
	}
	c.status = strings.Join(status, ", ")
	return out
}

func (c *controller) beat(nc *nats.Conn, log *slog.Logger) {
	c.mu.Lock()
	status := c.status
	c.mu.Unlock()
	data, err := json.Marshal(heartbeat{V: 1, Controller: c.cfg.name, Instance: c.instance, Time: time.Now().UTC(),
		IntervalMs: c.cfg.heartbeat.Milliseconds(), Status: status})
	if err == nil {
		err = nc.Publish("facet.controller."+c.cfg.name+".heartbeat", data)
	}
	if err != nil {
		log.Warn("heartbeat not published", "err", err)
	}
}

// newInstance names this run: 16 random letters and digits.
func newInstance() string {
	const alphabet = "ABCDEFGHJKMNPQRSTVWXYZ0123456789"
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on supported systems
	}
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}

// parseRate reads "50MB/s", "4MiB/s" or a number of bytes per second.
func parseRate(s string) (float64, error) {
	t := strings.TrimSuffix(strings.TrimSpace(s), "/s")
	for _, u := range []struct {
		suffix string
		mult   float64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}} {
		if n, ok := strings.CutSuffix(t, u.suffix); ok {
			v, err := strconv.ParseFloat(n, 64)
			return v * u.mult, err
		}
	}
	return strconv.ParseFloat(t, 64)
}
