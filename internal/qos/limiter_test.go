package qos

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"strings"
	"testing"
	"time"
)

func TestAdmitSlowDownWithRetryAfter(t *testing.T) {
	c := newFakeClock()
	l := NewLimiter(LimiterConfig{Node: "n1", SLOs: SLOMap{"t1": {Ops: 2}}, OpsQueue: 100 * time.Millisecond, Now: c.Now,
		Rand: func() float64 { return 0 }})
	st, err := l.Admit(context.Background(), "t1", ClassPut)
	if err != nil {
		t.Fatal(err)
	}
	st.Done()
	// The bucket (2/s, burst 1) is empty: the next token is 500 ms away,
	// more than the 100 ms queue. The operation is held for the queue
	// (real time), then told to come back when the token is there: 400 ms
	// after the answer (no jitter here).
	start := time.Now()
	_, err = l.Admit(context.Background(), "t1", ClassPut)
	var sd *SlowDownError
	if !errors.As(err, &sd) || sd.RetryAfter() != 400*time.Millisecond || sd.Flow.Tenant != "t1" || sd.Flow.Class != ClassPut {
		t.Fatalf("err = %v, want SlowDown after 400ms", err)
	}
	if el := time.Since(start); el < 100*time.Millisecond {
		t.Fatalf("refused after %v, before the 100ms queue", el)
	}
	// Other tenants and classes have their own buckets.
	if _, err := l.Admit(context.Background(), "t2", ClassPut); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Admit(context.Background(), "t1", ClassGet); err != nil {
		t.Fatal(err)
	}
	c.Advance(400 * time.Millisecond) // 100 ms short: within the queue
	st, err = l.Admit(context.Background(), "t1", ClassPut)
	if err != nil {
		t.Fatalf("queued op refused: %v", err)
	}
	st.Done()
	rep := l.Report()
	for _, f := range rep.Flows {
		if f.Tenant == "t1" && f.Class == ClassPut && (f.Rejected == 0 || f.OpsRate != 2) {
			t.Fatalf("flow report %+v: want a rejection at ops 2/s", f)
		}
	}
}

func TestStreamsShapeBothDirections(t *testing.T) {
	l := NewLimiter(LimiterConfig{Node: "n1", SLOs: SLOMap{"t1": {Limit: 4e6}}, Chunk: 16 << 10})
	st, err := l.Admit(context.Background(), "t1", ClassGet)
	if err != nil {
		t.Fatal(err)
	}
	payload := bytes.Repeat([]byte("x"), 1<<20)
	start := time.Now()
	var out bytes.Buffer
	if _, err := io.Copy(st.Writer(&out), st.Reader(bytes.NewReader(payload))); err != nil {
		t.Fatal(err)
	}
	st.Done()
	if !bytes.Equal(out.Bytes(), payload) {
		t.Fatal("shaping changed the bytes")
	}
	// 2 MiB paid (read, then written) at 4 MB/s, less one burst: a lower
	// bound, which a slow machine only makes longer.
	if el, min := time.Since(start), time.Duration((float64(2<<20)-Burst(4e6, 16<<10))/4e6*float64(time.Second)); el < min {
		t.Fatalf("2 MiB through a 4 MB/s flow in %v, under %v", el, min)
	}
	rep := l.Report()
	if len(rep.Flows) != 1 || rep.Flows[0].Rate != 4e6 || rep.Flows[0].Source != SourceStatic || rep.Flows[0].Waited <= 0 {
		t.Fatalf("report %+v", rep.Flows)
	}
	// An idle period drops the flow.
	if rep := l.Report(); len(rep.Flows) != 0 {
		t.Fatalf("idle flow still reported: %+v", rep.Flows)
	}
}

