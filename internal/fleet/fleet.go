// Package fleet owns the protocol that keeps a node in step with its
// fleet: the bus messages (PolicyVersionMsg, InvalidateMsg), the
// announcements a node makes when it changes the shared store, and the
// sync loop that reloads the policy table and drops cached records when
// another node announces a change.
//
// Every node holds the policy table and the credential and
// bucket-ownership caches (meta.Cache) in memory; the shared store is the
// truth. A node that changes the store (an admin call, a controller's
// decision, a bucket created or deleted through S3) says so on the bus at
// once, and every node reloads or drops what it holds. A slow poll of the
// store's change version stays as the safety net for messages lost while
// the bus was away. When the store or the bus is unreachable a node goes
// on with what it holds (fail static), says so once per outage in its log
// and in /metrics, and catches up by itself when they return. Subjects and
// messages are documented in docs/bus.md.
//
// The pieces are built in dependency order with no cycle: Health (the
// store's reachability) first, then the Announcer (which publishes), then
// the cache and the policy service (which announce through it), then the
// Sync (which listens and reloads them).
package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/facet-sds/facet/internal/bus"
	"github.com/facet-sds/facet/internal/meta"
)

const (
	// SubjectPolicyVersion carries PolicyVersionMsg.
	SubjectPolicyVersion = "facet.policy.version"
	// SubjectInvalidate carries InvalidateMsg.
	SubjectInvalidate = "facet.cache.invalidate"
)

// PolicyVersionMsg announces that the store's change version is now
// Version: nodes whose table is older reload.
type PolicyVersionMsg struct {
	V       int    `json:"v"`
	Version uint64 `json:"version"`
	Node    string `json:"node"`
}

// InvalidateMsg names cached records that changed in the store: access
// keys revoked, tenants deleted (with all their keys), buckets created or
// deleted. Nodes drop them and read them again on next use.
type InvalidateMsg struct {
	V    int    `json:"v"`
	Node string `json:"node"`
	meta.Invalidation
}

const msgVersion = 1

// decodeMsg decodes a bus message strictly: unknown fields and other
// versions are refused, never half-understood.
func decodeMsg(data []byte, msg interface{ version() int }) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(msg); err != nil {
		return fmt.Errorf("decode: %w", err)
	}
	if dec.More() {
		return errors.New("decode: trailing data")
	}
	if v := msg.version(); v != msgVersion {
		return fmt.Errorf("decode: unsupported version %d", v)
	}
	return nil
}

func (m *PolicyVersionMsg) version() int { return m.V }
func (m *InvalidateMsg) version() int    { return m.V }

// DefaultPoll is the safety-net period of the change-version check; the
// bus push is what makes changes visible quickly.
const DefaultPoll = time.Second

// VersionStore is what the fleet reads from the metadata store.
type VersionStore interface {
	PolicyVersion(ctx context.Context) (uint64, error)
}

// PolicyTable is the node's policy service.
type PolicyTable interface {
	Version() uint64
	Reload(ctx context.Context) error
}

// Cache is the node's credential and bucket cache (*meta.Cache).
type Cache interface {
	Invalidate(meta.Invalidation)
	StaleAll()
	Collectors() []prometheus.Collector
}

// connectivity is the bus connection's state; *bus.NATS is one.
type connectivity interface {
	Connected() bool
}

// Health tracks whether the metadata store is reachable. The cache records
// its reads in it and the sync its polls; both read it, so it is built
// before either (meta.Health).
type Health struct {
	log    *slog.Logger
	metaUp atomic.Bool
	downAt atomic.Int64 // unix nanos the current store outage began
}

var _ meta.Health = (*Health)(nil)

// NewHealth returns a Health that believes the store is up.
func NewHealth(log *slog.Logger) *Health {
	h := &Health{log: log}
	h.metaUp.Store(true)
	return h
}

// StoreDown reports whether the store is known to be unreachable now.
func (h *Health) StoreDown() bool { return !h.metaUp.Load() }

