package s3api

import (
	"net/http"
	"strings"
)

// maxClaimedKey bounds the access key id taken from a refused request:
// it is the client's text, going to logs.
const maxClaimedKey = 128

// claimedAccessKey is the access key id a request names, whether or not
// it authenticated: SigV4's Credential (header or X-Amz-Credential), or
// SigV2's "AWS id:signature" and AWSAccessKeyId. Only the id is taken,
// never the signature; anything but [A-Za-z0-9_-.] makes it "".
func claimedAccessKey(r *http.Request) string {
	var id string
	if a := r.Header.Get("Authorization"); a != "" {
		if _, cred, ok := strings.Cut(a, "Credential="); ok {
			id, _, _ = strings.Cut(cred, "/")
		} else if v2, ok := strings.CutPrefix(a, "AWS "); ok {
			id, _, _ = strings.Cut(v2, ":")
		}
	} else if q := r.URL.Query(); q.Has("X-Amz-Credential") {
		id, _, _ = strings.Cut(q.Get("X-Amz-Credential"), "/")
	} else {
		id = q.Get("AWSAccessKeyId")
	}
	if len(id) > maxClaimedKey {
		return ""
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return ""
		}
	}
	return id
}