func TestAssignmentsThenStaleThenStatic(t *testing.T) {
	c := newFakeClock()
	var throttled time.Duration
	l := NewLimiter(LimiterConfig{Node: "n1", SLOs: SLOMap{"t1": {Limit: 50e6}}, Stale: 5 * time.Second, Now: c.Now,
		Throttled: func(string, time.Duration) { throttled++ }})
	st, _ := l.Admit(context.Background(), "t1", ClassGet)
	defer st.Done()
	rate := func() (float64, string) {
		for _, f := range l.Report().Flows {
			if f.Tenant == "t1" && f.Class == ClassGet {
				return f.Rate, f.Source
			}
		}
		return -1, ""
	}
	if r, s := rate(); r != 50e6 || s != SourceStatic {
		t.Fatalf("before any assignment: %v %s, want the SLO limit", r, s)
	}
	l.Apply("c1", 1, Rates{"t1": {ClassGet: 10e6}})
	if r, s := rate(); r != 10e6 || s != SourceAssigned {
		t.Fatalf("assigned: %v %s", r, s)
	}
	l.Apply("c1", 0, Rates{"t1": {ClassGet: 1}}) // late message of the same run
	c.Advance(4 * time.Second)
	if r, _ := rate(); r != 10e6 {
		t.Fatalf("kept assignment: %v", r)
	}
	c.Advance(2 * time.Second)
	if r, s := rate(); r != 50e6 || s != SourceStatic {
		t.Fatalf("stale assignment: %v %s, want static", r, s)
	}
	l.Apply("c1", 2, Rates{"t1": {ClassGet: 0}})
	if r, s := rate(); r != MinRate || s != SourceAssigned {
		t.Fatalf("assigned 0: %v %s, want the trickle MinRate (0 would be unlimited)", r, s)
	}
	l.Apply("c2", 1, Rates{}) // a new controller instance, nothing for t1
	if r, s := rate(); r != 50e6 || s != SourceStatic {
		t.Fatalf("unassigned flow: %v %s", r, s)
	}
}

func TestDisabledPassesThrough(t *testing.T) {
	l := NewLimiter(LimiterConfig{Disabled: true, SLOs: SLOMap{"t1": {Ops: 1, Limit: 1}}})
	for range 10 {
		st, err := l.Admit(context.Background(), "t1", ClassPut)
		if err != nil {
			t.Fatal(err)
		}
		r := strings.NewReader("abc")
		if st.Reader(r) != io.Reader(r) {
			t.Fatal("disabled limiter wrapped the reader")
		}
		st.Done()
	}
	if rep := l.Report(); len(rep.Flows) != 0 {
		t.Fatal("disabled limiter reported flows")
	}
}

func TestSLOClasses(t *testing.T) {
	s := SLO{Get: 30, Reservation: 10, Limit: 20, Background: 5}
	if s.ReservationOf(ClassGet) != 20 || s.ReservationOf(ClassPut) != 10 || s.ReservationOf(ClassBackground) != 0 {
		t.Fatalf("reservations: %v %v %v", s.ReservationOf(ClassGet), s.ReservationOf(ClassPut), s.ReservationOf(ClassBackground))
	}
	if s.LimitOf(ClassBackground) != 5 || s.LimitOf(ClassPut) != 20 || !math.IsInf(SLO{}.LimitOf(ClassGet), 1) || (SLO{}).WeightOf() != 1 {
		t.Fatal("limits or weight")
	}
	if _, err := SLOFromParams(map[string]string{"get": "x"}); err == nil {
		t.Fatal("bad parameter accepted")
	}
	if _, err := DecodeSLO([]byte(`{"get":1,"bogus":2}`)); err == nil {
		t.Fatal("unknown field accepted")
	}
	if _, err := DecodeSLO([]byte(`{"get":-1}`)); err == nil {
		t.Fatal("negative accepted")
	}
	for _, m := range []string{"GET", "HEAD", "PUT", "POST", "DELETE"} {
		if c := ClassOf(m); c == "" {
			t.Fatal(m)
		}
	}
	if ClassOf("PUT") != ClassPut || ClassOf("DELETE") != ClassDelete || ClassOf("HEAD") != ClassGet {
		t.Fatal("ClassOf")
	}
}

