package cli

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/facet-sds/facet/internal/qos"
	"github.com/facet-sds/facet/internal/server"
)

// rateFlag is a byte-rate flag ("80MB/s") stored in bytes per second.
type rateFlag struct{ v *float64 }

func (r rateFlag) String() string {
	if r.v == nil || *r.v == 0 {
		return ""
	}
	return qos.FormatRate(*r.v)
}

func (r rateFlag) Set(s string) error {
	v, err := qos.ParseRate(s)
	if err != nil {
		return err
	}
	*r.v = v
	return nil
}

func (rateFlag) Type() string { return "rate" }

// qosFlags are the QoS flags of the roles that serve requests (gateway
// true) or run the bandwidth controller (gateway false: the controller
// role).
func qosFlags(f *pflag.FlagSet, o *server.QoSOptions, gateway bool) {
	if gateway {
		f.Var(rateFlag{&o.Capacity}, "qos-capacity", "this node's bandwidth capacity for the global bandwidth controller (80MB/s); empty lets the controller estimate it")
		f.BoolVar(&o.Off, "qos-off", false, "do not enforce QoS: no admission, no shaping (benchmarks compare)")
		f.DurationVar(&o.OpsQueue, "qos-ops-queue", 250*time.Millisecond, "how long an operation over its tenant's ops rate queues before 503 SlowDown")
		f.DurationVar(&o.MultipartExpiry, "multipart-expiry", 7*24*time.Hour, "abort multipart uploads unfinished for this long, as the tenant's background QoS class (0: never)")
		f.DurationVar(&o.MultipartSweep, "multipart-sweep", time.Hour, "how often the multipart cleanup looks for expired uploads")
	} else {
		f.Var(rateFlag{&o.Capacity}, "qos-capacity", "bandwidth capacity of nodes that report none (80MB/s); empty estimates it from saturation")
	}
	f.StringVar(&o.Algorithm, "qos-algorithm", "crystal", "bandwidth controller algorithm: crystal (reservations, weighted spare), maxmin or psfa")
	f.DurationVar(&o.Period, "qos-period", 500*time.Millisecond, "QoS report and bandwidth controller period")
}
