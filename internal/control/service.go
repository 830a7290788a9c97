// Package control owns the policy service: it turns the policies stored in
// the metadata store into the compiled, versioned table that the data plane
// reads from memory on every request, keeps that table in step with the
// store (a level-triggered reconcile loop on the store's change version),
// and answers the control API's policy questions (validate, apply,
// explain, filter registry, usage).
package control

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/facet-sds/facet/internal/block"
	"github.com/facet-sds/facet/internal/dataplane"
	"github.com/facet-sds/facet/internal/filter"
	"github.com/facet-sds/facet/internal/meta"
	"github.com/facet-sds/facet/internal/ownership"
	"github.com/facet-sds/facet/internal/policy"
)

// Store is what the service needs from the metadata store. Only the
// control plane calls it; the request path reads the compiled table.
type Store interface {
	PolicyVersion(ctx context.Context) (uint64, error)
	Snapshot(ctx context.Context) (meta.Snapshot, error)
	AddPolicies(ctx context.Context, ps []meta.NewPolicy) ([]meta.Policy, error)
	ListTenants(ctx context.Context) ([]meta.Tenant, error)
	ListGroups(ctx context.Context) ([]meta.Group, error)
	ListBuckets(ctx context.Context, tenant string) ([]ownership.Bucket, error)
	// SetPolicyState records a dynamic policy's activation (controllers).
	SetPolicyState(ctx context.Context, id string, state meta.PolicyState, reason string) (meta.Policy, error)
}

// Service compiles policies and serves the compiled table.
type Service struct {
	store    Store
	registry *filter.Registry
	dynamic  DynamicFilters
	blocks   *policy.BlockFilters
	env      filter.Env
	keyIDs   *KeyIDs
	log      *slog.Logger
	poll     time.Duration
	metrics  func() []policy.MetricInfo

	state  atomic.Pointer[state]
	loadMu sync.Mutex // one reload (or activation change) at a time
	// desired holds the activations decided by this process's
	// controllers, by policy id; they override the stored states, which
	// may lag (a failed write is retried) (guarded by loadMu).
	desired map[string]bool
	// controllers is set when automation controllers run the dynamic
	// policies; it changes the reason stored with new ones.
	controllers atomic.Bool
}

// state is one compiled generation of the policy table, swapped atomically.
type state struct {
	version uint64
	// registry holds the native filters plus this generation's run-time
	// registered ones (WASM): the table was checked against it.
	registry *filter.Registry
	// decoders are the registry's reversible filters' decoders, ready.
	decoders map[string]filter.Decoder
	table    *policy.Table
	compiled *policy.Compiled
	// dataKeys maps tenant to its current data-key id.
	dataKeys map[string]string
	// groups are the groups the table was compiled with.
	groups map[string][]string
	// stored is each policy's state and reason in the store.
	stored map[string]storedState
	// changed is closed when a newer state replaces this one.
	changed chan struct{}
}

type storedState struct {
	state  meta.PolicyState
	reason string
}

// Config assembles a Service.
type Config struct {
	Store    Store
	Registry *filter.Registry
	// Keys, when set, is given to filters that encrypt.
	Keys filter.KeyProvider
	// KeyIDs, when set, is kept holding the tenants' current data-key ids
	// of the table in force: the key provider reads them there (see
	// KeyIDs).
	KeyIDs *KeyIDs
	Logger *slog.Logger
	// Metrics lists the metrics policies may name, read each time a
	// policy is checked, so a newly registered metric is usable without a
	// restart; nil means policy.DefaultMetrics.
	Metrics func() []policy.MetricInfo
	// Dynamic, when set, builds the filters registered at run time (WASM
	// modules) from the store's filter entries on every reload.
	Dynamic DynamicFilters
	// BlockFilters are the block filters volume policies are checked
	// against; nil means the built-in ones (block.PolicyFilters).
	BlockFilters *policy.BlockFilters
	// Poll is how often the store's change version is checked (default
	// 250 ms), which bounds how long other nodes take to see a change.
	Poll time.Duration
}

// DynamicFilters turns the store's filter entries into filter
// descriptions. A filter that fails to load is left out and reported in
// the error; the others are returned.
type DynamicFilters interface {
	Load(ctx context.Context, entries []meta.FilterEntry) ([]*filter.Info, error)
}

// KeyIDs holds each tenant's current data-key id as of the table in force
// (keys.CurrentKeyIDs). It breaks the cycle between the policy service,
// whose encryption filters need the key provider, and the key provider,
// which asks whose key is current: both are given one KeyIDs, built before
// either; the service writes it on every reload, the provider reads it.
type KeyIDs struct {
	m atomic.Pointer[map[string]string]
}

