package qos

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/facet-sds/facet/internal/storage"
	"github.com/facet-sds/facet/internal/sysdev"
)

type fakeDevices struct {
	places  []sysdev.Placement
	streams []storage.ThreadStream
}

func (f *fakeDevices) Devices() ([]sysdev.Placement, error) { return f.places, nil }
func (f *fakeDevices) Streams() []storage.ThreadStream      { return f.streams }

// The per-device view: the device's own traffic from /proc/diskstats and
// each per-stream thread's read rate, between two samples; a stream not on
// its thread yet is left out, and the first sample knows no device rate.
func TestDeviceSampler(t *testing.T) {
	proc := t.TempDir()
	stats := func(read, written uint64) {
		line := fmt.Sprintf("254 0 vda 1 0 %d 0 1 0 %d 0 0 0 0\n", read/512, written/512)
		if err := os.WriteFile(filepath.Join(proc, "diskstats"), []byte(line), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Unix(1000, 0)
	since := now.Add(-time.Second)
	src := &fakeDevices{places: []sysdev.Placement{{Device: &sysdev.Device{Name: "vda"}}}}
	s := &deviceSampler{src: src, dev: sysdev.Reader{Proc: proc}, now: func() time.Time { return now }}
	stats(1<<20, 0)
	src.streams = []storage.ThreadStream{{TID: 7, Flow: "t1/etl", Need: 4e6, Bytes: 2e6, Since: since}, {TID: 0, Since: now}}
	d := s.sample(context.Background())
	if len(d) != 1 || d[0].Device != "vda" || d[0].Served != -1 || d[0].Asked != 4e6 || len(d[0].Streams) != 1 || d[0].Streams[0].Served != 2e6 {
		t.Fatalf("first sample %+v", d)
	}
	now = now.Add(500 * time.Millisecond)
	stats(4<<20, 1<<20) // 3 MiB read, 1 MiB written in 0.5 s
	src.streams = []storage.ThreadStream{{TID: 7, Flow: "t1/etl", Need: 4e6, Bytes: 3.5e6, Since: since}, {TID: 8, Bytes: 1e5, Since: now.Add(-100 * time.Millisecond)}}
	d = s.sample(context.Background())
	if len(d) != 1 || d[0].Served != 8<<20 || d[0].Asked != 4e6 || len(d[0].Streams) != 2 ||
		math.Abs(d[0].Streams[0].Served-3e6) > 1 || math.Abs(d[0].Streams[1].Served-1e6) > 1 || d[0].Streams[1].Flow != "" {
		t.Fatalf("second sample %+v", d)
	}
	// Without a block device (tmpfs), the device says so and its rate is unknown.
	src.places = []sysdev.Placement{{Mount: sysdev.Mount{Point: "/tmp", FSType: "tmpfs"}}}
	if d := s.sample(context.Background()); len(d) != 1 || d[0].Served != -1 || !strings.Contains(d[0].Device, "tmpfs") {
		t.Fatalf("tmpfs %+v", d)
	}
}
