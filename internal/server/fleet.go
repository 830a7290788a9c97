package server

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

// Keeping a node in step with its fleet. Every node holds the policy table
// and the credential and bucket-ownership caches in memory; the shared
// store is the truth. A node that changes the store (an admin call, a
// controller's decision, a bucket created or deleted through S3) says so on
// the bus at once, and every node reloads or drops what it holds. A slow
// poll of the store's change version stays as the safety net for messages
// lost while the bus was away. When the store or the bus is unreachable a
// node goes on with what it holds (fail static), says so once per outage
// in its log and in /metrics, and catches up by itself when they return.
// Subjects and messages are documented in docs/bus.md.

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
	V       int      `json:"v"`
	Node    string   `json:"node"`
	Keys    []string `json:"keys,omitempty"`
	Tenants []string `json:"tenants,omitempty"`
	Buckets []string `json:"buckets,omitempty"`
}

const fleetMsgVersion = 1

// decodeFleetMsg decodes a bus message strictly: unknown fields and
// other versions are refused, never half-understood.
func decodeFleetMsg(data []byte, msg interface{ version() int }) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(msg); err != nil {
		return fmt.Errorf("decode: %w", err)
	}
	if dec.More() {
		return errors.New("decode: trailing data")
	}
	if v := msg.version(); v != fleetMsgVersion {
		return fmt.Errorf("decode: unsupported version %d", v)
	}
	return nil
}

func (m *PolicyVersionMsg) version() int { return m.V }
func (m *InvalidateMsg) version() int    { return m.V }

// fleetPoll is the safety-net period of the change-version check; the bus
// push is what makes changes visible quickly.
const fleetPoll = time.Second

// versionStore is what the sync reads from the metadata store.
type versionStore interface {
	PolicyVersion(ctx context.Context) (uint64, error)
}

// policyTable is the node's policy service.
type policyTable interface {
	Version() uint64
	Reload(ctx context.Context) error
}

// connectivity is the bus connection's state; *bus.NATS is one.
type connectivity interface {
	Connected() bool
}

// fleetSync keeps one node's policy table and caches in step with the
// store, and tracks whether the store and the bus are reachable.
type fleetSync struct {
	node     string
	store    versionStore
	policies policyTable
	bus      bus.Bus
	conn     connectivity // nil: always connected (embedded bus)
	cache    *metaCache   // nil on nodes that serve no S3
	poll     time.Duration
	log      *slog.Logger

	kick    chan struct{}
	metaUp  atomic.Bool
	busUp   atomic.Bool
	downAt  atomic.Int64 // unix nanos the current store outage began
	reloads atomic.Uint64
}

func newFleetSync(node string, store versionStore, policies policyTable, b bus.Bus, cache *metaCache, log *slog.Logger) *fleetSync {
	f := &fleetSync{node: node, store: store, policies: policies, bus: b, cache: cache, poll: fleetPoll, log: log, kick: make(chan struct{}, 1)}
	if c, ok := b.(connectivity); ok {
		f.conn = c
	}
	f.metaUp.Store(true)
	f.busUp.Store(true)
	if cache != nil {
		cache.health, cache.notify = f, f.invalidate
	}
	return f
}

// storeDown reports whether the store is known to be unreachable now.
func (f *fleetSync) storeDown() bool { return !f.metaUp.Load() }

// storeFailed records a failed store call: the first failure of an
// outage is logged, later ones are not.
func (f *fleetSync) storeFailed(err error) {
	if f.metaUp.CompareAndSwap(true, false) {
		f.downAt.Store(time.Now().UnixNano())
		f.log.Warn("metadata store unreachable: serving with the last policy table and cached credentials and buckets until it returns", "err", err)
	}
}

// storeOK records a successful store call.
func (f *fleetSync) storeOK() {
	if f.metaUp.CompareAndSwap(false, true) {
		f.log.Info("metadata store reachable again", "outage", time.Since(time.Unix(0, f.downAt.Load())).Round(time.Millisecond).String())
	}
}

// start subscribes to the fleet's subjects and runs the sync until ctx
// ends.
func (f *fleetSync) start(ctx context.Context) error {
	vs, err := f.bus.Subscribe(SubjectPolicyVersion, func(_ string, data []byte) {
		var m PolicyVersionMsg
		if err := decodeFleetMsg(data, &m); err != nil {
			f.log.Warn("ignoring a malformed policy version message", "err", err)
			return
		}
		if m.Version > f.policies.Version() {
			f.wake()
		}
	})
	if err != nil {
		return err
	}
	is, err := f.bus.Subscribe(SubjectInvalidate, func(_ string, data []byte) {
		var m InvalidateMsg
		if err := decodeFleetMsg(data, &m); err != nil {
			f.log.Warn("ignoring a malformed cache invalidation message", "err", err)
			return
		}
		if f.cache != nil {
			f.cache.invalidate(m)
		}
	})
	if err != nil {
		_ = vs.Unsubscribe()
		return err
	}
	// A subscription is in force once the server has it: wait for that
	// (bounded), so that an announcement made right after start is not
	// missed (the poll would catch it, a second later).
	if fl, ok := f.bus.(interface{ Flush(time.Duration) error }); ok {
		_ = fl.Flush(2 * time.Second)
	}
	go func() {
		f.run(ctx)
		_ = vs.Unsubscribe()
		_ = is.Unsubscribe()
	}()
	return nil
}