// NewKeyIDs returns an empty table: no tenant has a data key yet.
func NewKeyIDs() *KeyIDs {
	k := &KeyIDs{}
	k.m.Store(&map[string]string{})
	return k
}

// CurrentKeyID is tenant's current data-key id, "" when it has none.
func (k *KeyIDs) CurrentKeyID(_ context.Context, tenant string) (string, error) {
	return (*k.m.Load())[tenant], nil
}

// New returns a service with an empty table; call Reload before serving.
func New(cfg Config) *Service {
	s := &Service{store: cfg.Store, registry: cfg.Registry, dynamic: cfg.Dynamic, env: filter.Env{Keys: cfg.Keys}, keyIDs: cfg.KeyIDs, log: cfg.Logger, poll: cfg.Poll,
		metrics: cfg.Metrics, desired: map[string]bool{}}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.poll <= 0 {
		s.poll = 250 * time.Millisecond
	}
	if s.blocks = cfg.BlockFilters; s.blocks == nil {
		s.blocks = block.PolicyFilters(nil)
	}
	empty, _ := policy.Compile(nil, nil)
	s.state.Store(&state{registry: cfg.Registry, table: empty.Static(), compiled: empty, dataKeys: map[string]string{},
		groups: map[string][]string{}, stored: map[string]storedState{}, changed: make(chan struct{})})
	return s
}

// Version is the change version of the table in force.
func (s *Service) Version() uint64 { return s.state.Load().version }

// CurrentKeyID answers from memory which data-key id a tenant's new
// objects use (keys.CurrentKeyIDs).
func (s *Service) CurrentKeyID(_ context.Context, tenant string) (string, error) {
	return s.state.Load().dataKeys[tenant], nil
}

// Run keeps the table in step with the store until ctx ends. It polls the
// change version and rebuilds from a snapshot when it moved; a failed
// reload keeps the last table (fail static) and is retried next tick.
func (s *Service) Run(ctx context.Context) {
	t := time.NewTicker(s.poll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		v, err := s.store.PolicyVersion(ctx)
		if err != nil {
			s.log.Warn("policy version check failed; keeping the current table", "err", err)
			continue
		}
		if v == s.Version() {
			continue
		}
		if err := s.Reload(ctx); err != nil {
			s.log.Warn("policy reload failed; keeping the current table", "err", err)
		}
	}
}

// Reload rebuilds the table from the store.
func (s *Service) Reload(ctx context.Context) error {
	s.loadMu.Lock()
	defer s.loadMu.Unlock()
	snap, err := s.store.Snapshot(ctx)
	if err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	reg := s.generation(ctx, snap.Filters)
	vocab := s.vocabulary(reg, nil)
	vocab.AnyTarget = true // a target deleted since does not invalidate the rest
	var pols []*policy.Policy
	stored := make(map[string]storedState, len(snap.Policies))
	for _, sp := range snap.Policies {
		stored[sp.ID] = storedState{state: sp.State, reason: sp.Reason}
		if sp.State == meta.PolicyDisabled {
			continue
		}
		parsed, err := policy.ParseAndCheck(sp.ID, sp.Text, vocab)
		if err != nil || len(parsed) != 1 {
			s.log.Error("stored policy no longer compiles; it is left out", "policy", sp.ID, "err", err)
			continue
		}
		parsed[0].ID = sp.ID
		if parsed[0].Name == "" {
			parsed[0].Name = sp.Name
		}
		parsed[0].Line = sp.Line
		pols = append(pols, parsed[0])
	}
	groups := map[string][]string{}
	for _, g := range snap.Groups {
		groups[g.Name] = g.Members
	}
	compiled, err := policy.Compile(pols, groups)
	if err != nil {
		return fmt.Errorf("compile: %w", err)
	}
	s.provision(compiled)
	dk := map[string]string{}
	for _, k := range snap.DataKeys {
		dk[k.Tenant] = k.Current
	}
	st := &state{version: snap.Version, registry: reg, decoders: s.provisionDecoders(reg), compiled: compiled, dataKeys: dk, groups: groups, stored: stored}
	if err := s.activate(st); err != nil {
		return err
	}
	s.log.Info("policy table loaded", "version", snap.Version, "policies", len(pols), "dynamic", len(compiled.Dynamic()),
		"activated", len(st.activated()))
	return nil
}

// vocabulary is what policies are checked against. targets, when given,
// lists the tenants, buckets and groups that exist.
func (s *Service) vocabulary(reg *filter.Registry, targets *targetSet) *policy.StaticVocabulary {
	metrics := policy.DefaultMetrics
	if s.metrics != nil {
		metrics = s.metrics
	}
	v := &policy.StaticVocabulary{Filters: reg, Metrics: metrics(), ObjectTypes: policy.DefaultObjectTypes(), Blocks: s.blocks}
	if targets != nil {
		v.Tenants, v.Buckets, v.Groups, v.Volumes = targets.tenants, targets.buckets, targets.groups, targets.volumes
	}
	return v
}

