package block

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/facet-sds/facet/internal/block/bfilter"
	"github.com/facet-sds/facet/internal/block/nbd"
	"github.com/facet-sds/facet/internal/filter"
	"github.com/facet-sds/facet/internal/meta"
	"github.com/facet-sds/facet/internal/metrics"
	"github.com/facet-sds/facet/internal/policy"
)

// Store is what the block layer needs from the metadata store.
type Store interface {
	PolicyVersion(ctx context.Context) (uint64, error)
	CreatePool(ctx context.Context, p meta.Pool) (meta.Pool, error)
	ListPools(ctx context.Context) ([]meta.Pool, error)
	DeletePool(ctx context.Context, name string) error
	CreateVolume(ctx context.Context, v meta.Volume, place meta.Placer) (meta.Volume, error)
	UpdateVolume(ctx context.Context, name string, fn func(v *meta.Volume, pools []meta.Pool, others []meta.Volume) error) (meta.Volume, error)
	GetVolume(ctx context.Context, name string) (meta.Volume, error)
	ListVolumes(ctx context.Context) ([]meta.Volume, error)
	DeleteVolume(ctx context.Context, name string) (meta.Volume, error)
	GetTenant(ctx context.Context, name string) (meta.Tenant, error)
}

// Policies gives the compiled policy table in force (control.Service).
type Policies interface {
	VolumeTable() *policy.Table
}

// Keys derives keys from the master key (keys.Provider).
type Keys interface {
	Key(ctx context.Context, tenant, keyID string) ([]byte, error)
}

// Config assembles a Manager.
type Config struct {
	Store    Store
	Policies Policies // nil: volumes have no filters and only API throttles
	Keys     Keys     // nil: the encryption filter cannot be used
	Logger   *slog.Logger
	// Poll is how often the store and the policy table are checked for
	// changes (default 250 ms).
	Poll time.Duration
	// Slots is how many I/Os a pool runs at once before its fair-share
	// queue orders the rest (default 8: more concurrent writes only
	// contend for the file's lock, measured by facet bench nbd --slots).
	Slots int
	// ThrottleWindow is the time a throttle's burst covers
	// (default DefaultBurstWindow).
	ThrottleWindow time.Duration
	// Filters is the block filter list (default bfilter.Builtin).
	Filters *bfilter.Registry
	// TLSDir holds the NBD CA that signs tenants' client certificates;
	// empty: none can be issued.
	TLSDir string
	// Publish, when set, receives each second's per-volume rates as
	// workload-metric node samples (volume_read_bw, volume_write_bw,
	// volume_read_iops, volume_write_iops; targets "volume:NAME") for
	// the bus; Node names this process in them.
	Publish func(subject string, data []byte) error
	Node    string
	// DefaultPoolDir, when set, is where the manager keeps the default
	// pool (see keepDefaultPool), so that volumes can be created before
	// an administrator configures pools.
	DefaultPoolDir string
}

// Manager owns the volumes of one node: it opens them for NBD
// connections, keeps their stacks and throttles in step with policies and
// the API, runs the pools' queues and counts I/O.
type Manager struct {
	cfg Config
	log *slog.Logger

	mu      sync.Mutex
	pools   map[string]meta.Pool
	vols    map[string]meta.Volume // known volumes, by name
	open    map[string]*volume     // volumes with connections
	conns   map[string]int         // connections per volume, those of opens replaced by a resize included
	gates   map[string]*gate
	version uint64
	table   *policy.Table
	rates   map[string]Rates // per-volume rates of the last period
	stats   map[string]*volumeStats
}

