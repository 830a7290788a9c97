package fs

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/facet-sds/facet/internal/storage"
	"github.com/facet-sds/facet/internal/sysdev"
)

// I/O priorities as seeds/003 §V uses them: a flow served below the
// bandwidth it needs has its streams' threads raised to best-effort 0; a
// flow above it is lowered to idle, so that its spare bandwidth goes to the
// others. Measured per flow (all its streams) over a window. Only per-stream
// threads carry priorities: a pool thread serves every stream in turn.

// Priorities configure ioprio_set on per-stream threads.
type Priorities struct {
	// Needed names the flow of a request (tenant × class) and the
	// bandwidth it needs in bytes/s; ok false leaves the request at the
	// default priority. Nil: no flow has a target.
	Needed func(ctx context.Context) (flow string, bytesPerSec float64, ok bool)
	// Supported reports whether priorities can work, and why in words.
	// Nil: the data directory's device must schedule with BFQ (or CFQ).
	Supported func() (bool, string)
	// Set applies a priority to thread tid. Nil: ioprio_set(2).
	Set func(tid int, class, level int) error
	// Window is the measurement window (default 1 s; the paper's 15 s
	// reacts too slowly for short GETs).
	Window time.Duration
}

// ioprio is an I/O priority class and level; the zero value means "not
// set": the thread keeps the kernel's default.
type ioprio struct{ class, level int }

// I/O priority classes of ioprio_set(2).
const (
	IOPrioClassRT   = 1
	IOPrioClassBE   = 2
	IOPrioClassIdle = 3

	ioprioWhoProcess = 1 // IOPRIO_WHO_PROCESS: a thread id
	ioprioClassShift = 13
)

var (
	prioRaised  = ioprio{IOPrioClassBE, 0}
	prioLowered = ioprio{IOPrioClassIdle, 0}
)

// SetIOPrio calls ioprio_set(IOPRIO_WHO_PROCESS, tid, class<<13|level).
func SetIOPrio(tid, class, level int) error {
	v := class<<ioprioClassShift | level
	if _, _, e := syscall.Syscall(syscall.SYS_IOPRIO_SET, ioprioWhoProcess, uintptr(tid), uintptr(v)); e != 0 {
		return fmt.Errorf("ioprio_set(%d, class %d, level %d): %w", tid, class, level, e)
	}
	return nil
}

type prioritizer struct {
	opts   Priorities
	ok     bool
	note   string
	log    *slog.Logger
	failed atomic.Bool
	warned atomic.Bool

	mu    sync.Mutex
	flows map[string]*flowMeter
}

func newPrioritizer(o Priorities, dev sysdev.Reader, dataDir string, log *slog.Logger) *prioritizer {
	if o.Window <= 0 {
		o.Window = time.Second
	}
	if o.Set == nil {
		o.Set = SetIOPrio
	}
	p := &prioritizer{opts: o, log: log, flows: map[string]*flowMeter{}}
	if o.Supported != nil {
		p.ok, p.note = o.Supported()
	} else {
		pl, err := dev.ForPath(dataDir)
		switch {
		case err != nil:
			p.note = fmt.Sprintf("the data directory's device is unknown (%v): I/O priorities are not set", err)
		case pl.Device == nil:
			p.note = pl.Note
		default:
			p.ok, p.note = pl.Device.Priorities, pl.Device.PrioritiesNote
		}
	}
	return p
}

// flowOf returns the meter of the request's flow, or nil when priorities
// do not apply to it.
func (p *prioritizer) flowOf(ctx context.Context) *flowMeter {
	if p.opts.Needed == nil {
		return nil
	}
	name, need, ok := p.opts.Needed(ctx)
	if !ok {
		return nil
	}
	if !p.ok && !p.warned.Swap(true) {
		// Said when a flow with a target first reads, not at start:
		// Needed is wired whether or not any tenant has a target.
		p.log.Warn("fs: bandwidth targets are set but I/O priorities cannot work on this device", "flow", name, "why", p.note)
	}
	p.mu.Lock()
	m := p.flows[name]
	if m == nil {
		m = &flowMeter{window: p.opts.Window, name: name}
		m.start.Store(time.Now().UnixNano())
		p.flows[name] = m
	}
	p.mu.Unlock()
	m.need.Store(math.Float64bits(need))
	return m
}

// want is the priority a stream of flow m should run at now.
func (p *prioritizer) want(m *flowMeter) ioprio {
	if !p.ok || m == nil {
		return ioprio{}
	}
	switch m.level.Load() {
	case 1:
		return prioRaised
	case -1:
		return prioLowered
	}
	return ioprio{}
}

// apply sets thread tid's priority; a failure is logged once and leaves
// the thread as it was.
func (p *prioritizer) apply(tid int, want ioprio) bool {
	if want == (ioprio{}) {
		return false
	}
	if err := p.opts.Set(tid, want.class, want.level); err != nil {
		if !p.failed.Swap(true) {
			p.log.Warn("fs: could not set an I/O priority", "err", err)
		}
		return false
	}
	return true
}

// flowMeter measures a flow's bandwidth over windows and decides its
// priority level: 1 raised, -1 lowered, 0 not decided yet.
type flowMeter struct {
	name   string // tenant/class, as Needed names it
	window time.Duration
	need   atomic.Uint64 // float64 bits, bytes/s
	bytes  atomic.Int64
	start  atomic.Int64 // window start, unix ns
	level  atomic.Int32
	roll   sync.Mutex
}

func (m *flowMeter) add(n int64) {
	if m == nil {
		return
	}
	m.bytes.Add(n)
	now := time.Now().UnixNano()
	start := m.start.Load()
	if time.Duration(now-start) < m.window || !m.roll.TryLock() {
		return
	}
	defer m.roll.Unlock()
	if m.start.Load() != start {
		return // another stream rolled the window meanwhile
	}
	rate := float64(m.bytes.Swap(0)) / time.Duration(now-start).Seconds()
	m.start.Store(now)
	if rate < math.Float64frombits(m.need.Load()) {
		m.level.Store(1)
	} else {
		m.level.Store(-1)
	}
}

// IOStatus reports the I/O model and whether priorities can work.
func (s *Store) IOStatus() storage.IOStatus {
	o := s.io.opts
	return storage.IOStatus{Model: string(o.Model), ChunkSize: o.ChunkSize, ReadAhead: o.ReadAhead, PoolThreads: o.PoolThreads,
		LargeFrom: s.io.large, Priorities: s.io.prio.ok, PrioritiesNote: s.io.prio.note}
}

// Streams lists the streams read now by threads of their own (none in the
// pool model, nor for small objects), oldest first.
func (s *Store) Streams() []storage.ThreadStream { return s.io.streams() }