// StoreFailed records a failed store call: the first failure of an outage
// is logged, later ones are not.
func (h *Health) StoreFailed(err error) {
	if h.metaUp.CompareAndSwap(true, false) {
		h.downAt.Store(time.Now().UnixNano())
		h.log.Warn("metadata store unreachable: serving with the last policy table and cached credentials and buckets until it returns", "err", err)
	}
}

// StoreOK records a successful store call.
func (h *Health) StoreOK() {
	if h.metaUp.CompareAndSwap(false, true) {
		h.log.Info("metadata store reachable again", "outage", time.Since(time.Unix(0, h.downAt.Load())).Round(time.Millisecond).String())
	}
}

// Announcer tells the fleet that this node changed the store. It only
// publishes: it holds neither the policy table nor the cache, so that both
// can be given it when they are built.
type Announcer struct {
	node   string
	store  VersionStore
	bus    bus.Bus
	health *Health
	log    *slog.Logger
}

// NewAnnouncer returns an announcer for node on b.
func NewAnnouncer(node string, store VersionStore, b bus.Bus, health *Health, log *slog.Logger) *Announcer {
	return &Announcer{node: node, store: store, bus: b, health: health, log: log}
}

// AnnounceVersion tells the fleet that this node changed the store.
func (a *Announcer) AnnounceVersion(ctx context.Context) {
	v, err := a.store.PolicyVersion(ctx)
	if err != nil {
		a.health.StoreFailed(err)
		return // the other nodes' poll will see the change
	}
	a.publish(SubjectPolicyVersion, &PolicyVersionMsg{V: msgVersion, Version: v, Node: a.node})
}

// PublishInvalidation tells the other nodes to drop the records m names
// (meta.CacheConfig.Notify: the cache has dropped them here already).
func (a *Announcer) PublishInvalidation(m meta.Invalidation) {
	a.publish(SubjectInvalidate, &InvalidateMsg{V: msgVersion, Node: a.node, Invalidation: m})
}

func (a *Announcer) publish(subject string, msg any) {
	data, err := json.Marshal(msg)
	if err == nil {
		err = a.bus.Publish(subject, data)
	}
	if err != nil {
		// Counted by the bus; the other nodes' poll and cache TTL catch up.
		a.log.Warn("fleet announcement not published", "subject", subject, "err", err)
	}
}

// SyncConfig configures a Sync.
type SyncConfig struct {
	Announcer *Announcer
	Policies  PolicyTable
	// Cache is nil on nodes that serve no S3.
	Cache Cache
	// Poll is the change-version poll; 0 means DefaultPoll.
	Poll   time.Duration
	Logger *slog.Logger
}

// Sync keeps one node's policy table and caches in step with the store,
// and tracks whether the bus is reachable.
type Sync struct {
	a        *Announcer
	policies PolicyTable
	cache    Cache
	conn     connectivity // nil: always connected (embedded bus)
	poll     time.Duration
	log      *slog.Logger

	kick    chan struct{}
	busUp   atomic.Bool
	reloads atomic.Uint64
	subs    []bus.Subscription
}

// NewSync returns a sync; Subscribe then Run start it.
func NewSync(cfg SyncConfig) *Sync {
	s := &Sync{a: cfg.Announcer, policies: cfg.Policies, cache: cfg.Cache, poll: cfg.Poll, log: cfg.Logger, kick: make(chan struct{}, 1)}
	if s.poll <= 0 {
		s.poll = DefaultPoll
	}
	if c, ok := s.a.bus.(connectivity); ok {
		s.conn = c
	}
	s.busUp.Store(true)
	return s
}

