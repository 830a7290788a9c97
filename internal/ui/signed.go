package ui

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"github.com/facet-sds/facet/internal/admin"
	"github.com/facet-sds/facet/internal/authfail"
	"github.com/facet-sds/facet/internal/obs"
	"github.com/facet-sds/facet/internal/s3api/sigv4"
	"github.com/facet-sds/facet/internal/s3err"
)

// Tenants call the control API themselves, without the dashboard, by
// signing their requests with one of their access keys the way they sign
// S3 requests (AWS Signature Version 4, any region) but for the service
// SignedService, not "s3": a signature is bound to the API it was made
// for, so an S3 request seen on the wire cannot be replayed here, nor a
// signed control API call to S3. `facet ctl --access-key` signs so, and so
// can any SigV4 signer (botocore's SigV4Auth, aws-sdk-go-v2's v4.Signer).
// Such a request goes through the very scope a tenant's dashboard session
// goes through (scope.go): there is one list of what a tenant may do,
// pinned to its own name, whatever the way in.

// signedRequest reports whether r carries SigV4 credentials, in its
// Authorization header or as a presigned URL.
func signedRequest(r *http.Request) bool {
	if strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-") {
		return true
	}
	q := r.URL.Query()
	return q.Has("X-Amz-Algorithm") || q.Has("X-Amz-Credential") || q.Has("X-Amz-Signature")
}

// SignedService is the service a tenant's signed control API call names
// in its credential scope.
const SignedService = "facet-admin"

func newVerifier(store Store) *sigv4.Verifier {
	// A closure, not the method value: a dashboard built without a store
	// (tests, a signed-in admin only) must not dereference it until a
	// signed request arrives.
	return &sigv4.Verifier{Service: SignedService, Lookup: func(ctx context.Context, accessKey string) (string, string, error) {
		return store.LookupAccessKey(ctx, accessKey)
	}}
}

// serveSigned answers a control API request signed with a tenant's
// access key: verified (the key must exist now, so a revoked key stops
// working at once), then scoped to the key's tenant. The path may use
// either of the API's prefixes.
func (u *UI) serveSigned(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	// Failures count per client address and access key, so one key's
	// guesser does not lock out the other keys' calls.
	source := authfail.ClientAddr(r) + " " + sigv4.AccessKeyOf(r)
	if ok, wait := u.signed.Allowed(source); !ok {
		w.Header().Set("Retry-After", strconv.Itoa(int(wait.Seconds())+1))
		u.deny(w, r, http.StatusTooManyRequests, "SlowDown", "too many failed signed calls; try again later", admin.Caller{AccessKey: sigv4.AccessKeyOf(r)})
		return
	}
	id, body, err := u.verifier.Verify(r)
	if err != nil {
		e := s3err.As(err)
		if authfail.Counts(e.Code.Name) {
			u.signed.Failed(source)
		}
		msg := e.Message
		if msg == "" {
			msg = e.Code.Message
		}
		if obs.ClassOf(e.Code.Status, e.Code.Name) == obs.ClassServer {
			u.log.Error("signed control API request: verification failed", "err", err, "remote", authfail.ClientAddr(r))
		} else {
			// The cause names the key and headers, never a secret or a
			// signature (package sigv4); the answer gives the code only.
			u.log.Info("signed control API request refused", "code", e.Code.Name, "cause", err, "remote", authfail.ClientAddr(r))
		}
		u.deny(w, r, e.Code.Status, e.Code.Name, msg, admin.Caller{AccessKey: sigv4.AccessKeyOf(r)})
		return
	}
	path := r.URL.Path
	if rest, ok := strings.CutPrefix(path, "/api/v1/"); ok {
		path = "/v1/" + rest
	}
	u.proxyTenant(w, r, admin.Caller{Tenant: id.Tenant, AccessKey: id.AccessKey}, path, body)
}
