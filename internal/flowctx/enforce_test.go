package flowctx

import (
	"context"
	"io"
	"math"
	"sync"
	"testing"
	"time"
)

func flowOf(e *Enforcer, tenant, class string) *Flow {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.fl[flowKey{tenant, class}]
}

// admitAs admits a request of tenant with the given header class.
func admitAs(t *testing.T, e *Enforcer, tenant, class string) *shaper {
	t.Helper()
	r := &Request{}
	if class != "" {
		r.Present, r.Context.Class = true, class
	}
	sh, err := e.Admit(With(context.Background(), r), tenant, "GET")
	if err != nil {
		t.Fatal(err)
	}
	return sh.(*shaper)
}

// Two classes of one tenant are two flows, each paced at its own limit;
// a request without context falls into the tenant's default class.
func TestClassesAreSeparateFlows(t *testing.T) {
	limits := map[string]float64{"compaction": 2 << 20, "flush": 8 << 20}
	e := NewEnforcer(EnforcerConfig{
		Limits: func(_, class string) (float64, float64, bool) { l, ok := limits[class]; return l, 0, ok },
		Rules:  func(string) *Classifier { return Compile(Rules{Default: "fg"}) },
	})
	const n = 2 << 20
	var wg sync.WaitGroup
	elapsed := map[string]time.Duration{}
	var mu sync.Mutex
	for _, class := range []string{"compaction", "flush", ""} {
		wg.Go(func() {
			sh := admitAs(t, e, "t1", class)
			defer sh.Done()
			start := time.Now()
			if _, err := sh.Writer(io.Discard).Write(make([]byte, n)); err != nil {
				t.Error(err)
			}
			mu.Lock()
			elapsed[class] = time.Since(start)
			mu.Unlock()
		})
	}
	wg.Wait()
	for class, want := range map[string]string{"compaction": "compaction", "flush": "flush", "": "fg"} {
		f := flowOf(e, "t1", want)
		if f == nil || f.meter.Served() != n || f.admitted.Load() != 1 {
			t.Fatalf("class %q: flow %s missing or miscounted", class, want)
		}
		// A bucket never lets more through than rate × time + burst:
		// the bound holds however slow the machine is.
		if l, ok := limits[want]; ok {
			burst := math.Max(l*0.01, chunk)
			if got := float64(n) / elapsed[class].Seconds(); float64(n) > l*elapsed[class].Seconds()+burst+l*0.05 {
				t.Errorf("%s moved %.1f MB/s over its %.1f MB/s limit", want, got/1e6, l/1e6)
			}
		}
	}
	if len(e.Flows()) != 3 {
		t.Fatalf("flows %+v", e.Flows())
	}
}

// Priority mode: a background class takes the spare while the foreground
// is quiet, yields it at the first step after the foreground ramps up, and
// takes it again once the foreground is quiet; a preferred background
// class (flush) is served before a less preferred one (compaction).
func TestPriorityModeYieldsWithinOnePeriod(t *testing.T) {
	const capacity, floor = 400 << 20, 1 << 20
	e := NewEnforcer(EnforcerConfig{Controller: ControllerPriority, Priority: PriorityConfig{
		Background: []string{"flush", "compaction"}, Threshold: 10 << 20, Capacity: capacity, Floor: floor,
	}})
	bg := admitAs(t, e, "t1", "compaction")
	defer bg.Done()
	f := flowOf(e, "t1", "compaction")
	if f.Rate() != floor {
		t.Fatalf("background starts at %v, want the floor", f.Rate())
	}
	e.Step()
	if f.Rate() != capacity {
		t.Fatalf("quiet foreground: background rate %v, want all the spare %v", f.Rate(), float64(capacity))
	}

	// The background streams continuously from now on.
	ctx, stop := context.WithCancel(context.Background())
	bg.ctx = ctx
	done := make(chan struct{})
	go func() {
		defer close(done)
		w := bg.Writer(io.Discard)
		buf := make([]byte, chunk)
		for ctx.Err() == nil {
			_, _ = w.Write(buf)
		}
	}()
	// The foreground ramps up: it moves far more than the threshold in
	// this period.
	fg := admitAs(t, e, "t1", "")
	if _, err := fg.Writer(io.Discard).Write(make([]byte, 64<<20)); err != nil {
		t.Fatal(err)
	}
	e.Step()
	if f.Rate() != floor {
		t.Fatalf("foreground over the threshold: background rate %v, want the floor at once", f.Rate())
	}
	// During the next period the background moves at most the floor's
	// worth (plus one burst), whatever the machine's speed.
	before, start := f.meter.Served(), time.Now()
	time.Sleep(200 * time.Millisecond)
	moved, secs := f.meter.Served()-before, time.Since(start).Seconds()
	if float64(moved) > floor*secs+2*chunk+floor*0.05 {
		t.Fatalf("background moved %d bytes in %.2fs after yielding (floor %d B/s)", moved, secs, floor)
	}
	fg.Done()
	e.Step() // the foreground moved nothing this period
	if f.Rate() != capacity {
		t.Fatalf("foreground quiet again: background rate %v", f.Rate())
	}
	stop()
	<-done

	// Flush is preferred: with both active it may take all the spare;
	// compaction gets what flush did not use.
	fl := admitAs(t, e, "t1", "flush")
	defer fl.Done()
	e.Step()
	if got := flowOf(e, "t1", "flush").Rate(); got != capacity {
		t.Fatalf("flush rate %v, want the spare", got)
	}
}