// New returns a manager; call Reload before serving.
func New(cfg Config) *Manager {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Poll <= 0 {
		cfg.Poll = 250 * time.Millisecond
	}
	if cfg.Slots <= 0 {
		cfg.Slots = 8
	}
	if cfg.ThrottleWindow <= 0 {
		cfg.ThrottleWindow = DefaultBurstWindow
	}
	if cfg.Filters == nil {
		cfg.Filters = bfilter.NewRegistry(bfilter.Builtin()...)
	}
	return &Manager{cfg: cfg, log: cfg.Logger, pools: map[string]meta.Pool{}, vols: map[string]meta.Volume{},
		open: map[string]*volume{}, conns: map[string]int{}, gates: map[string]*gate{}, rates: map[string]Rates{}, stats: map[string]*volumeStats{}}
}

// Reload reads pools and volumes from the store and applies policies and
// throttles to the open volumes.
func (m *Manager) Reload(ctx context.Context) error {
	ver, err := m.cfg.Store.PolicyVersion(ctx)
	if err != nil {
		return fmt.Errorf("block: reload: %w", err)
	}
	pools, err := m.cfg.Store.ListPools(ctx)
	if err != nil {
		return fmt.Errorf("block: reload: %w", err)
	}
	vols, err := m.cfg.Store.ListVolumes(ctx)
	if err != nil {
		return fmt.Errorf("block: reload: %w", err)
	}
	if m.cfg.DefaultPoolDir != "" && m.keepDefaultPool(ctx, pools, vols) {
		if pools, err = m.cfg.Store.ListPools(ctx); err != nil {
			return fmt.Errorf("block: reload: %w", err)
		}
		if ver, err = m.cfg.Store.PolicyVersion(ctx); err != nil {
			return fmt.Errorf("block: reload: %w", err)
		}
	}
	var table *policy.Table
	if m.cfg.Policies != nil {
		table = m.cfg.Policies.VolumeTable()
	}
	m.mu.Lock()
	record := m.reloadLocked(ctx, ver, table, pools, vols)
	m.mu.Unlock()
	for _, r := range record {
		m.recordApplied(ctx, r.name, r.steps)
	}
	return nil
}

// reloadLocked installs what Reload read and applies it to the open
// volumes; it returns the stacks to record. m.mu is held.
func (m *Manager) reloadLocked(ctx context.Context, ver uint64, table *policy.Table, pools []meta.Pool, vols []meta.Volume) []applied {
	m.version, m.table = ver, table
	m.pools = map[string]meta.Pool{}
	for _, p := range pools {
		m.pools[p.Name] = p
	}
	m.vols = map[string]meta.Volume{}
	for _, v := range vols {
		m.vols[v.Name] = v
		if m.stats[v.Name] == nil {
			m.stats[v.Name] = &volumeStats{}
		}
	}
	for name := range m.stats {
		if _, ok := m.vols[name]; !ok {
			delete(m.stats, name)
			delete(m.rates, name)
		}
	}
	for name, ov := range m.open {
		rec, ok := m.vols[name]
		if !ok {
			continue // deleted under its connections: they keep it until they close
		}
		ov.rec.Throttle = rec.Throttle
		ov.setThrottle(m.effectiveThrottle(rec))
		m.restack(ctx, ov)
	}
	return m.unrecorded()
}

// Run keeps the manager in step with the store until ctx ends, and
// computes per-volume rates once per second.
func (m *Manager) Run(ctx context.Context) {
	t := time.NewTicker(m.cfg.Poll)
	defer t.Stop()
	rt := time.NewTicker(time.Second)
	defer rt.Stop()
	prev := map[string][4]int64{}
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			ver, err := m.cfg.Store.PolicyVersion(ctx)
			m.mu.Lock()
			stale := err == nil && ver != m.version
			var tableChanged bool
			if m.cfg.Policies != nil {
				tableChanged = m.cfg.Policies.VolumeTable() != m.table
			}
			m.mu.Unlock()
			if stale || tableChanged {
				if err := m.Reload(ctx); err != nil {
					m.log.Warn("block reload failed; keeping the last state", "err", err)
				}
			}
		case now := <-rt.C:
			dt := now.Sub(last).Seconds()
			last = now
			m.mu.Lock()
			for name, st := range m.stats {
				cur := [4]int64{st.readBytes.Load(), st.writeBytes.Load(), st.readOps.Load(), st.writeOps.Load()}
				p := prev[name]
				m.rates[name] = Rates{ReadBW: float64(cur[0]-p[0]) / dt, WriteBW: float64(cur[1]-p[1]) / dt,
					ReadIOPS: float64(cur[2]-p[2]) / dt, WriteIOPS: float64(cur[3]-p[3]) / dt}
				prev[name] = cur
			}
			rates := maps.Clone(m.rates)
			m.mu.Unlock()
			m.publish(now, rates)
		}
	}
}

