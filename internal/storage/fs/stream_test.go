package fs

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/facet-sds/facet/internal/storage"
	"github.com/facet-sds/facet/internal/sysdev"
)

const testChunk = 4 << 10

// openStreams opens a store with small chunks (so that "large" is 40 KiB)
// and one bucket "b".
func openStreams(t *testing.T, o StreamOptions) *Store {
	t.Helper()
	if o.ChunkSize == 0 {
		o.ChunkSize = testChunk
	}
	o.ReadAhead = 2
	o.SmallChunk = testChunk / 4
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "store"), Options{Streams: o, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if err := s.CreateBucket(context.Background(), "b"); err != nil {
		t.Fatal(err)
	}
	return s
}

func randomBytes(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, seed))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// Each large stream is read by one OS thread of this process from its
// first chunk to its last, and concurrent streams by different threads.
func TestLargeStreamStaysOnOneThread(t *testing.T) {
	s := openStreams(t, StreamOptions{Model: IOPerStream})
	const streams, size = 4, 64 * testChunk
	var mu sync.Mutex
	tids := map[string]map[int]bool{} // data file -> threads that read it
	var missing []int
	s.io.onChunk = func(f *os.File, tid int, _ int64) {
		// The thread must be one of ours, alive while it reads.
		if _, err := os.Stat(fmt.Sprintf("/proc/self/task/%d", tid)); err != nil {
			mu.Lock()
			missing = append(missing, tid)
			mu.Unlock()
		}
		mu.Lock()
		if tids[f.Name()] == nil {
			tids[f.Name()] = map[int]bool{}
		}
		tids[f.Name()][tid] = true
		mu.Unlock()
	}
	want := make([][]byte, streams)
	readers := make([]io.ReadCloser, streams)
	for i := range streams {
		want[i] = randomBytes(size, uint64(i))
		putBytes(t, s, "b", fmt.Sprint("k", i), want[i])
	}
	// Open every stream and read a byte of each before draining any, so
	// that all are alive at once.
	for i := range streams {
		rc, _, err := s.GetObject(context.Background(), "b", fmt.Sprint("k", i), nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := rc.(*streamReader).src.(*threadStream); !ok {
			t.Fatalf("a %d-byte GET is not a per-stream thread", size)
		}
		readers[i] = rc
		var one [1]byte
		if _, err := io.ReadFull(rc, one[:]); err != nil || one[0] != want[i][0] {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for i, rc := range readers {
		wg.Go(func() {
			defer rc.Close()
			got, err := io.ReadAll(rc)
			if err != nil || !bytes.Equal(got, want[i][1:]) {
				t.Errorf("stream %d: %v, %d bytes", i, err, len(got))
			}
		})
	}
	wg.Wait()
	if len(missing) > 0 {
		t.Fatalf("threads not under /proc/self/task: %v", missing)
	}
	seen := map[int]string{}
	for file, set := range tids {
		if len(set) != 1 {
			t.Errorf("%s was read by %d threads: %v", filepath.Base(file), len(set), set)
		}
		for tid := range set {
			if other, ok := seen[tid]; ok {
				t.Errorf("thread %d read both %s and %s", tid, filepath.Base(other), filepath.Base(file))
			}
			seen[tid] = file
		}
	}
	if len(tids) != streams {
		t.Fatalf("%d streams seen, want %d", len(tids), streams)
	}
}

// Small objects are served directly (the bare file, for sendfile) in the
// per-stream model, and by the round-robin pool in the pool model.
func TestSmallObjects(t *testing.T) {
	for model, check := range map[IOModel]func(io.ReadCloser) bool{
		IOPerStream: func(rc io.ReadCloser) bool { _, ok := rc.(*os.File); return ok },
		IOPool:      func(rc io.ReadCloser) bool { r, ok := rc.(*streamReader); return ok && isPool(r) },
	} {
		s := openStreams(t, StreamOptions{Model: model})
		putBytes(t, s, "b", "small", randomBytes(9*testChunk, 1))
		rc, _, err := s.GetObject(context.Background(), "b", "small", nil)
		if err != nil {
			t.Fatal(err)
		}
		if !check(rc) {
			t.Errorf("%s: a 9-chunk GET is served by %T", model, rc)
		}
		_ = rc.Close()
	}
}

func isPool(r *streamReader) bool { _, ok := r.src.(*poolStream); return ok }

// Both models return the same bytes as the file holds, for whole objects
// and ranges, chunk-aligned or not, read with Read or WriteTo.
func TestPoolAndPerStreamReturnIdenticalBytes(t *testing.T) {
	stores := map[IOModel]*Store{
		IOPerStream: openStreams(t, StreamOptions{Model: IOPerStream}),
		IOPool:      openStreams(t, StreamOptions{Model: IOPool, PoolThreads: 3}),
	}
	sizes := []int{0, 1, testChunk - 1, testChunk, testChunk + 1, 10 * testChunk, 37*testChunk + 123}
	ranges := []storage.Range{{Start: 0, Length: 1}, {Start: 5, Length: 3 * testChunk}, {Start: testChunk, Length: 11 * testChunk}, {Start: 7, Length: 1 << 30}}
	for i, n := range sizes {
		body := randomBytes(n, uint64(100+i))
		key := fmt.Sprint("k", n)
		for _, s := range stores {
			putBytes(t, s, "b", key, body)
		}
		for model, s := range stores {
			got, _ := getBytes(t, s, "b", key, nil)
			if !bytes.Equal(got, body) {
				t.Fatalf("%s: %d-byte object differs (%d bytes back)", model, n, len(got))
			}
			// WriteTo (what io.Copy and net/http use).
			rc, _, err := s.GetObject(context.Background(), "b", key, nil)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if _, err := io.Copy(&buf, rc); err != nil || !bytes.Equal(buf.Bytes(), body) {
				t.Fatalf("%s: WriteTo of %d bytes: %v", model, n, err)
			}
			_ = rc.Close()
			for _, r := range ranges {
				if int(r.Start) >= n {
					continue
				}
				got, _ := getBytes(t, s, "b", key, &r)
				end := min(int(r.Start+r.Length), n)
				if !bytes.Equal(got, body[r.Start:end]) {
					t.Fatalf("%s: range %+v of %d bytes differs", model, r, n)
				}
			}
		}
	}
}

// Streams abandoned halfway release their threads and files, in both
// models, and many streams at once through a small pool all complete.
func TestStreamsClosedEarlyAndManyAtOnce(t *testing.T) {
	for _, model := range []IOModel{IOPerStream, IOPool} {
		t.Run(string(model), func(t *testing.T) {
			s := openStreams(t, StreamOptions{Model: model, PoolThreads: 2})
			body := randomBytes(50*testChunk, 7)
			putBytes(t, s, "b", "k", body)
			for range 20 {
				rc, _, err := s.GetObject(context.Background(), "b", "k", nil)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := io.ReadFull(rc, make([]byte, 3*testChunk+5)); err != nil {
					t.Fatal(err)
				}
				_ = rc.Close()
			}
			var wg sync.WaitGroup
			for range 16 {
				wg.Go(func() {
					got, _ := getBytes(t, s, "b", "k", nil)
					if !bytes.Equal(got, body) {
						t.Error("concurrent stream differs")
					}
				})
			}
			wg.Wait()
		})
	}
}

// A cancelled request ends its per-stream thread with the context's error.
func TestPerStreamCancel(t *testing.T) {
	s := openStreams(t, StreamOptions{Model: IOPerStream})
	putBytes(t, s, "b", "k", randomBytes(100*testChunk, 3))
	ctx, cancel := context.WithCancel(context.Background())
	rc, _, err := s.GetObject(ctx, "b", "k", nil)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	_, err = io.Copy(io.Discard, rc)
	if err != context.Canceled {
		t.Fatalf("read after cancel: %v", err)
	}
	_ = rc.Close()
}

type prioCall struct{ tid, class, level int }

// ioprio_set is called only where the capability check says priorities
// work; there, a flow under its need is raised to BE(0) and one over it
// lowered to idle, on the thread that reads the stream.
func TestIOPrioOnlyWhereSupported(t *testing.T) {
	for _, tc := range []struct {
		name      string
		supported bool
		need      float64
		want      ioprio
	}{
		{"unsupported", false, 1e18, ioprio{}},
		{"under need", true, 1e18, prioRaised},
		{"over need", true, 1, prioLowered},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var calls []prioCall
			readers := map[int]bool{}
			s := openStreams(t, StreamOptions{Model: IOPerStream, Priorities: Priorities{
				Needed: func(context.Context) (string, float64, bool) { return "t1/etl", tc.need, true },
				Supported: func() (bool, string) {
					return tc.supported, "injected"
				},
				Set: func(tid, class, level int) error {
					mu.Lock()
					calls = append(calls, prioCall{tid, class, level})
					mu.Unlock()
					return nil
				},
				Window: time.Nanosecond,
			}})
			s.io.onChunk = func(_ *os.File, tid int, _ int64) {
				mu.Lock()
				readers[tid] = true
				mu.Unlock()
			}
			putBytes(t, s, "b", "k", randomBytes(40*testChunk, 9))
			getBytes(t, s, "b", "k", nil)
			if st := s.IOStatus(); st.Priorities != tc.supported || st.PrioritiesNote != "injected" {
				t.Fatalf("status %+v", st)
			}
			if tc.want == (ioprio{}) {
				if len(calls) != 0 {
					t.Fatalf("ioprio_set called where unsupported: %v", calls)
				}
				return
			}
			if len(calls) == 0 {
				t.Fatal("no ioprio_set call")
			}
			for _, c := range calls {
				if !readers[c.tid] || (ioprio{c.class, c.level}) != tc.want {
					t.Fatalf("call %+v, want %+v on a reading thread %v", c, tc.want, readers)
				}
			}
		})
	}
}

// The real ioprio_set works on this kernel for the calling thread (the
// scheduler may ignore it; the call itself must not fail).
func TestSetIOPrioSyscall(t *testing.T) {
	done := make(chan error)
	go func() {
		// A thread of its own that dies with the goroutine, so the
		// priority does not leak to the rest of the test binary.
		runtimeLockForever()
		tid := syscall.Gettid()
		if err := SetIOPrio(tid, IOPrioClassBE, 7); err != nil {
			done <- err
			return
		}
		v, _, e := syscall.Syscall(syscall.SYS_IOPRIO_GET, ioprioWhoProcess, uintptr(tid), 0)
		if e != 0 {
			done <- e
			return
		}
		if v != IOPrioClassBE<<ioprioClassShift|7 {
			done <- fmt.Errorf("ioprio_get = %#x", v)
			return
		}
		done <- nil
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func runtimeLockForever() { runtime.LockOSThread() }

// The whole decision from /sys: the data directory's device (found through
// mountinfo and /sys/dev/block, here fixture trees naming the real device
// numbers of the test's directory) decides whether ioprio_set is called at
// all. With BFQ active the reading thread is raised; with mq-deadline
// (which ignores priorities) it is never called, and the status says why.
func TestIOPrioFollowsTheDevicesScheduler(t *testing.T) {
	dir := t.TempDir()
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		t.Fatal(err)
	}
	dev := uint64(st.Dev)
	maj, mnr := uint32((dev>>8)&0xfff)|uint32((dev>>32)&^0xfff), uint32(dev&0xff)|uint32((dev>>12)&^0xff)
	if maj == 0 {
		t.Skipf("%s has no block device (anonymous device %d:%d)", dir, maj, mnr)
	}
	mm := fmt.Sprintf("%d:%d", maj, mnr)
	for _, tc := range []struct {
		scheduler string
		want      bool
		note      string
	}{
		{"mq-deadline kyber [bfq] none", true, "bfq"},
		{"[mq-deadline] kyber bfq none", false, "ignores I/O priorities"},
	} {
		t.Run(tc.note, func(t *testing.T) {
			root := t.TempDir()
			write := func(p, s string) {
				t.Helper()
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			write(filepath.Join(root, "proc", "self", "mountinfo"), "27 1 "+mm+" / / rw,relatime - ext4 /dev/fakedisk rw\n")
			disk := filepath.Join(root, "sys", "devices", "virtual", "block", "fakedisk")
			write(filepath.Join(disk, "queue", "rotational"), "1\n")
			write(filepath.Join(disk, "queue", "scheduler"), tc.scheduler+"\n")
			write(filepath.Join(disk, "dev"), mm+"\n")
			link := filepath.Join(root, "sys", "dev", "block", mm)
			if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(disk, link); err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			var calls []prioCall
			s, err := Open(context.Background(), filepath.Join(dir, tc.note), Options{NoSync: true,
				Devices: sysdev.Reader{Proc: filepath.Join(root, "proc"), Sys: filepath.Join(root, "sys")},
				Streams: StreamOptions{Model: IOPerStream, ChunkSize: testChunk, ReadAhead: 2, SmallChunk: testChunk / 4, Priorities: Priorities{
					Needed: func(context.Context) (string, float64, bool) { return "t1/etl", 1e18, true },
					Set: func(tid, class, level int) error {
						mu.Lock()
						calls = append(calls, prioCall{tid, class, level})
						mu.Unlock()
						return nil
					},
					Window: time.Nanosecond,
				}}})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if err := s.CreateBucket(context.Background(), "b"); err != nil {
				t.Fatal(err)
			}
			putBytes(t, s, "b", "k", randomBytes(40*testChunk, 11))
			getBytes(t, s, "b", "k", nil)
			status := s.IOStatus()
			if status.Priorities != tc.want || !strings.Contains(status.PrioritiesNote, tc.note) {
				t.Fatalf("status %+v, want priorities %v and a note saying %q", status, tc.want, tc.note)
			}
			mu.Lock()
			defer mu.Unlock()
			if tc.want && (len(calls) == 0 || (ioprio{calls[0].class, calls[0].level}) != prioRaised) {
				t.Fatalf("BFQ: calls %v, want the stream's thread raised", calls)
			}
			if !tc.want && len(calls) != 0 {
				t.Fatalf("mq-deadline: ioprio_set called %v", calls)
			}
		})
	}
}

// Streams lists each live per-stream thread (a thread of this process),
// its flow and need, until the stream is closed.
func TestStreamsListsLiveThreads(t *testing.T) {
	s := openStreams(t, StreamOptions{Model: IOPerStream, Priorities: Priorities{
		Needed:    func(context.Context) (string, float64, bool) { return "t1/etl", 5e6, true },
		Supported: func() (bool, string) { return false, "injected" },
	}})
	putBytes(t, s, "b", "k", randomBytes(40*testChunk, 12))
	if n := len(s.Streams()); n != 0 {
		t.Fatalf("%d streams before any GET", n)
	}
	rc, _, err := s.GetObject(context.Background(), "b", "k", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(rc, make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	ss := s.Streams()
	if len(ss) != 1 || ss[0].TID == 0 || ss[0].Flow != "t1/etl" || ss[0].Need != 5e6 || ss[0].Bytes < testChunk {
		t.Fatalf("streams %+v", ss)
	}
	if _, err := os.Stat(fmt.Sprintf("/proc/self/task/%d", ss[0].TID)); err != nil {
		t.Fatalf("thread %d is not ours: %v", ss[0].TID, err)
	}
	_ = rc.Close()
	if n := len(s.Streams()); n != 0 {
		t.Fatalf("%d streams after Close", n)
	}
}

// The warning that I/O priorities cannot work comes only once a flow
// with a bandwidth target reads, and once: a fresh server, where no
// tenant has a target, does not warn.
func TestIOPrioWarnsOnlyWithTargets(t *testing.T) {
	var logs bytes.Buffer
	var mu sync.Mutex
	targets := false
	log := slog.New(slog.NewTextHandler(&logs, nil))
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "store"), Options{NoSync: true, Logger: log,
		Streams: StreamOptions{Model: IOPerStream, ChunkSize: testChunk, ReadAhead: 2, SmallChunk: testChunk / 4, Priorities: Priorities{
			Needed: func(context.Context) (string, float64, bool) {
				mu.Lock()
				defer mu.Unlock()
				return "t1/etl", 1e6, targets
			},
			Supported: func() (bool, string) { return false, "injected" },
		}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if err := s.CreateBucket(t.Context(), "b"); err != nil {
		t.Fatal(err)
	}
	putBytes(t, s, "b", "k", randomBytes(40*testChunk, 3))
	getBytes(t, s, "b", "k", nil)
	if strings.Contains(logs.String(), "I/O priorities cannot work") {
		t.Fatalf("warned without targets: %s", logs.String())
	}
	mu.Lock()
	targets = true
	mu.Unlock()
	getBytes(t, s, "b", "k", nil)
	getBytes(t, s, "b", "k", nil)
	if n := strings.Count(logs.String(), "I/O priorities cannot work"); n != 1 {
		t.Fatalf("%d warnings with a target: %s", n, logs.String())
	}
}
