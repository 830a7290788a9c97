package qos

import (
	"context"
	"sync"
	"time"

	"github.com/facet-sds/facet/internal/storage"
	"github.com/facet-sds/facet/internal/sysdev"
)

// The per-device part of the bandwidth views (the sources' osinfo: per
// object server, per device, per stream thread, needed vs calculated
// bandwidth). The embedded backend's large streams are read by threads of
// their own; each QoS report lists them under the device holding the data,
// with their flows' needs, and what the device itself moved.

// DeviceSource is what the embedded backend tells (*fs.Store).
type DeviceSource interface {
	Devices() ([]sysdev.Placement, error)
	Streams() []storage.ThreadStream
}

// deviceSampler turns cumulative counters into rates between reports.
type deviceSampler struct {
	src DeviceSource
	dev sysdev.Reader
	now func() time.Time

	mu    sync.Mutex
	last  time.Time
	io    map[string]sysdev.DiskIO
	bytes map[streamKey]int64
}

// maxReportedStreams bounds the streams a report lists (the oldest are
// kept; Asked counts them all): the fleet refuses a report listing more
// than qos allows, and a report is for the controller first.
const maxReportedStreams = 1024

// streamKey names a stream: a thread id may serve a later stream.
type streamKey struct {
	tid   int
	since time.Time
}

// DeviceSampler returns the function that samples src's devices for the
// agent's reports (Agent.ReportDevices).
func DeviceSampler(src DeviceSource) func(context.Context) []DeviceStatus {
	s := &deviceSampler{src: src, now: time.Now}
	return s.sample
}

// sample returns the devices over the time since the previous sample. A
// device's Served is -1 on the first sample, or when the kernel does not
// say (no block device, no /proc/diskstats entry).
func (s *deviceSampler) sample(context.Context) []DeviceStatus {
	places, err := s.src.Devices()
	if err != nil || len(places) == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	dt := now.Sub(s.last).Seconds()
	first := s.last.IsZero() || dt <= 0
	s.last = now

	// The embedded backend keeps its data under one directory: its
	// streams are on the device holding it.
	p := places[0]
	d := DeviceStatus{Served: -1, Streams: []ThreadStatus{}}
	ioNow := map[string]sysdev.DiskIO{}
	if p.Device != nil {
		d.Device = p.Device.Name
		if io, err := s.dev.DiskIO(p.Device.Name); err == nil {
			ioNow[d.Device] = io
			if prev, ok := s.io[d.Device]; ok && !first && io.Read >= prev.Read && io.Written >= prev.Written {
				d.Served = float64(io.Read-prev.Read+io.Written-prev.Written) / dt
			}
		}
	} else {
		d.Device = "none (" + p.Mount.FSType + " " + p.Mount.Point + ")"
	}
	s.io = ioNow

	bytesNow := map[streamKey]int64{}
	for _, t := range s.src.Streams() {
		if t.TID == 0 {
			continue // not on its thread yet
		}
		k := streamKey{t.TID, t.Since}
		bytesNow[k] = t.Bytes
		window := now.Sub(t.Since).Seconds()
		if !first && dt < window {
			window = dt
		}
		served := 0.0
		if window > 0 {
			served = float64(t.Bytes-s.bytes[k]) / window
		}
		d.Asked += t.Need
		if len(d.Streams) < maxReportedStreams {
			d.Streams = append(d.Streams, ThreadStatus{TID: t.TID, Flow: t.Flow, Need: t.Need, Served: max(served, 0)})
		}
	}
	s.bytes = bytesNow
	return []DeviceStatus{d}
}