// effectiveThrottle is the policy's throttle, each field overridden by
// the API's when the API set it. m.mu is held.
func (m *Manager) effectiveThrottle(v meta.Volume) meta.Throttle {
	ts := m.throttleSources(v)
	return meta.Throttle{ReadBW: ts[0].Limit, WriteBW: ts[1].Limit, ReadIOPS: ts[2].Limit, WriteIOPS: ts[3].Limit}
}

// StackStep is one filter of a volume's stack and the policy it comes from.
type StackStep struct {
	Filter     string        `json:"filter"`
	Params     filter.Params `json:"params,omitempty"`
	Policy     string        `json:"policy,omitempty"`
	PolicyName string        `json:"policy_name,omitempty"`
	Line       int           `json:"line,omitempty"`
	// Target is the policy's target as written ("VOLUME v1", "ALL VOLUMES").
	Target string `json:"target,omitempty"`
	// Dynamic steps come from a policy with a metric trigger that holds now.
	Dynamic bool `json:"dynamic,omitempty"`
}

// stackSteps resolves a volume's filters from the table. m.mu is held.
func (m *Manager) stackSteps(name string) []StackStep {
	if m.table == nil {
		return nil
	}
	var out []StackStep
	for _, s := range m.table.ResolveVolume(name, filter.MethodPut).Storage {
		cp, _ := m.table.Compiled().Policy(s.PolicyID)
		out = append(out, StackStep{Filter: s.Filter, Params: s.Params, Policy: s.PolicyID, PolicyName: s.PolicyName,
			Line: s.Line, Target: s.Target, Dynamic: cp != nil && cp.Dynamic})
	}
	return out
}

func (m *Manager) buildStack(ctx context.Context, v meta.Volume, steps []StackStep) (*bfilter.Stack, error) {
	st := &bfilter.Stack{Align: 1}
	for _, s := range steps {
		in, ok := m.cfg.Filters.Lookup(s.Filter)
		if !ok {
			return nil, fmt.Errorf("volume %s: unknown block filter %q", v.Name, s.Filter)
		}
		env := bfilter.Env{Logger: m.log, Volume: v.Name}
		if m.cfg.Keys != nil {
			env.Key = func() ([]byte, error) { return m.volumeKey(ctx, v) }
		}
		f, err := in.New(s.Params, env)
		if err != nil {
			return nil, fmt.Errorf("volume %s: %w", v.Name, err)
		}
		st.Add(in.Name, f, in.Align)
	}
	return st, nil
}

// volumeKey is the volume's 64-byte AES-XTS key: two keys derived from the
// master key for the owner and the volume's random id.
func (m *Manager) volumeKey(ctx context.Context, v meta.Volume) ([]byte, error) {
	var key []byte
	for _, part := range []string{"1", "2"} {
		k, err := m.cfg.Keys.Key(ctx, v.Tenant, "vol."+v.ID+"."+part)
		if err != nil {
			return nil, err
		}
		key = append(key, k...)
	}
	return key, nil
}

// allowed reports whether peer may use volume v: its owner over TLS, or a
// peer the NBD server let in without TLS (loopback, with
// --nbd-allow-plain-loopback) when v's tenant allows plain NBD
// (plainOK).
func allowed(v meta.Volume, peer nbd.Peer, plainOK func(tenant string) bool) bool {
	if peer.TLS {
		return peer.Identity == v.Tenant
	}
	return plainOK(v.Tenant)
}

