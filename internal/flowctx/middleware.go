package flowctx

import (
	"crypto/rand"
	"net"
	"net/http"
	"strings"

	"github.com/facet-sds/facet/internal/s3err"
)

// Middleware reads each S3 request's x-facet-context before the S3 front
// end sees it: a malformed header is answered 400 InvalidArgument with
// what is wrong (and changes nothing); a good one, or none, travels in the
// request's context (From) to admission, where the tenant is known and the
// request is classified. domains are the virtual-host base domains, to tell
// the bucket from the Host.
func Middleware(next http.Handler, domains []string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info := &Request{UserAgent: r.UserAgent(), BucketKey: bucketKey(r, domains)}
		h := r.Header
		info.Meta = func(name string) string { return h.Get("X-Amz-Meta-" + name) }
		if vs, ok := r.Header[Header]; ok {
			c, err := Parse(strings.Join(vs, ";"))
			if err != nil {
				s3err.Write(w, r, &s3err.Error{Code: s3err.InvalidArgument, Message: err.Error() + " (header " + Header + ")", Err: err}, rand.Text()[:16])
				return
			}
			info.Context, info.Present = c, true
		}
		next.ServeHTTP(w, r.WithContext(With(r.Context(), info)))
	})
}

// bucketKey is "bucket/key" of a path-style or virtual-host request, as
// the rules' prefixes see it. Routing proper stays the front end's.
func bucketKey(r *http.Request, domains []string) string {
	p := strings.TrimPrefix(r.URL.Path, "/")
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	for _, d := range domains {
		if b, ok := strings.CutSuffix(host, "."+d); ok && b != "" {
			return b + "/" + p
		}
	}
	return p
}
