package server

import (
	"fmt"
	"net/http"
	"time"

	"github.com/facet-sds/facet/internal/authfail"
	"github.com/facet-sds/facet/internal/s3api"
	"github.com/facet-sds/facet/internal/s3api/sigv4"
	"github.com/facet-sds/facet/internal/s3err"
)

// sigv4Auth adapts the SigV4 verifier to the S3 front end's Authenticator,
// under failed-authentication limits: per client address and access key
// (a guesser of one key's secret does not lock out the other keys, even
// from the same address), and per client address ten times looser (a
// guesser of keys).
type sigv4Auth struct {
	v             *sigv4.Verifier
	perKey, perIP *authfail.Limiter
}

func newAuthenticator(creds s3api.Credentials) s3api.Authenticator {
	return &sigv4Auth{
		v:      &sigv4.Verifier{Lookup: creds.LookupAccessKey},
		perKey: authfail.New(authfail.Config{}),
		perIP:  authfail.New(authfail.Config{Failures: 10 * authfail.DefaultFailures}),
	}
}

func (a *sigv4Auth) Authenticate(r *http.Request) (string, string, s3api.RequestBody, error) {
	ip := authfail.ClientAddr(r)
	key := ip + " " + sigv4.AccessKeyOf(r)
	if ok, wait := a.perKey.Allowed(key); !ok {
		return "", "", nil, slowDown(wait)
	}
	if ok, wait := a.perIP.Allowed(ip); !ok {
		return "", "", nil, slowDown(wait)
	}
	id, body, err := a.v.Verify(r)
	if err != nil {
		if authfail.Counts(s3err.As(err).Code.Name) {
			a.perKey.Failed(key)
			a.perIP.Failed(ip)
		}
		return "", "", nil, err
	}
	return id.Tenant, id.AccessKey, body, nil
}

func slowDown(wait time.Duration) error {
	return &s3err.Error{Code: s3err.SlowDown, Message: "Too many failed authentications from this address; please retry later.",
		Err: fmt.Errorf("failed-authentication limit: retry in %v", wait.Round(time.Second))}
}