// plainTenants answers whether a tenant allows plain NBD, reading each
// tenant once. It runs outside m.mu: the store may be remote.
func (m *Manager) plainTenants(ctx context.Context) func(tenant string) bool {
	seen := map[string]bool{}
	return func(tenant string) bool {
		ok, done := seen[tenant]
		if !done {
			t, err := m.cfg.Store.GetTenant(ctx, tenant)
			if err != nil && !errors.Is(err, meta.ErrTenantNotFound) {
				m.log.Warn("nbd: cannot read tenant's plain NBD setting; refusing plain access", "tenant", tenant, "err", err)
			}
			ok = err == nil && t.AllowPlainNBD
			seen[tenant] = ok
		}
		return ok
	}
}

// access decides whether peer may use the volume called name: the
// volume, or the error NBD answers (ErrTLSRequired for a plain peer,
// whether or not the name exists; ErrUnknown for a tenant over TLS).
func (m *Manager) access(ctx context.Context, name string, peer nbd.Peer) (meta.Volume, error) {
	m.mu.Lock()
	v, ok := m.vols[name]
	m.mu.Unlock()
	if ok && allowed(v, peer, m.plainTenants(ctx)) {
		return v, nil
	}
	if !peer.TLS {
		return meta.Volume{}, nbd.ErrTLSRequired
	}
	return meta.Volume{}, nbd.ErrUnknown
}

func info(v meta.Volume) nbd.ExportInfo {
	return nbd.ExportInfo{Name: v.Name, Size: v.Size, MultiConn: true,
		Description: fmt.Sprintf("facet volume of tenant %s, %s class", v.Tenant, v.Class)}
}

// List implements nbd.Exports.
func (m *Manager) List(ctx context.Context, peer nbd.Peer) ([]nbd.ExportInfo, error) {
	m.mu.Lock()
	vols := make([]meta.Volume, 0, len(m.vols))
	for _, name := range slices.Sorted(maps.Keys(m.vols)) {
		vols = append(vols, m.vols[name])
	}
	m.mu.Unlock()
	plainOK := m.plainTenants(ctx)
	var out []nbd.ExportInfo
	for _, v := range vols {
		if allowed(v, peer, plainOK) {
			out = append(out, info(v))
		}
	}
	return out, nil
}

// Lookup implements nbd.Exports.
func (m *Manager) Lookup(ctx context.Context, name string, peer nbd.Peer) (nbd.ExportInfo, error) {
	v, err := m.access(ctx, name, peer)
	if err != nil {
		return nbd.ExportInfo{}, err
	}
	return info(v), nil
}

// Open implements nbd.Exports.
func (m *Manager) Open(ctx context.Context, name string, peer nbd.Peer) (nbd.Device, nbd.ExportInfo, error) {
	d, info, err := m.open1(ctx, name, peer)
	if err == nil {
		m.mu.Lock()
		record := m.unrecorded()
		m.mu.Unlock()
		for _, r := range record {
			m.recordApplied(ctx, r.name, r.steps)
		}
	}
	return d, info, err
}

