package s3api

import (
	"net/http"

	"github.com/facet-sds/facet/internal/s3api/sigv4"
)

// claimedAccessKey is the access key id a refused request names (its
// SigV4 credential, header or presigned; never the signature), for the
// observers: "" unless it looks like an id ([A-Za-z0-9_-.]), since it is
// the client's text and goes to logs.
func claimedAccessKey(r *http.Request) string {
	id := sigv4.AccessKeyOf(r)
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return ""
		}
	}
	return id
}
