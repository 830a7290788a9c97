package server

import (
	"net/http"

	"github.com/facet-sds/facet/internal/s3api"
	"github.com/facet-sds/facet/internal/s3api/sigv4"
)

// sigv4Auth adapts the SigV4 verifier to the S3 front end's Authenticator.
type sigv4Auth struct{ v *sigv4.Verifier }

func newAuthenticator(creds s3api.Credentials) s3api.Authenticator {
	return &sigv4Auth{v: &sigv4.Verifier{
		Lookup: creds.LookupAccessKey,
	}}
}

func (a *sigv4Auth) Authenticate(r *http.Request) (string, string, s3api.RequestBody, error) {
	id, body, err := a.v.Verify(r)
	if err != nil {
		return "", "", nil, err
	}
	return id.Tenant, id.AccessKey, body, nil
}