func (m *Manager) open1(ctx context.Context, name string, peer nbd.Peer) (nbd.Device, nbd.ExportInfo, error) {
	checked, err := m.access(ctx, name, peer)
	if err != nil {
		return nil, nbd.ExportInfo{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	rec, ok := m.vols[name]
	// The volume may have been replaced since the check: only the one
	// checked is opened.
	if !ok || rec.ID != checked.ID {
		return nil, nbd.ExportInfo{}, nbd.ErrUnknown
	}
	v := m.open[name]
	if v == nil || v.rec.ID != rec.ID || v.rec.Size != rec.Size {
		nv, err := m.openVolume(ctx, rec)
		if err != nil {
			return nil, nbd.ExportInfo{}, err
		}
		if v != nil && v.rec.ID == rec.ID {
			// Resized under its connections: the old open and the new
			// write the same files, so they take the same lock for
			// partial blocks, draw on the same throttles and go
			// through the same stack (a changed stack waits until no
			// connection uses the volume, as for any open volume).
			nv.rmw = v.rmw
			nv.readBW, nv.writeBW, nv.readOps, nv.writeOps = v.readBW, v.writeBW, v.readOps, v.writeOps
			nv.stack.Store(v.stack.Load())
			nv.steps, nv.warned = v.steps, v.warned
		}
		v = nv
		m.open[name] = v
	}
	v.refs++
	m.conns[name]++
	var once sync.Once
	d := &device{v: v, close: func() { once.Do(func() { m.release(v) }) }}
	return d, info(v.rec), nil
}

// openVolume opens the backing files and builds the stack. m.mu is held.
func (m *Manager) openVolume(ctx context.Context, rec meta.Volume) (*volume, error) {
	steps := m.stackSteps(rec.Name)
	st, err := m.buildStack(ctx, rec, steps)
	if err != nil {
		return nil, err
	}
	st0 := m.stats[rec.Name]
	if st0 == nil {
		st0 = &volumeStats{}
		m.stats[rec.Name] = st0
	}
	v := &volume{rec: rec, flows: map[*gate]*flow{}, stats: st0, rmw: &sync.Mutex{},
		readBW: newBucket(0, 0, m.cfg.ThrottleWindow), writeBW: newBucket(0, 0, m.cfg.ThrottleWindow),
		readOps: newBucket(0, 0, m.cfg.ThrottleWindow), writeOps: newBucket(0, 0, m.cfg.ThrottleWindow)}
	back, err := openBacking(rec, m.pools, func(pool string) flowGate {
		g := m.gates[pool]
		if g == nil {
			g = newGate(m.cfg.Slots)
			m.gates[pool] = g
		}
		f := v.flows[g]
		if f == nil {
			f = &flow{weight: weightOf(rec, m.pools[pool])}
			v.flows[g] = f
		}
		return flowGate{g: g, f: f, cost: costOf(m.pools[pool].Usage)}
	}, true)
	if err != nil {
		return nil, err
	}
	v.back = back
	v.stack.Store(st)
	v.steps = steps
	v.setThrottle(m.effectiveThrottle(rec))
	m.log.Info("volume opened", "volume", rec.Name, "filters", st.Names, "members", len(back.files))
	return v, nil
}

// weightOf is a volume's share in a pool's queue: its reservation on that
// pool in the pool's unit, and 1% of the pool for volumes that reserve
// none (cold, best-effort).
func weightOf(v meta.Volume, p meta.Pool) float64 {
	for _, e := range v.Extents {
		if e.Pool != p.Name {
			continue
		}
		switch {
		case p.Usage == ClassSequential && e.SeqBW > 0:
			return float64(e.SeqBW)
		case e.IOPS > 0:
			return float64(e.IOPS)
		}
	}
	if p.Usage == ClassSequential {
		return max(float64(p.SeqBW)/100, 1)
	}
	return max(float64(p.RandIOPS)/100, 1)
}

func (m *Manager) release(v *volume) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v.refs--
	if m.conns[v.rec.Name]--; m.conns[v.rec.Name] <= 0 {
		delete(m.conns, v.rec.Name)
	}
	if v.refs > 0 {
		return
	}
	if m.open[v.rec.Name] == v {
		delete(m.open, v.rec.Name)
	}
	for g, f := range v.flows {
		g.forget(f)
	}
	if err := v.back.sync(); err != nil {
		m.log.Warn("volume sync at close failed", "volume", v.rec.Name, "err", err)
	}
	if err := v.back.close(); err != nil {
		m.log.Warn("volume close failed", "volume", v.rec.Name, "err", err)
	}
}

// Errors of the management API.
var (
	ErrVolumeBusy = errors.New("volume is in use")
)

// DefaultPoolName names the default pool.
const DefaultPoolName = "default"

// keepDefaultPool creates the default pool (best-effort, in
// Config.DefaultPoolDir, as large as the free space of its file system)
// while no pool exists, and deletes it once an administrator's pool exists
// and it holds no volume: a volume on it keeps it until the volume is
// deleted, and meanwhile it takes no new ones (see usable). It runs on
// every reload, so it converges whichever node or request changed the
// pools; it reports whether it changed them. Failures are logged: volumes
// then need a pool of the administrator's, as without a default.
func (m *Manager) keepDefaultPool(ctx context.Context, pools []meta.Pool, vols []meta.Volume) bool {
	if len(pools) == 0 {
		dir := m.cfg.DefaultPoolDir
		capacity, err := freeSpace(dir)
		if err == nil && capacity <= 0 {
			err = errors.New("the file system is full")
		}
		if err == nil {
			_, err = m.cfg.Store.CreatePool(ctx, meta.Pool{Name: DefaultPoolName, Dir: dir, Capacity: capacity,
				Usage: ClassBestEffort, Default: true})
		}
		if err != nil {
			if !errors.Is(err, meta.ErrPoolExists) { // another node made it first
				m.log.Warn("default pool not created: volumes need a pool (facet ctl pool create)", "dir", dir, "err", err)
			}
			return false
		}
		m.log.Info("default pool created: best-effort volumes go there until pools are configured", "dir", dir, "capacity", capacity)
		return true
	}
	var def *meta.Pool
	configured := false
	for i, p := range pools {
		if p.Default {
			def = &pools[i]
		} else {
			configured = true
		}
	}
	if def == nil || !configured {
		return false
	}
	for _, v := range vols {
		for _, e := range v.Extents {
			if e.Pool == def.Name {
				return false
			}
		}
	}
	if err := m.cfg.Store.DeletePool(ctx, def.Name); err != nil {
		if !errors.Is(err, meta.ErrPoolInUse) && !errors.Is(err, meta.ErrPoolNotFound) {
			m.log.Warn("default pool not removed", "pool", def.Name, "err", err)
		}
		return false
	}
	m.log.Info("default pool removed: pools are configured", "pool", def.Name)
	return true
}

// freeSpace is what an unprivileged writer can use on dir's file system,
// rounded down; dir is created if need be.
func freeSpace(dir string) (int64, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return 0, err
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, fmt.Errorf("statfs %s: %w", dir, err)
	}
	// Whole GiB (MiB on a small file system), so that the pool's
	// capacity reads as a size rather than a byte count.
	n := int64(st.Bavail) * int64(st.Bsize)
	if n >= 1<<30 {
		return n &^ (1<<30 - 1), nil
	}
	return n &^ (1<<20 - 1), nil
}

