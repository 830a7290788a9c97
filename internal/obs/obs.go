// Package obs owns the vocabulary of request observation: the Observation
// the S3 front end fills in as a request progresses, and the Observer
// interface through which workload metrics, Prometheus counters and the
// dashboard are told about it. It is a leaf (standard library only) so
// observers below the front end need not import it.
package obs

import (
	"io"
	"time"
)

// Observation describes one S3 request to observers: workload metrics and
// Prometheus counters. It is filled in as the request progresses.
type Observation struct {
	Op     string
	Method string
	Tenant string
	Bucket string
	Key    string
	Start  time.Time
	// RequestID is the x-amz-request-id answered; Remote the client's
	// address (host:port of the connection).
	RequestID string
	Remote    string
	// AccessKey is the access key id that authenticated the request, or,
	// when authentication failed, the one the request claimed (from its
	// Authorization header or presigned query; never a secret or a
	// signature). Set when the request ends.
	AccessKey string
	// Routed is set once Started has been called (the request was
	// authenticated and routed); Done is told about unrouted requests too.
	Routed bool
	// Carry is the observer's own: what it sets in Started it finds in
	// Body and Done (workload metrics keep the request's targets there).
	Carry any
	// Set when the request ends.
	Status   int
	ErrCode  string
	BytesIn  int64 // client payload bytes received (before filters)
	BytesOut int64 // response bytes sent
	Duration time.Duration
	// Cache is CacheHit or CacheMiss for a GET under a caching policy,
	// "" otherwise.
	Cache CacheOutcome
}

// CacheOutcome says whether a GET was served from the object cache.
type CacheOutcome string

// The outcomes of a GET under a caching policy.
const (
	CacheHit  CacheOutcome = "hit"
	CacheMiss CacheOutcome = "miss"
)

// Observer is told about every request. Implementations run on the
// request path: they must be cheap and must not block (aggregate in
// memory, publish elsewhere).
type Observer interface {
	// Started is called once the request is authenticated and routed.
	Started(o *Observation)
	// Body may wrap the client's payload of a write (before filters) to
	// look at its bytes, e.g. to sample compressibility. It returns r when
	// it does not need to.
	Body(o *Observation, r io.Reader) io.Reader
	// Done is called when the response is finished, for every request,
	// including refused ones (Tenant is then empty).
	Done(o *Observation)
}

// Class sorts a finished request for logs and metrics: an administrator
// pages on server errors and only watches client errors.
type Class string

// The classes of a finished request.
const (
	// ClassOK: answered as asked, including 304 Not Modified (a
	// conditional GET's expected answer, not a failure).
	ClassOK Class = "ok"
	// ClassClient: the request was wrong or asked for something this
	// server does not do: 4xx, and 501 NotImplemented, which says the
	// client called an S3 operation Facet lacks (s3cmd info, mc stat
	// call several on every run); nothing failed on the server.
	ClassClient Class = "client_error"
	// ClassServer: the server failed or refused to serve (5xx but 501,
	// SlowDown included: the client did nothing wrong).
	ClassServer Class = "server_error"
)

// ClassOf returns the class of a request answered with status and S3
// error code ("" when none).
func ClassOf(status int, code string) Class {
	switch {
	case status == 501 || code == "NotImplemented":
		return ClassClient
	case status >= 500:
		return ClassServer
	case status >= 400:
		return ClassClient
	case code == "" || code == "NotModified":
		return ClassOK
	case code == "InternalError" || code == "ServiceUnavailable" || code == "SlowDown":
		// An error code after the status went out as 200: a failure
		// mid-stream (a GET's source, a select's engine).
		return ClassServer
	}
	// Likewise, the client's: a select's query failing on the data
	// (CastFailed, InvalidTextEncoding ...).
	return ClassClient
}
