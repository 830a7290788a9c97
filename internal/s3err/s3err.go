// Package s3err owns S3's error vocabulary: the codes, their HTTP statuses,
// the one function that renders them as S3's XML error document, and the
// sentinel errors the metadata store returns for access keys and bucket
// ownership (so the store and the S3 front end share them without either
// importing the other). Handlers return *Error values; they never write
// error XML themselves. It is a leaf: it imports only the standard library.
package s3err

import (
	"encoding/xml"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Sentinel errors of the metadata store's answers, matched with errors.Is by
// the S3 front end (which turns them into codes) and by caches in front of
// the store.
var (
	// ErrUnknownAccessKey is returned by an access-key lookup for a key
	// that does not exist or was revoked.
	ErrUnknownAccessKey = errors.New("unknown access key")
	// Bucket ownership: a claim, release or lookup of a bucket.
	ErrBucketOwnedByOther = errors.New("bucket owned by another tenant")
	ErrBucketOwnedByYou   = errors.New("bucket already owned by you")
	ErrNoSuchBucket       = errors.New("no such bucket")
)

// Code is an S3 error code with its HTTP status and default message.
type Code struct {
	Name    string
	Status  int
	Message string
}

// The S3 error codes Facet returns.
var (
	AccessDenied                      = Code{"AccessDenied", http.StatusForbidden, "Access Denied"}
	AuthorizationHeaderMalformed      = Code{"AuthorizationHeaderMalformed", http.StatusBadRequest, "The authorization header is malformed."}
	AuthorizationQueryParametersError = Code{"AuthorizationQueryParametersError", http.StatusBadRequest, "Error parsing the X-Amz-Credential parameter."}
	BadDigest                         = Code{"BadDigest", http.StatusBadRequest, "The Content-MD5 or checksum you specified did not match what we received."}
	BucketAlreadyExists               = Code{"BucketAlreadyExists", http.StatusConflict, "The requested bucket name is not available. The bucket namespace is shared by all users of the system. Please select a different name and try again."}
	BucketAlreadyOwnedByYou           = Code{"BucketAlreadyOwnedByYou", http.StatusConflict, "Your previous request to create the named bucket succeeded and you already own it."}
	BucketNotEmpty                    = Code{"BucketNotEmpty", http.StatusConflict, "The bucket you tried to delete is not empty."}
	EntityTooLarge                    = Code{"EntityTooLarge", http.StatusBadRequest, "Your proposed upload exceeds the maximum allowed object size."}
	EntityTooSmall                    = Code{"EntityTooSmall", http.StatusBadRequest, "Your proposed upload is smaller than the minimum allowed object size."}
	ExpiredToken                      = Code{"AccessDenied", http.StatusForbidden, "Request has expired"}
	IncompleteBody                    = Code{"IncompleteBody", http.StatusBadRequest, "You did not provide the number of bytes specified by the Content-Length HTTP header."}
	// FilterFailed: a filter of the request's pipeline (a sandboxed WASM
	// module) failed on this data: it trapped, ran out of time or memory,
	// wrote too much or exited non-zero. Not retryable as such (4xx); the
	// message names the filter and the reason.
	FilterFailed          = Code{"FilterFailed", http.StatusUnprocessableEntity, "A filter of this request's pipeline failed."}
	InternalError         = Code{"InternalError", http.StatusInternalServerError, "We encountered an internal error. Please try again."}
	InvalidAccessKeyID    = Code{"InvalidAccessKeyId", http.StatusForbidden, "The AWS Access Key Id you provided does not exist in our records."}
	InvalidArgument       = Code{"InvalidArgument", http.StatusBadRequest, "Invalid Argument"}
	InvalidBucketName     = Code{"InvalidBucketName", http.StatusBadRequest, "The specified bucket is not valid."}
	InvalidDigest         = Code{"InvalidDigest", http.StatusBadRequest, "The Content-MD5 you specified is not valid."}
	InvalidPart           = Code{"InvalidPart", http.StatusBadRequest, "One or more of the specified parts could not be found. The part may not have been uploaded, or the specified entity tag may not match the part's entity tag."}
	InvalidPartOrder      = Code{"InvalidPartOrder", http.StatusBadRequest, "The list of parts was not in ascending order. Parts must be ordered by part number."}
	InvalidRange          = Code{"InvalidRange", http.StatusRequestedRangeNotSatisfiable, "The requested range is not satisfiable"}
	InvalidRequest        = Code{"InvalidRequest", http.StatusBadRequest, "Invalid Request"}
	KeyTooLongError       = Code{"KeyTooLongError", http.StatusBadRequest, "Your key is too long"}
	MalformedXML          = Code{"MalformedXML", http.StatusBadRequest, "The XML you provided was not well-formed or did not validate against our published schema."}
	MetadataTooLarge      = Code{"MetadataTooLarge", http.StatusBadRequest, "Your metadata headers exceed the maximum allowed metadata size."}
	MethodNotAllowed      = Code{"MethodNotAllowed", http.StatusMethodNotAllowed, "The specified method is not allowed against this resource."}
	MissingContentLength  = Code{"MissingContentLength", http.StatusLengthRequired, "You must provide the Content-Length HTTP header."}
	MissingSecurityHeader = Code{"MissingSecurityHeader", http.StatusBadRequest, "Your request is missing a required header."}
	NoSuchBucket          = Code{"NoSuchBucket", http.StatusNotFound, "The specified bucket does not exist."}
	NoSuchKey             = Code{"NoSuchKey", http.StatusNotFound, "The specified key does not exist."}
	NoSuchVersion         = Code{"NoSuchVersion", http.StatusNotFound, "The specified version does not exist."}
	NoSuchUpload          = Code{"NoSuchUpload", http.StatusNotFound, "The specified upload does not exist. The upload ID may be invalid, or the upload may have been aborted or completed."}
	NotImplemented        = Code{"NotImplemented", http.StatusNotImplemented, "A header you provided implies functionality that is not implemented."}
	// QuotaExceeded: the write would take a tenant's or a bucket's usage
	// over a quota (bytes, objects, buckets or open multipart uploads).
	// AWS has no such code; Ceph RGW answers this one with 403, and
	// clients do not retry it. The message names the quota and its limit.
	QuotaExceeded      = Code{"QuotaExceeded", http.StatusForbidden, "The quota of this tenant or bucket would be exceeded."}
	PreconditionFailed = Code{"PreconditionFailed", http.StatusPreconditionFailed, "At least one of the pre-conditions you specified did not hold."}
	// RequestTimeout: the request body stopped arriving (or arrived below
	// the listener's minimum transfer rate), so the connection was cut.
	RequestTimeout            = Code{"RequestTimeout", http.StatusBadRequest, "Your socket connection to the server was not read from or written to within the timeout period. Idle connections will be closed."}
	RequestTimeTooSkewed      = Code{"RequestTimeTooSkewed", http.StatusForbidden, "The difference between the request time and the server's time is too large."}
	SignatureDoesNotMatch     = Code{"SignatureDoesNotMatch", http.StatusForbidden, "The request signature we calculated does not match the signature you provided. Check your key and signing method."}
	SlowDown                  = Code{"SlowDown", http.StatusServiceUnavailable, "Please reduce your request rate."}
	XAmzContentSHA256Mismatch = Code{"XAmzContentSHA256Mismatch", http.StatusBadRequest, "The provided 'x-amz-content-sha256' header does not match what was computed."}
	InvalidChecksum           = Code{"BadDigest", http.StatusBadRequest, "The checksum you specified did not match what we received."}
	MissingRequestBodyError   = Code{"MissingRequestBodyError", http.StatusBadRequest, "Request Body is empty."}
	UnexpectedContent         = Code{"UnexpectedContent", http.StatusBadRequest, "This request does not support content."}
	NotModified               = Code{"NotModified", http.StatusNotModified, "Not Modified"}
	InvalidURI                = Code{"InvalidURI", http.StatusBadRequest, "Couldn't parse the specified URI."}
	InvalidObjectState        = Code{"InvalidObjectState", http.StatusForbidden, "The operation is not valid for the current state of the object."}
	// InsufficientStorage: the disk under the store is full (ENOSPC or a
	// disk quota). S3 has no code for it; 507 is HTTP's, and MinIO
	// answers a full disk the same way (XMinioStorageFull, 507). Nothing
	// of the request was stored, and reads and deletes still work.
	InsufficientStorage = Code{"InsufficientStorage", http.StatusInsufficientStorage, "The storage under this server is full: nothing of the request was stored. Delete objects, or add space."}
)

// Error is one S3 error occurrence: a code plus the resource it concerns.
// Its Err field keeps the underlying cause for logs; it is never sent to
// the client.
type Error struct {
	Code     Code
	Message  string // overrides Code.Message when set
	Resource string
	Bucket   string
	Key      string
	Err      error
	// VersionID names the version a NoSuchVersion concerns, or the
	// delete marker a read found.
	VersionID string
	// DeleteMarker says a read found a delete marker (last modified at
	// LastModified): the answer carries x-amz-delete-marker, as S3's.
	DeleteMarker bool
	LastModified time.Time
	// ArgumentName and ArgumentValue name the request argument an
	// InvalidArgument refuses, as S3 reports them.
	ArgumentName, ArgumentValue string
}

func (e *Error) Error() string {
	msg := e.Message
	if msg == "" {
		msg = e.Code.Message
	}
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code.Name, msg, e.Err)
	}
	return e.Code.Name + ": " + msg
}