// CreatePool adds a pool after checking its usage type and directory.
func (m *Manager) CreatePool(ctx context.Context, p meta.Pool) (meta.Pool, error) {
	if err := CheckPoolUsage(p.Usage); err != nil {
		return meta.Pool{}, err
	}
	p.Default = false // only keepDefaultPool makes the default pool
	out, err := m.cfg.Store.CreatePool(ctx, p)
	if err != nil {
		return meta.Pool{}, err
	}
	return out, m.Reload(ctx)
}

// DeletePool removes an empty pool.
func (m *Manager) DeletePool(ctx context.Context, name string) error {
	if err := m.cfg.Store.DeletePool(ctx, name); err != nil {
		return err
	}
	return m.Reload(ctx)
}

// ListPools lists pools with what is reserved on each.
func (m *Manager) ListPools(ctx context.Context) ([]PoolUsage, error) {
	pools, err := m.cfg.Store.ListPools(ctx)
	if err != nil {
		return nil, err
	}
	vols, err := m.cfg.Store.ListVolumes(ctx)
	if err != nil {
		return nil, err
	}
	out := []PoolUsage{}
	for _, f := range freeRoom(pools, vols) {
		u := PoolUsage{Pool: f.pool, ReservedCapacity: f.usedCap, ReservedSeqBW: f.usedBW, ReservedIOPS: f.usedIOPS}
		for _, v := range vols {
			for _, e := range v.Extents {
				if e.Pool == f.pool.Name {
					u.Volumes = append(u.Volumes, v.Name)
				}
			}
		}
		out = append(out, u)
	}
	return out, nil
}

