package s3api

import (
	"net"
	"net/http"
	"net/url"
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

// operation names one S3 API call; it is what the access log and, later,
// the classifier see.
type operation string

const (
	opListBuckets             operation = "ListBuckets"
	opCreateBucket            operation = "CreateBucket"
	opDeleteBucket            operation = "DeleteBucket"
	opHeadBucket              operation = "HeadBucket"
	opGetBucketLocation       operation = "GetBucketLocation"
	opGetBucketVersioning     operation = "GetBucketVersioning"
	opGetBucketACL            operation = "GetBucketAcl"
	opListObjectsV1           operation = "ListObjects"
	opListObjectsV2           operation = "ListObjectsV2"
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
	opUnsupported             operation = ""
)

// unsupportedBucketSubresources are bucket sub-resources Facet does not
// implement yet; requesting them gets NotImplemented rather than being
// mistaken for a listing or a bucket creation.
var unsupportedSubresources = []string{
	"policy", "lifecycle", "cors", "tagging", "website", "logging",
	"notification", "replication", "encryption", "object-lock", "requestPayment",
	"accelerate", "analytics", "inventory", "metrics", "ownershipControls",
	"publicAccessBlock", "intelligent-tiering", "versions", "retention",
	"legal-hold", "torrent", "restore", "select", "attributes",
}

// resolveOperation maps method, target and query to the S3 operation.
func resolveOperation(r *http.Request, t target, q url.Values) operation {
	has := func(k string) bool { _, ok := q[k]; return ok }
	if t.bucket == "" {
		if r.Method == http.MethodGet {
			return opListBuckets
		}
		return opUnsupported
	}
	if !t.hasKey {
		switch {
		case has("acl") && r.Method == http.MethodGet:
			return opGetBucketACL
		case has("versioning") && r.Method == http.MethodGet:
			return opGetBucketVersioning
		}
		for _, s := range unsupportedSubresources {
			if has(s) {
				return opUnsupported
			}
		}
		switch r.Method {
		case http.MethodPut:
			if has("acl") || has("versioning") {
				return opUnsupported
			}
			return opCreateBucket
		case http.MethodDelete:
			return opDeleteBucket
		case http.MethodHead:
			return opHeadBucket
		case http.MethodPost:
			if has("delete") {
				return opDeleteObjects
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
		return opUnsupported
	}
	if has("acl") && r.Method == http.MethodGet {
		return opGetObjectACL
	}
	if has("select") && r.Method == http.MethodPost {
		return opSelectObjectContent
	}
	for _, s := range unsupportedSubresources {
		if has(s) {
			return opUnsupported
		}
	}
	switch r.Method {
	case http.MethodPut:
		if has("acl") {
			return opUnsupported
		}
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
	return opUnsupported
}