func TestNeeded(t *testing.T) {
	e := NewEnforcer(EnforcerConfig{Limits: func(_, class string) (float64, float64, bool) {
		return 0, 5 << 20, class == "etl"
	}})
	r := &Request{Present: true, Context: Context{Class: "etl"}}
	ctx := With(context.Background(), r)
	if _, err := e.Admit(ctx, "t1", "GET"); err != nil {
		t.Fatal(err)
	}
	if flow, need, ok := e.Needed(ctx); !ok || flow != "t1/etl" || need != 5<<20 {
		t.Fatalf("%s %v %v", flow, need, ok)
	}
	if _, _, ok := e.Needed(context.Background()); ok {
		t.Fatal("a request without context has no need")
	}
}

// Classes are named by clients: a tenant has at most MaxClasses flows, a
// request naming one more joins the tenant's default class, and idle flows
// are forgotten.
func TestFlowsAreBounded(t *testing.T) {
	e := NewEnforcer(EnforcerConfig{})
	for i := range MaxClasses + 10 {
		sh := admitAs(t, e, "t1", "c"+string(rune('a'+i/26))+string(rune('a'+i%26)))
		if want := i < MaxClasses-1; (sh.f.Class != DefaultClass) != want {
			t.Fatalf("request %d: flow %s", i, sh.f.Class)
		}
		sh.Done()
	}
	if n := len(e.Flows()); n != MaxClasses {
		t.Fatalf("%d flows, want at most %d", n, MaxClasses)
	}
	if f := flowOf(e, "t1", DefaultClass); f == nil || f.admitted.Load() != 11 {
		t.Fatalf("the overflow did not go to the default class: %+v", f)
	}
	// Another tenant has its own allowance.
	admitAs(t, e, "t2", "x").Done()
	if flowOf(e, "t2", "x") == nil {
		t.Fatal("t2's class was folded by t1's cap")
	}
	for range idlePeriods {
		e.Step()
	}
	if n := len(e.Flows()); n != 0 {
		t.Fatalf("%d idle flows kept", n)
	}
	if sh := admitAs(t, e, "t1", "fresh"); sh.f.Class != "fresh" {
		t.Fatalf("after pruning a new class gets %s", sh.f.Class)
	}
}

// Low-level work is preferred: with both background classes busy, the
// first (flush) may take all the spare, and the next (compaction) gets what
// flush did not use over the last period, exactly.
func TestPriorityPrefersLowLevelWork(t *testing.T) {
	const capacity, floor = 400 << 20, 1 << 20
	e := NewEnforcer(EnforcerConfig{Controller: ControllerPriority, Priority: PriorityConfig{
		Background: []string{"flush", "compaction"}, Threshold: 10 << 20, Capacity: capacity, Floor: floor,
	}})
	fl, cp := admitAs(t, e, "t1", "flush"), admitAs(t, e, "t1", "compaction")
	defer fl.Done()
	defer cp.Done()
	e.Step()
	flush, compaction := flowOf(e, "t1", "flush"), flowOf(e, "t1", "compaction")
	if flush.Rate() != capacity || compaction.Rate() != capacity {
		t.Fatalf("neither moved anything: flush %v, compaction %v, want the spare for both", flush.Rate(), compaction.Rate())
	}
	for _, s := range []*shaper{fl, cp} {
		if _, err := s.Writer(io.Discard).Write(make([]byte, 1<<20)); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(100 * time.Millisecond) // a period long enough that 1 MiB is a small part of the spare
	e.Step()
	used := flush.Measured()
	if used <= 0 || compaction.Measured() <= 0 {
		t.Fatalf("measured flush %v, compaction %v", used, compaction.Measured())
	}
	want := math.Max(capacity-used, 0)
	if want <= floor {
		want = floor
	}
	if flush.Rate() != capacity || math.Abs(compaction.Rate()-want) > 1e-6 {
		t.Fatalf("flush %v (want all the spare %v), compaction %v (want what flush left, %v)", flush.Rate(), float64(capacity), compaction.Rate(), want)
	}
}