func FuzzDecodeSLO(f *testing.F) {
	f.Add([]byte(`{"get":30000000,"weight":2}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := DecodeSLO(data)
		if err != nil {
			return
		}
		for _, c := range Classes {
			if r := s.ReservationOf(c); r < 0 || math.IsNaN(r) || r > s.LimitOf(c) {
				t.Fatalf("%+v: class %s reservation %v over limit %v", s, c, r, s.LimitOf(c))
			}
		}
	})
}

type readFromRecorder struct {
	bytes.Buffer
	calls int
}

func (r *readFromRecorder) ReadFrom(src io.Reader) (int64, error) {
	r.calls++
	return r.Buffer.ReadFrom(src)
}

// An unlimited flow keeps the destination's ReadFrom (sendfile), a piece
// at a time; a limited one is paced chunk by chunk.
func TestWriterReadFrom(t *testing.T) {
	l := NewLimiter(LimiterConfig{Node: "n1", SLOs: SLOMap{"lim": {Limit: 1e9}}})
	payload := bytes.Repeat([]byte("z"), 9<<20)
	for _, tenant := range []string{"free", "lim"} {
		st, _ := l.Admit(context.Background(), tenant, ClassGet)
		var dst readFromRecorder
		n, err := st.Writer(&dst).(io.ReaderFrom).ReadFrom(bytes.NewReader(payload))
		st.Done()
		if err != nil || n != int64(len(payload)) || !bytes.Equal(dst.Bytes(), payload) {
			t.Fatalf("%s: %d %v", tenant, n, err)
		}
		if want := map[string]int{"free": 3, "lim": 0}[tenant]; dst.calls != want {
			t.Fatalf("%s: destination ReadFrom called %d times, want %d", tenant, dst.calls, want)
		}
	}
	rep := l.Report()
	for _, f := range rep.Flows {
		if f.Served == 0 {
			t.Fatalf("flow %s served nothing", f.Tenant)
		}
	}
}

// The cost of shaping an unlimited flow: one admission and a 1 MiB
// response written through the shaped writer, vs the bare writer.
func BenchmarkStream(b *testing.B) {
	payload := bytes.Repeat([]byte("x"), 1<<20)
	for _, mode := range []string{"bare", "unlimited", "limited-high"} {
		b.Run(mode, func(b *testing.B) {
			l := NewLimiter(LimiterConfig{Node: "n1", SLOs: SLOMap{"hi": {Limit: 1e15}}})
			tenant := map[string]string{"unlimited": "free", "limited-high": "hi"}[mode]
			b.SetBytes(int64(len(payload)))
			for b.Loop() {
				if mode == "bare" {
					_, _ = io.Discard.Write(payload)
					continue
				}
				st, err := l.Admit(context.Background(), tenant, ClassGet)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = st.Writer(io.Discard).Write(payload)
				st.Done()
			}
		})
	}
}

// A large WaitBytes (background work paying for what it frees) shows in
// the flow's reports as it goes, bytes served and time waited, while it is
// still waiting: the controller sees its demand.
func TestWaitBytesReportsAsItGoes(t *testing.T) {
	l := NewLimiter(LimiterConfig{Node: "n1", SLOs: SLOMap{"t1": {Background: 1e6}}})
	st, err := l.Admit(context.Background(), "t1", ClassBackground)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Done()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- st.WaitBytes(ctx, 1<<30) }() // ~18 minutes at 1 MB/s
	var served, waited float64
	for served == 0 || waited == 0 {
		select {
		case err := <-done:
			t.Fatalf("1 GiB paid at 1 MB/s returned early: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
		for _, f := range l.Report().Flows {
			if f.Tenant == "t1" && f.Class == ClassBackground {
				served += f.Served
				waited += f.Waited
			}
		}
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled WaitBytes: %v", err)
	}
}

// A new flow on a node with a configured capacity starts at a provisional
// share, never unshaped (issue 25: the first second of a run moved up to
// 24× the capacity): reservations first, equal shares of the rest of what
// the assignment leaves unassigned, until the controller names it. The
// flows' rates never add up past the capacity, so the first second of a
// run stays within it.
func TestNewFlowsStartAtAProvisionalShare(t *testing.T) {
	c := newFakeClock()
	l := NewLimiter(LimiterConfig{Node: "n1", Capacity: 50e6, Now: c.Now,
		SLOs: SLOMap{"t3": {Get: 20e6}, "t4": {Limit: 5e6}}})
	rates := func() map[string]float64 {
		out := map[string]float64{}
		l.mu.RLock()
		defer l.mu.RUnlock()
		for k, f := range l.flows {
			out[k.tenant] = f.rate
			if f.source != SourceProvisional {
				t.Fatalf("%s: source %s, want provisional", k.tenant, f.source)
			}
		}
		return out
	}
	admit := func(tenant string) *Stream {
		st, err := l.Admit(context.Background(), tenant, ClassGet)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(st.Done)
		return st
	}
	st1 := admit("t1")
	if r := rates(); r["t1"] != 50e6 {
		t.Fatalf("alone: %v, want the whole capacity", r)
	}
	admit("t2")
	if r := rates(); r["t1"] != 25e6 || r["t2"] != 25e6 {
		t.Fatalf("two: %v, want 25/25", r)
	}
	admit("t3") // reserves 20: 20 + 10, the others 10 each
	if r := rates(); r["t1"] != 10e6 || r["t2"] != 10e6 || r["t3"] != 30e6 {
		t.Fatalf("with a reservation: %v, want 10/10/30", r)
	}
	admit("t4") // limited at 5
	r := rates()
	if r["t4"] != 5e6 || r["t3"] != 27.5e6 || r["t1"]+r["t2"]+r["t3"]+r["t4"] > 50e6 {
		t.Fatalf("limited: %v, want t4 at 5 and 27.5/7.5/7.5 for the others", r)
	}
	// An assignment names t1 and t2 (30 MB/s): the 20 left go to the
	// flows it does not name.
	l.Apply("c", 1, Rates{"t1": {ClassGet: 20e6}, "t2": {ClassGet: 10e6}})
	l.mu.RLock()
	var sum float64
	for k, f := range l.flows {
		sum += f.rate
		if (k.tenant == "t1" || k.tenant == "t2") != (f.source == SourceAssigned) {
			t.Errorf("%s: source %s", k.tenant, f.source)
		}
	}
	l.mu.RUnlock()
	if sum > 50e6*1.001 {
		t.Fatalf("rates add up to %v, past the capacity 50e6", sum)
	}
	// The bucket holds a new flow from its first byte.
	st5 := admit("t5")
	rate := st5.f.bytes.Bucket.Rate()
	if math.IsInf(rate, 1) || rate <= 0 || rate > 50e6 {
		t.Fatalf("new flow's rate %v", rate)
	}
	_ = st1
}

// A gateway that has heard from no controller for as long as it would keep
// an assignment (Stale) runs its flows at their static rates, as one whose
// controller went silent does.
func TestNoProvisionalShareWithoutAController(t *testing.T) {
	c := newFakeClock()
	l := NewLimiter(LimiterConfig{Node: "n1", Capacity: 50e6, Stale: 5 * time.Second, Now: c.Now})
	st, err := l.Admit(context.Background(), "t1", ClassGet)
	if err != nil {
		t.Fatal(err)
	}
	if st.f.source != SourceProvisional || st.f.rate != 50e6 {
		t.Fatalf("at start: %v %s, want provisional", st.f.rate, st.f.source)
	}
	st.Done()
	c.Advance(6 * time.Second)
	l.Refresh()
	if st.f.source != SourceNone || !math.IsInf(st.f.rate, 1) {
		t.Fatalf("no controller for 6 s: %v %s, want static (unlimited)", st.f.rate, st.f.source)
	}
}

// Without a configured capacity there is nothing to share: a new flow runs
// at its static rate (its limit, or unlimited), as a reservation must not
// slow a tenant alone on its node.
func TestNoProvisionalShareWithoutCapacity(t *testing.T) {
	l := NewLimiter(LimiterConfig{Node: "n1", SLOs: SLOMap{"t1": {Get: 20e6}}})
	st, err := l.Admit(context.Background(), "t1", ClassGet)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Done()
	if r := st.f.bytes.Bucket.Rate(); !math.IsInf(r, 1) && r != 0 {
		t.Fatalf("rate %v, want unlimited", r)
	}
}

// When the assignment already hands out the whole capacity, a new flow
// starts at the trickle, and takes its assigned rate once named (a 0/0
// share once left a flow unlimited for good: a NaN rate never changed).
func TestProvisionalShareOfAFullNode(t *testing.T) {
	c := newFakeClock()
	l := NewLimiter(LimiterConfig{Node: "n1", Capacity: 50e6, Now: c.Now})
	l.Apply("c", 1, Rates{"t1": {ClassGet: 50e6}})
	st, err := l.Admit(context.Background(), "t2", ClassGet)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Done()
	if r := st.f.bytes.Bucket.Rate(); r != MinRate || st.f.source != SourceProvisional {
		t.Fatalf("new flow on a full node: %v %s, want the trickle", r, st.f.source)
	}
	l.Apply("c", 2, Rates{"t1": {ClassGet: 45e6}, "t2": {ClassGet: 5e6}})
	if r := st.f.bytes.Bucket.Rate(); r != 5e6 {
		t.Fatalf("named: %v, want 5e6", r)
	}
}
