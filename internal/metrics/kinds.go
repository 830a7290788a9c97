package metrics

import (
	"github.com/facet-sds/facet/internal/obs"
	"github.com/facet-sds/facet/internal/policy"
)

// Shapes most modules share: a rate of matching requests, a rate of their
// bytes, a mean of their latency. A module file picks a shape and says
// which requests count.

// opRate counts matching requests as they start, per second.
type opRate struct {
	name, doc string
	match     func(op string) bool
}

func (m opRate) Info() Info {
	return Info{Name: m.name, Unit: policy.KindOpsRate, Doc: m.doc, Merge: MergeSum}
}
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
	name, doc string
	bytes     func(o *obs.Observation) int64
}

func (m byteRate) Info() Info {
	return Info{Name: m.name, Unit: policy.KindByteRate, Doc: m.doc, Merge: MergeSum}
}
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
	name, doc string
	match     func(op string) bool
}

func (m meanLatency) Info() Info {
	return Info{Name: m.name, Unit: policy.KindDuration, Doc: m.doc, Merge: MergeMean}
}
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
	case "ListBuckets", "ListObjects", "ListObjectsV2", "ListMultipartUploads", "ListParts":
		return true
	}
	return false
}

func anyOp(string) bool { return true }