// Subscribe subscribes to the fleet's subjects; Run must follow (it
// unsubscribes when it returns).
func (s *Sync) Subscribe() error {
	vs, err := s.a.bus.Subscribe(SubjectPolicyVersion, func(_ string, data []byte) {
		var m PolicyVersionMsg
		if err := decodeMsg(data, &m); err != nil {
			s.log.Warn("ignoring a malformed policy version message", "err", err)
			return
		}
		if m.Version > s.policies.Version() {
			s.wake()
		}
	})
	if err != nil {
		return err
	}
	is, err := s.a.bus.Subscribe(SubjectInvalidate, func(_ string, data []byte) {
		var m InvalidateMsg
		if err := decodeMsg(data, &m); err != nil {
			s.log.Warn("ignoring a malformed cache invalidation message", "err", err)
			return
		}
		if s.cache != nil {
			s.cache.Invalidate(m.Invalidation)
		}
	})
	if err != nil {
		_ = vs.Unsubscribe()
		return err
	}
	s.subs = []bus.Subscription{vs, is}
	// A subscription is in force once the server has it: wait for that
	// (bounded), so that an announcement made right after start is not
	// missed (the poll would catch it, a second later).
	if fl, ok := s.a.bus.(interface{ Flush(time.Duration) error }); ok {
		_ = fl.Flush(2 * time.Second)
	}
	return nil
}

// Health is the store's reachability as this node sees it.
func (s *Sync) Health() *Health { return s.a.health }

// Invalidate drops records from this node's cache at once, then tells the
// other nodes.
func (s *Sync) Invalidate(m meta.Invalidation) {
	if s.cache != nil {
		s.cache.Invalidate(m)
	}
	s.a.PublishInvalidation(m)
}

func (s *Sync) wake() {
	select {
	case s.kick <- struct{}{}:
	default: // a check is already due
	}
}

// Run checks the change version on every push and every poll period, and
// watches the bus connection, until ctx ends; then it unsubscribes.
func (s *Sync) Run(ctx context.Context) {
	defer func() {
		for _, sub := range s.subs {
			_ = sub.Unsubscribe()
		}
	}()
	poll := time.NewTicker(s.poll)
	defer poll.Stop()
	watch := time.NewTicker(250 * time.Millisecond)
	defer watch.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-watch.C:
			s.watchBus()
			continue
		case <-poll.C:
		case <-s.kick:
		}
		s.check(ctx)
	}
}

// watchBus notices the bus going away and coming back. Messages sent
// meanwhile are lost (core NATS keeps nothing), so on return everything
// cached is re-read on next use and the version is checked at once.
func (s *Sync) watchBus() {
	if s.conn == nil {
		return
	}
	up := s.conn.Connected()
	if s.busUp.Swap(up) == up {
		return
	}
	if !up {
		s.log.Warn("bus unreachable: serving with the last policy table; changes reach this node by the store poll until it returns")
		return
	}
	s.log.Info("bus reachable again: cached credentials and buckets will be re-read")
	if s.cache != nil {
		s.cache.StaleAll()
	}
	s.wake()
}

// check reloads the table when the store's version moved.
func (s *Sync) check(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	v, err := s.a.store.PolicyVersion(cctx)
	if err != nil {
		if ctx.Err() == nil {
			s.a.health.StoreFailed(err)
		}
		return
	}
	s.a.health.StoreOK()
	if v == s.policies.Version() {
		return
	}
	if err := s.policies.Reload(cctx); err != nil {
		if ctx.Err() == nil {
			s.a.health.StoreFailed(err)
		}
		return
	}
	s.reloads.Add(1)
}

// Register exposes the node's view of its fleet in /metrics.
func (s *Sync) Register(reg prometheus.Registerer) error {
	gauge := func(name, help string, v func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, v)
	}
	b2f := func(b *atomic.Bool) func() float64 {
		return func() float64 {
			if b.Load() {
				return 1
			}
			return 0
		}
	}
	cs := []prometheus.Collector{
		gauge("facet_meta_up", "1 when the last call to the metadata store succeeded, 0 during an outage (the node then serves from memory)", b2f(&s.a.health.metaUp)),
		gauge("facet_bus_up", "1 when the node is connected to the bus, 0 while it reconnects", b2f(&s.busUp)),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "facet_policy_reloads_total", Help: "policy table reloads after a change of the store's version (bus push or poll)"},
			func() float64 { return float64(s.reloads.Load()) }),
	}
	if s.cache != nil {
		cs = append(cs, s.cache.Collectors()...)
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}