type targetSet struct{ tenants, buckets, groups, volumes []string }

// targets reads what exists now, for validating new policies (control
// plane only; never on the request path).
func (s *Service) targets(ctx context.Context) (*targetSet, error) {
	ts := &targetSet{}
	tenants, err := s.store.ListTenants(ctx)
	if err != nil {
		return nil, err
	}
	for _, t := range tenants {
		ts.tenants = append(ts.tenants, t.Name)
		bs, err := s.store.ListBuckets(ctx, t.Name)
		if err != nil {
			return nil, err
		}
		for _, b := range bs {
			ts.buckets = append(ts.buckets, t.Name+"/"+b.Name)
		}
	}
	groups, err := s.store.ListGroups(ctx)
	if err != nil {
		return nil, err
	}
	for _, g := range groups {
		ts.groups = append(ts.groups, g.Name)
	}
	if ts.volumes, err = s.volumeNames(ctx); err != nil {
		return nil, err
	}
	return ts, nil
}

// ForPut resolves the PUT pipeline of a request from the in-memory table.
func (s *Service) ForPut(req *filter.Request) dataplane.Pipeline {
	return s.resolve(req, filter.MethodPut)
}

// ForRequest resolves the filters in force for a request of req.Method
// (GET-side caching, DELETE-side recycle bin...), from the in-memory table.
func (s *Service) ForRequest(req *filter.Request) dataplane.Pipeline {
	return s.resolve(req, req.Method)
}

func (s *Service) resolve(req *filter.Request, method filter.Method) dataplane.Pipeline {
	st := s.state.Load()
	q := policy.Query{Tenant: req.Tenant, Bucket: req.Bucket, Key: req.Key, Size: req.Size,
		ContentType: req.Header["content-type"], Tags: tagsOf(req.Header), Method: method}
	res := st.table.Resolve(q)
	if res.Len() == 0 {
		return dataplane.Pipeline{}
	}
	callable := req.Header["x-facet-run-filter"]
	var p dataplane.Pipeline
	for _, stage := range []filter.Stage{filter.StageGateway, filter.StageStorage} {
		for _, step := range res.Stage(stage) {
			if step.Callable && !listed(callable, step.Filter) {
				continue
			}
			f := step.Instance
			if f == nil {
				// A step compiled without an instance fails requests
				// rather than being skipped: skipping could drop
				// encryption.
				f = brokenFilter{info: step.Info, err: errors.New("not provisioned")}
			}
			p.Steps = append(p.Steps, dataplane.Step{Stage: stage, Filter: f, Policy: step.PolicyID})
		}
	}
	return p
}

func listed(header, name string) bool {
	for _, n := range strings.Split(header, ",") {
		if strings.EqualFold(strings.TrimSpace(n), name) {
			return true
		}
	}
	return false
}

func tagsOf(h map[string]string) map[string]string {
	var tags map[string]string
	for k, v := range h {
		if t, ok := strings.CutPrefix(k, "x-amz-meta-"); ok {
			if tags == nil {
				tags = map[string]string{}
			}
			tags[t] = v
		}
	}
	return tags
}

// provision builds every step's filter instance when a generation
// compiles, so requests only call ready instances. The checker has
// validated the parameters; what can still fail is this process's
// environment (no key provider, a WASM filter on a controller), and such
// a step fails its requests rather than being skipped: skipping could
// drop encryption.
func (s *Service) provision(c *policy.Compiled) {
	c.Provision(func(step *policy.Step) filter.Filter {
		f, err := step.Info.New(step.Params, s.env)
		if err == nil {
			return f
		}
		err = fmt.Errorf("filter %s of policy %s: %w", step.Filter, step.PolicyID, err)
		if errors.Is(err, filter.ErrNotHere) {
			s.log.Debug("filter not provisioned", "err", err)
		} else {
			s.log.Warn("filter not provisioned: its requests fail", "err", err)
		}
		return brokenFilter{info: step.Info, err: err}
	})
}

// brokenFilter stands for a filter that could not be instantiated: it fails
// the request with the reason.
type brokenFilter struct {
	info *filter.Info
	err  error
}

func (b brokenFilter) Info() *filter.Info { return b.info }

var errBroken = errors.New("filter unavailable")

func (b brokenFilter) Transform(context.Context, *filter.Request, io.Reader) (io.Reader, error) {
	return nil, fmt.Errorf("%w: %v", errBroken, b.err)
}