// PoolUsage is a pool and its reservations.
type PoolUsage struct {
	meta.Pool
	ReservedCapacity int64    `json:"reserved_capacity"`
	ReservedSeqBW    int64    `json:"reserved_seq_bw"`
	ReservedIOPS     int64    `json:"reserved_iops"`
	Volumes          []string `json:"volumes"`
}

// CreateVolume places and creates a volume (its files are created sparse
// on first open).
func (m *Manager) CreateVolume(ctx context.Context, v meta.Volume) (meta.Volume, error) {
	if err := CheckReservation(v); err != nil {
		return meta.Volume{}, err
	}
	out, err := m.cfg.Store.CreateVolume(ctx, v, Place)
	if err != nil {
		return meta.Volume{}, err
	}
	return out, m.Reload(ctx)
}

// ResizeVolume changes a volume's size on its pools; connected clients
// see the new size when they reconnect.
func (m *Manager) ResizeVolume(ctx context.Context, name string, size int64) (meta.Volume, error) {
	out, err := m.cfg.Store.UpdateVolume(ctx, name, func(v *meta.Volume, pools []meta.Pool, others []meta.Volume) error {
		v.Size = size
		ext, err := Resize(pools, others, *v)
		if err != nil {
			return err
		}
		v.Extents = ext
		return nil
	})
	if err != nil {
		return meta.Volume{}, err
	}
	return out, m.Reload(ctx)
}

// SetThrottle sets a volume's API throttle (0 fields fall back to the
// policy's); it applies at once to open volumes.
func (m *Manager) SetThrottle(ctx context.Context, name string, t meta.Throttle) (meta.Volume, error) {
	if t.ReadBW < 0 || t.WriteBW < 0 || t.ReadIOPS < 0 || t.WriteIOPS < 0 {
		return meta.Volume{}, fmt.Errorf("%w: throttles cannot be negative", ErrInvalidReservation)
	}
	out, err := m.cfg.Store.UpdateVolume(ctx, name, func(v *meta.Volume, _ []meta.Pool, _ []meta.Volume) error {
		v.Throttle = t
		return nil
	})
	if err != nil {
		return meta.Volume{}, err
	}
	return out, m.Reload(ctx)
}

// DeleteVolume deletes a volume that no connection uses, and its files.
func (m *Manager) DeleteVolume(ctx context.Context, name string) error {
	m.mu.Lock()
	busy := m.conns[name] > 0
	m.mu.Unlock()
	if busy {
		return fmt.Errorf("%w: %q has NBD connections", ErrVolumeBusy, name)
	}
	v, err := m.cfg.Store.DeleteVolume(ctx, name)
	if err != nil {
		return err
	}
	m.mu.Lock()
	pools := maps.Clone(m.pools)
	m.mu.Unlock()
	if err := removeBacking(v, pools); err != nil {
		m.log.Warn("volume files not removed", "volume", name, "err", err)
	}
	return m.Reload(ctx)
}

// Rates are a volume's I/O rates over the last second.
type Rates struct {
	ReadBW    float64 `json:"read_bw"`
	WriteBW   float64 `json:"write_bw"`
	ReadIOPS  float64 `json:"read_iops"`
	WriteIOPS float64 `json:"write_iops"`
}

// VolumeStatus is a volume with what is in force for it.
type VolumeStatus struct {
	meta.Volume
	Filters   []StackStep   `json:"filters"`
	Effective meta.Throttle `json:"effective_throttle"`
	Open      bool          `json:"open"`
	Rates     Rates         `json:"rates"`
	Totals    Totals        `json:"totals"`
}

