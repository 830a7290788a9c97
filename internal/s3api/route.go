package s3api

import (
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// target is where a request points: a bucket and key taken from the Host
// header (virtual-host style) or the path (path style).
type target struct {
	bucket string
	key    string
	// hasKey distinguishes "/bucket/" (no key) from "/bucket/k".
	hasKey bool
	// slash is set when a "/" follows the bucket: "/bucket/" path style,
	// and every virtual-host request (the bucket is the Host's).
	slash bool
}

// classKey is "bucket/key" as context rules' prefixes see it: "bucket/"
// or "bucket" for a bucket operation, as the request wrote it.
func (t target) classKey() string {
	if !t.slash {
		return t.bucket
	}
	return t.bucket + "/" + t.key
}

// parseTarget reads bucket and key from r without cleaning the path: S3 keys
// may legally contain "//", "." and ".." segments, which http.ServeMux would
// rewrite. domains are the base domains under which "<bucket>.<domain>"
// selects a bucket by host name.
func parseTarget(host, escapedPath string, domains []string) (target, error) {
	var t target
	if b, ok := bucketFromHost(host, domains); ok {
		t.bucket, t.slash = b, true
		p := strings.TrimPrefix(escapedPath, "/")
		if p == "" {
			return t, nil
		}
		key, err := url.PathUnescape(p)
		if err != nil {
			return t, err
		}
		t.key, t.hasKey = key, true
		return t, nil
	}
	p := strings.TrimPrefix(escapedPath, "/")
	if p == "" {
		return t, nil
	}
	rawBucket, rawKey, hasSlash := strings.Cut(p, "/")
	bucket, err := url.PathUnescape(rawBucket)
	if err != nil {
		return t, err
	}
	t.bucket, t.slash = bucket, hasSlash
	if !hasSlash || rawKey == "" {
		return t, nil
	}
	key, err := url.PathUnescape(rawKey)
	if err != nil {
		return t, err
	}
	t.key, t.hasKey = key, true
	return t, nil
}

// bucketFromHost returns the bucket of a virtual-host style Host header.
func bucketFromHost(host string, domains []string) (string, bool) {
	h := host
	if hh, _, err := net.SplitHostPort(host); err == nil {
		h = hh
	}
	h = strings.ToLower(strings.TrimSuffix(h, "."))
	if net.ParseIP(h) != nil {
		return "", false
	}
	for _, d := range domains {
		d = strings.ToLower(d)
		if strings.HasSuffix(h, "."+d) {
			b := strings.TrimSuffix(h, "."+d)
			if b != "" && dnsLabels(b) {
				return b, true
			}
		}
	}
	return "", false
}

// dnsLabels reports whether s can be the bucket part of a host name: only
// then is a request virtual-host style.
func dnsLabels(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

// operation names one S3 API call, as AWS names it; it is what the access
// log, the metrics' op label and the classifier see. Operations Facet does
// not implement are named too (PutBucketWebsite), so that a 501 says which
// call it refused; what matches no S3 call at all is opUnknown.
type operation string

const (
	opListBuckets             operation = "ListBuckets"
	opCreateBucket            operation = "CreateBucket"
	opDeleteBucket            operation = "DeleteBucket"
	opHeadBucket              operation = "HeadBucket"
	opGetBucketLocation       operation = "GetBucketLocation"
	opGetBucketVersioning     operation = "GetBucketVersioning"
	opPutBucketVersioning     operation = "PutBucketVersioning"
	opGetBucketACL            operation = "GetBucketAcl"
	opListObjectsV1           operation = "ListObjects"
	opListObjectsV2           operation = "ListObjectsV2"
	opListObjectVersions      operation = "ListObjectVersions"
	opListMultipartUploads    operation = "ListMultipartUploads"
	opDeleteObjects           operation = "DeleteObjects"
	opPutObject               operation = "PutObject"
	opCopyObject              operation = "CopyObject"
	opGetObject               operation = "GetObject"
	opHeadObject              operation = "HeadObject"
	opDeleteObject            operation = "DeleteObject"
	opGetObjectACL            operation = "GetObjectAcl"
	opCreateMultipartUpload   operation = "CreateMultipartUpload"
	opUploadPart              operation = "UploadPart"
	opUploadPartCopy          operation = "UploadPartCopy"
	opCompleteMultipartUpload operation = "CompleteMultipartUpload"
	opAbortMultipartUpload    operation = "AbortMultipartUpload"
	opListParts               operation = "ListParts"
	// opUnknown is a method and resource that no S3 operation has.
	opUnknown operation = "Unknown"
)

// implemented are the operations Facet serves; every other operation
// resolveOperation names is answered 501 NotImplemented.
var implemented = map[operation]bool{
	opListBuckets: true, opCreateBucket: true, opDeleteBucket: true, opHeadBucket: true,
	opGetBucketLocation: true, opGetBucketVersioning: true, opPutBucketVersioning: true, opGetBucketACL: true,
	opListObjectsV1: true, opListObjectsV2: true, opListObjectVersions: true, opListMultipartUploads: true, opDeleteObjects: true,
	opPutObject: true, opCopyObject: true, opGetObject: true, opHeadObject: true, opDeleteObject: true,
	opGetObjectACL: true, opCreateMultipartUpload: true, opUploadPart: true, opUploadPartCopy: true,
	opCompleteMultipartUpload: true, opAbortMultipartUpload: true, opListParts: true,
	opSelectObjectContent: true,
}

// implemented reports whether Facet serves op.
func (op operation) implemented() bool { return implemented[op] }

// subresource is a query parameter that selects a configuration of a
// bucket or an object, with the S3 operation each method on it is ("" where
// S3 has none).
type subresource struct {
	name                   string
	get, put, delete, post operation
}

// bucketSubresources are the bucket sub-resources, most of which Facet
// does not implement: requesting them gets NotImplemented naming the
// operation rather than being mistaken for a listing or a bucket creation.
// (GET ?versions is served from here; GET ?acl, ?versioning and ?location
// are served too, see resolveOperation.)
var bucketSubresources = []subresource{
	{"policy", "GetBucketPolicy", "PutBucketPolicy", "DeleteBucketPolicy", ""},
	{"policyStatus", "GetBucketPolicyStatus", "", "", ""},
	{"lifecycle", "GetBucketLifecycleConfiguration", "PutBucketLifecycleConfiguration", "DeleteBucketLifecycle", ""},
	{"cors", "GetBucketCors", "PutBucketCors", "DeleteBucketCors", ""},
	{"tagging", "GetBucketTagging", "PutBucketTagging", "DeleteBucketTagging", ""},
	{"website", "GetBucketWebsite", "PutBucketWebsite", "DeleteBucketWebsite", ""},
	{"logging", "GetBucketLogging", "PutBucketLogging", "", ""},
	{"notification", "GetBucketNotificationConfiguration", "PutBucketNotificationConfiguration", "", ""},
	{"replication", "GetBucketReplication", "PutBucketReplication", "DeleteBucketReplication", ""},
	{"encryption", "GetBucketEncryption", "PutBucketEncryption", "DeleteBucketEncryption", ""},
	{"object-lock", "GetObjectLockConfiguration", "PutObjectLockConfiguration", "", ""},
	{"requestPayment", "GetBucketRequestPayment", "PutBucketRequestPayment", "", ""},
	{"accelerate", "GetBucketAccelerateConfiguration", "PutBucketAccelerateConfiguration", "", ""},
	{"analytics", "GetBucketAnalyticsConfiguration", "PutBucketAnalyticsConfiguration", "DeleteBucketAnalyticsConfiguration", ""},
	{"inventory", "GetBucketInventoryConfiguration", "PutBucketInventoryConfiguration", "DeleteBucketInventoryConfiguration", ""},
	{"metrics", "GetBucketMetricsConfiguration", "PutBucketMetricsConfiguration", "DeleteBucketMetricsConfiguration", ""},
	{"ownershipControls", "GetBucketOwnershipControls", "PutBucketOwnershipControls", "DeleteBucketOwnershipControls", ""},
	{"publicAccessBlock", "GetPublicAccessBlock", "PutPublicAccessBlock", "DeletePublicAccessBlock", ""},
	{"intelligent-tiering", "GetBucketIntelligentTieringConfiguration", "PutBucketIntelligentTieringConfiguration", "DeleteBucketIntelligentTieringConfiguration", ""},
	{"versions", opListObjectVersions, "", "", ""},
	{"acl", "", "PutBucketAcl", "", ""},
	{"versioning", "", opPutBucketVersioning, "", ""},
	// Object sub-resources, which S3 has no bucket operation for.
	{"retention", "", "", "", ""}, {"legal-hold", "", "", "", ""}, {"torrent", "", "", "", ""},
	{"restore", "", "", "", ""}, {"select", "", "", "", ""}, {"attributes", "", "", "", ""},
}

// objectSubresources are the object sub-resources Facet does not
// implement (GET ?acl and POST ?select are served).
var objectSubresources = []subresource{
	{"tagging", "GetObjectTagging", "PutObjectTagging", "DeleteObjectTagging", ""},
	{"retention", "GetObjectRetention", "PutObjectRetention", "", ""},
	{"legal-hold", "GetObjectLegalHold", "PutObjectLegalHold", "", ""},
	{"torrent", "GetObjectTorrent", "", "", ""},
	{"restore", "", "", "", "RestoreObject"},
	{"attributes", "GetObjectAttributes", "", "", ""},
	{"acl", "", "PutObjectAcl", "", ""},
	{"select", "", "", "", ""},
}

// bucketOnly are the bucket sub-resources no object operation has: on an
// object they are refused, not served as the object.
var bucketOnly = func() []subresource {
	var out []subresource
	for _, b := range bucketSubresources {
		if !slices.ContainsFunc(objectSubresources, func(o subresource) bool { return o.name == b.name }) {
			out = append(out, subresource{name: b.name})
		}
	}
	return out
}()

// subresourceOp returns the operation a request on one of subs is, if it
// names one of them: opUnknown when S3 has no such method on it.
func subresourceOp(method string, q url.Values, subs []subresource) (operation, bool) {
	for _, s := range subs {
		if _, ok := q[s.name]; !ok {
			continue
		}
		var op operation
		switch method {
		case http.MethodGet, http.MethodHead:
			op = s.get
		case http.MethodPut:
			op = s.put
		case http.MethodDelete:
			op = s.delete
		case http.MethodPost:
			op = s.post
		}
		if op == "" {
			op = opUnknown
		}
		return op, true
	}
	return "", false
}

// resolveOperation maps method, target and query to the S3 operation.
func resolveOperation(r *http.Request, t target, q url.Values) operation {
	has := func(k string) bool { _, ok := q[k]; return ok }
	if t.bucket == "" {
		if r.Method == http.MethodGet {
			return opListBuckets
		}
		return opUnknown
	}
	if !t.hasKey {
		switch {
		case has("acl") && r.Method == http.MethodGet:
			return opGetBucketACL
		case has("versioning") && r.Method == http.MethodGet:
			return opGetBucketVersioning
		}
		if op, ok := subresourceOp(r.Method, q, bucketSubresources); ok {
			return op
		}
		switch r.Method {
		case http.MethodPut:
			return opCreateBucket
		case http.MethodDelete:
			return opDeleteBucket
		case http.MethodHead:
			return opHeadBucket
		case http.MethodPost:
			if has("delete") {
				return opDeleteObjects
			}
			if len(q) == 0 {
				// A browser's form upload (POST Object).
				return "PostObject"
			}
		case http.MethodGet:
			switch {
			case has("location"):
				return opGetBucketLocation
			case has("uploads"):
				return opListMultipartUploads
			case q.Get("list-type") == "2":
				return opListObjectsV2
			default:
				return opListObjectsV1
			}
		}
		return opUnknown
	}
	if has("acl") && r.Method == http.MethodGet {
		return opGetObjectACL
	}
	if has("select") && r.Method == http.MethodPost {
		return opSelectObjectContent
	}
	if op, ok := subresourceOp(r.Method, q, objectSubresources); ok {
		return op
	}
	if op, ok := subresourceOp(r.Method, q, bucketOnly); ok {
		return op
	}
	switch r.Method {
	case http.MethodPut:
		copySrc := r.Header.Get("x-amz-copy-source") != ""
		if has("uploadId") || has("partNumber") {
			if copySrc {
				return opUploadPartCopy
			}
			return opUploadPart
		}
		if copySrc {
			return opCopyObject
		}
		return opPutObject
	case http.MethodGet:
		if has("uploadId") {
			return opListParts
		}
		return opGetObject
	case http.MethodHead:
		return opHeadObject
	case http.MethodDelete:
		if has("uploadId") {
			return opAbortMultipartUpload
		}
		return opDeleteObject
	case http.MethodPost:
		if has("uploads") {
			return opCreateMultipartUpload
		}
		if has("uploadId") {
			return opCompleteMultipartUpload
		}
	}
	return opUnknown
}