func (f *fleetSync) wake() {
	select {
	case f.kick <- struct{}{}:
	default: // a check is already due
	}
}

// run checks the change version on every push and every poll period, and
// watches the bus connection.
func (f *fleetSync) run(ctx context.Context) {
	poll := time.NewTicker(f.poll)
	defer poll.Stop()
	watch := time.NewTicker(250 * time.Millisecond)
	defer watch.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-watch.C:
			f.watchBus()
			continue
		case <-poll.C:
		case <-f.kick:
		}
		f.check(ctx)
	}
}

// watchBus notices the bus going away and coming back. Messages sent
// meanwhile are lost (core NATS keeps nothing), so on return everything
// cached is re-read on next use and the version is checked at once.
func (f *fleetSync) watchBus() {
	if f.conn == nil {
		return
	}
	up := f.conn.Connected()
	if f.busUp.Swap(up) == up {
		return
	}
	if !up {
		f.log.Warn("bus unreachable: serving with the last policy table; changes reach this node by the store poll until it returns")
		return
	}
	f.log.Info("bus reachable again: cached credentials and buckets will be re-read")
	if f.cache != nil {
		f.cache.staleAll()
	}
	f.wake()
}

// check reloads the table when the store's version moved.
func (f *fleetSync) check(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	v, err := f.store.PolicyVersion(cctx)
	if err != nil {
		if ctx.Err() == nil {
			f.storeFailed(err)
		}
		return
	}
	f.storeOK()
	if v == f.policies.Version() {
		return
	}
	if err := f.policies.Reload(cctx); err != nil {
		if ctx.Err() == nil {
			f.storeFailed(err)
		}
		return
	}
	f.reloads.Add(1)
}

// announceVersion tells the fleet that this node changed the store.
func (f *fleetSync) announceVersion(ctx context.Context) {
	v, err := f.store.PolicyVersion(ctx)
	if err != nil {
		f.storeFailed(err)
		return // the other nodes' poll will see the change
	}
	f.publish(SubjectPolicyVersion, &PolicyVersionMsg{V: fleetMsgVersion, Version: v, Node: f.node})
}

// invalidate drops records from this node's cache at once, then tells the
// other nodes.
func (f *fleetSync) invalidate(m InvalidateMsg) {
	m.V, m.Node = fleetMsgVersion, f.node
	if f.cache != nil {
		f.cache.invalidate(m)
	}
	f.publish(SubjectInvalidate, &m)
}

func (f *fleetSync) publish(subject string, msg any) {
	data, err := json.Marshal(msg)
	if err == nil {
		err = f.bus.Publish(subject, data)
	}
	if err != nil {
		// Counted by the bus; the other nodes' poll and cache TTL catch up.
		f.log.Warn("fleet announcement not published", "subject", subject, "err", err)
	}
}

// register exposes the node's view of its fleet in /metrics.
func (f *fleetSync) register(reg prometheus.Registerer) error {
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
		gauge("facet_meta_up", "1 when the last call to the metadata store succeeded, 0 during an outage (the node then serves from memory)", b2f(&f.metaUp)),
		gauge("facet_bus_up", "1 when the node is connected to the bus, 0 while it reconnects", b2f(&f.busUp)),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "facet_policy_reloads_total", Help: "policy table reloads after a change of the store's version (bus push or poll)"},
			func() float64 { return float64(f.reloads.Load()) }),
	}
	if f.cache != nil {
		cs = append(cs, f.cache.collectors()...)
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// announcingStore is the metadata store as the policy service sees it:
// policies added through the control API and controllers' decisions are
// announced to the fleet once stored.
type announcingStore struct {
	*meta.Store
	sync *fleetSync
}

func (s announcingStore) AddPolicies(ctx context.Context, ps []meta.NewPolicy) ([]meta.Policy, error) {
	out, err := s.Store.AddPolicies(ctx, ps)
	if err == nil {
		s.sync.announceVersion(ctx)
	}
	return out, err
}

func (s announcingStore) SetPolicyState(ctx context.Context, id string, state meta.PolicyState, reason string) (meta.Policy, error) {
	out, err := s.Store.SetPolicyState(ctx, id, state, reason)
	if err == nil {
		s.sync.announceVersion(ctx)
	}
	return out, err
}