// Totals are cumulative counters since this process started.
type Totals struct {
	ReadBytes  int64 `json:"read_bytes"`
	WriteBytes int64 `json:"write_bytes"`
	ReadOps    int64 `json:"read_ops"`
	WriteOps   int64 `json:"write_ops"`
}

// Volumes lists volumes with their stacks, throttles and rates; tenant,
// when set, keeps that tenant's only.
func (m *Manager) Volumes(ctx context.Context, tenant string) ([]VolumeStatus, error) {
	vols, err := m.cfg.Store.ListVolumes(ctx)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []VolumeStatus{}
	for _, v := range vols {
		if tenant != "" && v.Tenant != tenant {
			continue
		}
		out = append(out, m.status(v))
	}
	return out, nil
}

// Volume returns one volume's status.
func (m *Manager) Volume(ctx context.Context, name string) (VolumeStatus, error) {
	v, err := m.cfg.Store.GetVolume(ctx, name)
	if err != nil {
		return VolumeStatus{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.status(v), nil
}

func (m *Manager) status(v meta.Volume) VolumeStatus {
	s := VolumeStatus{Volume: v, Filters: m.stackSteps(v.Name), Effective: m.effectiveThrottle(v), Rates: m.rates[v.Name]}
	if s.Filters == nil {
		s.Filters = []StackStep{}
	}
	s.Open = m.conns[v.Name] > 0
	if st, ok := m.stats[v.Name]; ok {
		s.Totals = st.totals()
	}
	return s
}

func (st *volumeStats) totals() Totals {
	return Totals{ReadBytes: st.readBytes.Load(), WriteBytes: st.writeBytes.Load(),
		ReadOps: st.readOps.Load(), WriteOps: st.writeOps.Load()}
}

// ErrNoTLS refuses a client certificate when the NBD server has no TLS.
var ErrNoTLS = errors.New("NBD TLS is not configured on this server")

// ClientCert issues an NBD client certificate for an existing tenant: the
// tenant's volumes are exported over TLS to whoever presents it.
func (m *Manager) ClientCert(ctx context.Context, tenant string) (ClientCert, error) {
	if m.cfg.TLSDir == "" {
		return ClientCert{}, ErrNoTLS
	}
	if _, err := m.cfg.Store.GetTenant(ctx, tenant); err != nil {
		return ClientCert{}, err
	}
	return IssueClientCert(m.cfg.TLSDir, tenant)
}

// VolumeMetrics are the workload metrics the block stage publishes, in
// the order of Rates' fields.
func VolumeMetrics() []string {
	return []string{"volume_read_bw", "volume_write_bw", "volume_read_iops", "volume_write_iops"}
}

// publish sends one node sample per volume metric for the second that
// ended at now; volumes that did nothing are left out, as the gateway's
// collector does, but the samples go out every second even when empty:
// the aggregator merges a period as soon as every live node reported it,
// and this node (the collector's name) is live for the volume metrics
// too.
func (m *Manager) publish(now time.Time, rates map[string]Rates) {
	if m.cfg.Publish == nil {
		return
	}
	end := now.Truncate(time.Second)
	for i, metric := range VolumeMetrics() {
		s := metrics.NodeSample{V: 1, Node: m.cfg.Node, Metric: metric, StartMs: end.Add(-time.Second).UnixMilli(), PeriodMs: 1000,
			Values: map[string]float64{}}
		for name, r := range rates {
			if v := [4]float64{r.ReadBW, r.WriteBW, r.ReadIOPS, r.WriteIOPS}[i]; v != 0 {
				s.Values["volume:"+name] = v
			}
		}
		b, err := json.Marshal(s)
		if err == nil {
			err = m.cfg.Publish(metrics.SubjectNodePrefix+metric, b)
		}
		if err != nil {
			m.log.Debug("volume metrics not published", "metric", metric, "err", err)
		}
	}
}
