// Package audit owns Facet's audit log: one JSON line per admin action, S3
// mutation, access denial and dashboard sign-in, written by one goroutine
// to a file it rotates by size (or to stdout), and read back for
// `facet ctl audit tail`. A Record carries who (tenant, access key id,
// source address), what (operation, bucket/key or API path) and the
// outcome (HTTP status, error code, bytes); never a secret: no header, no
// signature, no token, no secret key, and query strings only through
// RedactQuery.
//
// Recording never blocks a request: records go through a buffered channel
// to the writer goroutine, and when it is full the record is dropped and
// counted (facet_audit_dropped_total). See Log for the durability policy.
package audit

import (
	"time"
)

// The kinds of record.
const (
	KindS3     = "s3"     // an S3 mutation or denial
	KindAdmin  = "admin"  // an admin API action or denial
	KindSignIn = "signin" // a dashboard sign-in, accepted or refused
)

// The results of a recorded request.
const (
	ResultOK     = "ok"     // 1xx-3xx
	ResultDenied = "denied" // 401, 403, 429: refused for who the client is
	ResultError  = "error"  // any other 4xx or 5xx
)

// Record is one line of the audit log.
type Record struct {
	Time      time.Time `json:"time"`
	Kind      string    `json:"kind"`
	RequestID string    `json:"request_id,omitempty"`
	Tenant    string    `json:"tenant,omitempty"`
	// AccessKey is the access key id the client used or claimed (never
	// its secret); Actor says what authenticated: "admin" (the admin
	// token), "tenant" (an access key), "" when nothing did.
	AccessKey string `json:"access_key,omitempty"`
	Actor     string `json:"actor,omitempty"`
	Source    string `json:"source,omitempty"`
	Op        string `json:"op"`
	Method    string `json:"method,omitempty"`
	// Path and Query are the admin API's (Query redacted); S3 records
	// name Bucket and Key instead.
	Path     string `json:"path,omitempty"`
	Query    string `json:"query,omitempty"`
	Bucket   string `json:"bucket,omitempty"`
	Key      string `json:"key,omitempty"`
	Result   string `json:"result"`
	Status   int    `json:"status"`
	Code     string `json:"code,omitempty"`
	BytesIn  int64  `json:"bytes_in,omitempty"`
	BytesOut int64  `json:"bytes_out,omitempty"`
}

// ResultOf sorts an HTTP status into a Result.
func ResultOf(status int) string {
	switch {
	case status == 401 || status == 403 || status == 429:
		return ResultDenied
	case status >= 400:
		return ResultError
	}
	return ResultOK
}