func (e *Error) Unwrap() error { return e.Err }

// New returns an Error of the given code.
func New(c Code) *Error { return &Error{Code: c} }

// Newf returns an Error of the given code with a specific message.
func Newf(c Code, format string, args ...any) *Error {
	return &Error{Code: c, Message: fmt.Sprintf(format, args...)}
}

// Wrap returns an Error of the given code that keeps err as its cause.
func Wrap(c Code, err error) *Error { return &Error{Code: c, Err: err} }

// As extracts an *Error from err, or wraps err as InternalError.
func As(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Code: InternalError, Err: err}
}

type xmlError struct {
	XMLName       xml.Name `xml:"Error"`
	Code          string   `xml:"Code"`
	Message       string   `xml:"Message"`
	ArgumentName  string   `xml:"ArgumentName,omitempty"`
	ArgumentValue string   `xml:"ArgumentValue,omitempty"`
	BucketName    string   `xml:"BucketName,omitempty"`
	Key           string   `xml:"Key,omitempty"`
	VersionID     string   `xml:"VersionId,omitempty"`
	Resource      string   `xml:"Resource,omitempty"`
	RequestID     string   `xml:"RequestId"`
	HostID        string   `xml:"HostId"`
}

// Write renders err as S3's XML error document. HEAD requests and 304
// responses get the status without a body, as S3 does.
func Write(w http.ResponseWriter, r *http.Request, err error, requestID string) {
	e := As(err)
	msg := e.Message
	if msg == "" {
		msg = e.Code.Message
	}
	h := w.Header()
	h.Set("x-amz-request-id", requestID)
	if e.DeleteMarker {
		h.Set("x-amz-delete-marker", "true")
		h.Set("x-amz-version-id", e.VersionID)
		if !e.LastModified.IsZero() {
			h.Set("Last-Modified", e.LastModified.UTC().Format(http.TimeFormat))
		}
	}
	if e.Code.Status == http.StatusServiceUnavailable && h.Get("Retry-After") == "" {
		h.Set("Retry-After", "1") // 503s here are transient by definition
	}
	if r.Method == http.MethodHead || e.Code.Status == http.StatusNotModified {
		w.WriteHeader(e.Code.Status)
		return
	}
	body, _ := xml.Marshal(xmlError{
		Code: e.Code.Name, Message: msg, ArgumentName: e.ArgumentName, ArgumentValue: e.ArgumentValue,
		BucketName: e.Bucket, Key: e.Key, VersionID: e.VersionID,
		Resource: e.Resource, RequestID: requestID, HostID: requestID,
	})
	h.Set("Content-Type", "application/xml")
	h.Set("Content-Length", fmt.Sprint(len(xml.Header)+len(body)))
	w.WriteHeader(e.Code.Status)
	_, _ = w.Write([]byte(xml.Header))
	_, _ = w.Write(body)
}
