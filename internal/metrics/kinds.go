package metrics

import (
	"fmt"

	"github.com/facet-sds/facet/internal/obs"
	"github.com/facet-sds/facet/internal/policy"
)

// Shapes most modules share: a rate of matching requests, a rate of their
// bytes, a mean of their latency. A module file picks a shape and says
// which requests count.

// described returns a built-in metric's Info: its name, unit and doc are
// the policy vocabulary's (policy.DefaultMetrics, the one list of them);
// its merge, and the unit it measures in, are the module's. A name missing
// from that list, or listed with another unit, is a programming error: it
// panics when the built-in modules are made, which every test of this
// package does.
func described(name string, merge Merge, unit policy.ValueKind) Info {
	for _, m := range policy.DefaultMetrics() {
		if m.Name != name {
			continue
		}
		if m.Unit != unit {
			panic(fmt.Sprintf("metrics: policy.DefaultMetrics lists %s in %v; its module measures %v", name, m.Unit, unit))
		}
		return Info{Name: m.Name, Unit: m.Unit, Doc: m.Doc, Merge: merge}
	}
	panic(fmt.Sprintf("metrics: built-in metric %s is not in policy.DefaultMetrics", name))
}

// opRate counts matching requests as they start, per second.
type opRate struct {
	info  Info
	match func(op string) bool
}

func newOpRate(name string, match func(op string) bool) opRate {
	return opRate{info: described(name, MergeSum, policy.KindOpsRate), match: match}
}

func (m opRate) Info() Info  { return m.info }
func (opRate) NewCell() Cell { return new(Counter) }

func (m opRate) Start(o *obs.Observation, cs Cells) {
	if m.match(o.Op) {
		for i := range cs.n {
			cs.c[i].(*Counter).Add(1)
		}
	}
}

// byteRate counts the bytes of matching requests when they end, per
// second.
type byteRate struct {
	info  Info
	bytes func(o *obs.Observation) int64
}

func newByteRate(name string, bytes func(o *obs.Observation) int64) byteRate {
	return byteRate{info: described(name, MergeSum, policy.KindByteRate), bytes: bytes}
}

func (m byteRate) Info() Info  { return m.info }
func (byteRate) NewCell() Cell { return new(Counter) }

func (m byteRate) Finish(o *obs.Observation, cs Cells) {
	if n := m.bytes(o); n > 0 {
		for i := range cs.n {
			cs.c[i].(*Counter).Add(n)
		}
	}
}

// meanLatency averages the duration of matching requests, in seconds.
type meanLatency struct {
	info  Info
	match func(op string) bool
}

func newMeanLatency(name string, match func(op string) bool) meanLatency {
	return meanLatency{info: described(name, MergeMean, policy.KindDuration), match: match}
}

func (m meanLatency) Info() Info  { return m.info }
func (meanLatency) NewCell() Cell { return &Mean{Scale: 1e-9} }

func (m meanLatency) Finish(o *obs.Observation, cs Cells) {
	if m.match(o.Op) {
		for i := range cs.n {
			cs.c[i].(*Mean).Observe(int64(o.Duration))
		}
	}
}

// Operation classes, by S3 operation name (s3api's Observation.Op).

func isGet(op string) bool { return op == "GetObject" }

func isPut(op string) bool {
	return op == "PutObject" || op == "UploadPart" || op == "CopyObject" || op == "UploadPartCopy"
}

func isDelete(op string) bool { return op == "DeleteObject" || op == "DeleteObjects" }

func isHead(op string) bool { return op == "HeadObject" || op == "HeadBucket" }

func isList(op string) bool {
	switch op {
	case "ListBuckets", "ListObjects", "ListObjectsV2", "ListObjectVersions", "ListMultipartUploads", "ListParts":
		return true
	}
	return false
}

func anyOp(string) bool { return true }
