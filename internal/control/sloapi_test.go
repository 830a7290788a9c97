package control

import (
	"errors"
	"testing"
	"time"

	"github.com/facet-sds/facet/internal/admin"
	"github.com/facet-sds/facet/internal/qos"
)

func TestParseSLOSpec(t *testing.T) {
	got, err := ParseSLOSpec(admin.SLOSpec{"get": "30MB/s", "put": 10e6, "limit": "1.5GiB/s", "weight": 2.0, "ops": 100.0, "background": "5MB/s"})
	if err != nil {
		t.Fatal(err)
	}
	want := qos.SLO{Get: 30e6, Put: 10e6, Limit: 1.5 * (1 << 30), Weight: 2, Ops: 100, Background: 5e6}
	if got != want {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	for _, bad := range []admin.SLOSpec{
		{}, {"gte": "1MB/s"}, {"get": "30 parsecs"}, {"get": "1MB/s, SET compression"}, {"get": -1.0},
		{"weight": 0.0}, {"get": true}, {"get": "30MB/s", "weight": "heavy"},
	} {
		if _, err := ParseSLOSpec(bad); !errors.Is(err, admin.ErrInvalidSLO) {
			t.Errorf("ParseSLOSpec(%v) = %v, want ErrInvalidSLO", bad, err)
		}
	}
}

func FuzzParseSLOSpec(f *testing.F) {
	for _, s := range []string{"30MB/s", "1", "1.5GiB/s", "", "x", "1MB/s, SET compression"} {
		f.Add("get", s)
	}
	f.Fuzz(func(t *testing.T, k, v string) {
		s, err := ParseSLOSpec(admin.SLOSpec{k: v})
		if err != nil {
			if !errors.Is(err, admin.ErrInvalidSLO) {
				t.Fatalf("error %v is not ErrInvalidSLO", err)
			}
			return
		}
		if s.IsZero() && v != "0" {
			t.Logf("%s=%q gave a zero SLO", k, v)
		}
	})
}

// The /bw views per node (osinfo): capacity, the flows' rates summed
// (0 once a flow is unlimited: a sum leaving it out would understate what
// the node lets through), served and active streams.
func TestBandwidthViewPerNode(t *testing.T) {
	f := qos.NewFleet(time.Minute)
	f.Add(qos.NodeReport{V: qos.ReportVersion, Node: "gw-a", Stage: qos.StageGateway, Capacity: 80e6, Time: time.Now(), Assigner: "c1", Flows: []qos.FlowStatus{
		{Tenant: "t1", Class: qos.ClassGet, Rate: 30e6, Source: qos.SourceAssigned, Streams: 2, Active: 2, Served: 29e6},
		{Tenant: "t2", Class: qos.ClassPut, Rate: 50e6, Source: qos.SourceAssigned, Streams: 1, Active: 1, Served: 40e6},
	}})
	f.Add(qos.NodeReport{V: qos.ReportVersion, Node: "gw-b", Stage: qos.StageGateway, Time: time.Now(), Flows: []qos.FlowStatus{
		{Tenant: "t1", Class: qos.ClassGet, Rate: 10e6, Source: qos.SourceStatic, Streams: 3, Active: 1, Served: 9e6},
		{Tenant: "t3", Class: qos.ClassGet, Rate: 0, Source: qos.SourceNone, Streams: 1, Active: 1, Served: 70e6},
	}, Devices: []qos.DeviceStatus{{Device: "vda", Served: 75e6, Asked: 5e6, Streams: []qos.ThreadStatus{{TID: 9, Flow: "t1/etl", Need: 5e6, Served: 6e6}}}}})
	v := BandwidthView(f, "")
	if v.Algorithm != "crystal" || len(v.Nodes) != 2 {
		t.Fatalf("%+v", v)
	}
	byNode := map[string]admin.BWNode{}
	for _, n := range v.Nodes {
		byNode[n.Node] = n
	}
	a, b := byNode["gw-a"], byNode["gw-b"]
	if a.Capacity != 80e6 || a.Asked != 80e6 || a.Served != 69e6 || a.Streams != 3 || a.Assigner != "c1" || a.Device != qos.StageGateway || len(a.Flows) != 2 {
		t.Fatalf("gw-a: %+v", a)
	}
	if len(a.Devices) != 0 || len(b.Devices) != 1 || b.Devices[0].Device != "vda" || b.Devices[0].Served != 75e6 || b.Devices[0].Asked != 5e6 ||
		len(b.Devices[0].Streams) != 1 || b.Devices[0].Streams[0] != (admin.BWThread{TID: 9, Flow: "t1/etl", Need: 5e6, Served: 6e6}) {
		t.Fatalf("devices: %+v %+v", a.Devices, b.Devices)
	}
	if b.Capacity != 0 || b.Asked != 0 || b.Served != 79e6 || b.Streams != 2 || len(b.Flows) != 2 {
		t.Fatalf("gw-b (one flow unlimited): %+v", b)
	}
}
