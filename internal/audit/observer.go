package audit

import (
	"io"
	"net/http"

	"github.com/facet-sds/facet/internal/obs"
)

// S3Observer records the S3 requests that belong in the audit log:
// mutations (PUT, POST and DELETE, but for SelectObjectContent, a POST
// that reads) whatever their outcome, and any request refused with 403,
// authenticated or not. It only reads the Observation at Done: it costs
// a request nothing more than building one Record and a channel send.
func (l *Log) S3Observer() obs.Observer { return s3Observer{l} }

type s3Observer struct{ l *Log }

func (s3Observer) Started(*obs.Observation)                       {}
func (s3Observer) Body(_ *obs.Observation, r io.Reader) io.Reader { return r }

func (o s3Observer) Done(ob *obs.Observation) {
	if !Mutation(ob.Method, ob.Op) && ob.Status != http.StatusForbidden {
		return
	}
	actor := ""
	if ob.Tenant != "" {
		actor = "tenant"
	}
	o.l.Record(Record{
		Time: ob.Start.Add(ob.Duration), Kind: KindS3, RequestID: ob.RequestID,
		Tenant: ob.Tenant, AccessKey: ob.AccessKey, Actor: actor, Source: ob.Remote,
		Op: opName(ob), Method: ob.Method, Bucket: ob.Bucket, Key: ob.Key,
		Result: ResultOf(ob.Status), Status: ob.Status, Code: ob.ErrCode,
		BytesIn: ob.BytesIn, BytesOut: ob.BytesOut,
	})
}

// Mutation reports whether an S3 request of method and operation may
// change state.
func Mutation(method, op string) bool {
	switch method {
	case http.MethodPut, http.MethodPost, http.MethodDelete:
		return op != "SelectObjectContent"
	}
	return false
}

func opName(ob *obs.Observation) string {
	if ob.Op == "" {
		return "-" // refused before it was routed
	}
	return ob.Op
}
