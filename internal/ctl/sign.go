package ctl

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/facet-sds/facet/internal/ui"
)

// A tenant runs `facet ctl` with its own access key instead of the admin
// token (--access-key/--secret-key or FACET_ACCESS_KEY/FACET_SECRET_KEY):
// each call is then signed with AWS Signature Version 4, as S3 requests
// are but for the admin API's own service (ui.SignedService: a signature
// made for S3 is refused there), and the server lets it reach only what
// the tenant scope allows (its own tenant, keys, buckets, usage, policies,
// metrics and recycle bin: internal/ui's scope.go).

// Environment variables of a tenant's credentials.
const (
	EnvAccessKey = "FACET_ACCESS_KEY"
	EnvSecretKey = "FACET_SECRET_KEY"
)

// signRegion is the region signed into the credential scope; the control
// API accepts any.
const signRegion = "us-east-1"

// tenantKeys sign requests as a tenant.
type tenantKeys struct{ accessKey, secretKey string }

// sign signs req, its payload hash included. The API's bodies are small
// and replayable (http.NewRequest gives GetBody for the readers ctl uses).
func (k *tenantKeys) sign(req *http.Request) error {
	h := sha256.New()
	if req.Body != nil && req.Body != http.NoBody {
		if req.GetBody == nil {
			return fmt.Errorf("sign %s %s: the body cannot be read twice", req.Method, req.URL.Path)
		}
		b, err := req.GetBody()
		if err != nil {
			return fmt.Errorf("sign: %w", err)
		}
		_, err = io.Copy(h, b)
		b.Close()
		if err != nil {
			return fmt.Errorf("sign: %w", err)
		}
	}
	sum := hex.EncodeToString(h.Sum(nil))
	req.Header.Set("X-Amz-Content-Sha256", sum)
	creds := aws.Credentials{AccessKeyID: k.accessKey, SecretAccessKey: k.secretKey}
	if err := v4.NewSigner().SignHTTP(req.Context(), creds, req, sum, ui.SignedService, signRegion, time.Now()); err != nil {
		return fmt.Errorf("sign: %w", err)
	}
	return nil
}
