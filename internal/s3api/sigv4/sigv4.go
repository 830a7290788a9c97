// Package sigv4 owns request authentication for the S3 front end: AWS
// Signature Version 4 in the Authorization header and in presigned URLs, and
// the decoding and verification of the request body that the signature
// covers (a signed SHA-256, aws-chunked streams with per-chunk signatures,
// and trailing headers).
//
// A handler calls Verify once per request and then reads the object bytes
// from the returned Body instead of r.Body:
//
//	id, body, err := verifier.Verify(r)
//	if err != nil {
//		s3err.Write(w, r, err, reqID) // err is always *s3err.Error
//		return
//	}
//	// id.Tenant owns the request. body yields the decoded payload; it
//	// returns an *s3err.Error instead of io.EOF when the payload fails
//	// verification, so a backend that aborts on read errors never commits
//	// a forged or truncated object. body.Trailer() holds trailing headers
//	// (x-amz-checksum-*) once body has returned io.EOF.
//
// Bytes handed out by Body before io.EOF are provisional: an aws-chunked
// chunk is verified when its last byte has been read, a signed SHA-256 when
// the whole body has. Nothing may be made visible before io.EOF.
//
// Body enforces the announced length (Body.DecodedLength): a short body ends
// in IncompleteBody, a long one in InvalidRequest. A handler that stores
// Content-Encoding should pass it through StripAWSChunked first.
//
// Errors, all *s3err.Error: AccessDenied (no credentials, unsigned x-amz-*
// headers, an expired or not-yet-valid presigned URL),
// AuthorizationHeaderMalformed / AuthorizationQueryParametersError (a
// malformed header or query), InvalidRequest (SigV2, a missing
// x-amz-content-sha256), InvalidAccessKeyId, RequestTimeTooSkewed,
// SignatureDoesNotMatch; then, while reading, XAmzContentSHA256Mismatch,
// SignatureDoesNotMatch (a chunk or the trailer), IncompleteBody and
// MalformedTrailerError. Error messages and causes never hold secrets,
// signatures or header values; they may name the access key id and headers.
package sigv4

import (
	"context"
	"crypto/hmac"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/facet-sds/facet/internal/s3err"
)

// DefaultMaxSkew is the clock skew S3 tolerates between client and server.
const DefaultMaxSkew = 15 * time.Minute

// maxCachedKeys bounds the derived-signing-key cache. Keys are per (secret,
// day, region), so a few thousand entries cover every active client.
const maxCachedKeys = 4096

// Verifier authenticates S3 requests. Lookup is required; the other fields
// have defaults. A Verifier is safe for concurrent use and must not be
// copied after first use.
type Verifier struct {
	// Lookup resolves an access key id to its tenant and secret. For a key
	// that does not exist it returns an error wrapping s3err.ErrUnknownAccessKey (any other Lookup error is an internal failure, not bad credentials)
	// (InvalidAccessKeyId); any other error becomes InternalError.
	Lookup func(ctx context.Context, accessKey string) (tenant, secret string, err error)
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// MaxSkew is the tolerated clock difference; 0 means DefaultMaxSkew.
	MaxSkew time.Duration
	// Service is the only service a credential scope may name; "" means
	// ServiceS3. A signature is bound to the API it was made for: the S3
	// listener and the admin API use different services, so a request
	// signed for one cannot be replayed to the other.
	Service string

	mu   sync.Mutex
	keys map[keyID][]byte
}

// Identity is who signed a request.
type Identity struct {
	Tenant    string
	AccessKey string
}

// Payload hash values that select how the body is read.
const (
	unsignedPayload          = "UNSIGNED-PAYLOAD"
	streamingSigned          = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
	streamingSignedTrailer   = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER"
	streamingUnsignedTrailer = "STREAMING-UNSIGNED-PAYLOAD-TRAILER"
	emptySHA256              = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

	algorithm     = "AWS4-HMAC-SHA256"
	amzDateFormat = "20060102T150405Z"
	maxExpires    = 7 * 24 * 60 * 60
)

// Verify authenticates r. On success it returns the signer's identity and
// the body to read instead of r.Body (see the package comment). On failure
// the error is an *s3err.Error and the *Body is nil; it reads nothing from
// r.Body, so a client waiting on "Expect: 100-continue" sends no payload.
func (v *Verifier) Verify(r *http.Request) (Identity, *Body, error) {
	req, serr := v.parse(r)
	if serr != nil {
		return Identity{}, nil, serr
	}
	tenant, secret, err := v.Lookup(r.Context(), req.cred.accessKey)
	if err != nil {
		if errors.Is(err, s3err.ErrUnknownAccessKey) {
			return Identity{}, nil, s3err.New(s3err.InvalidAccessKeyID)
		}
		return Identity{}, nil, s3err.Wrap(s3err.InternalError, fmt.Errorf("looking up access key: %w", err))
	}
	key := v.signingKey(secret, req.cred.date, req.cred.region, req.cred.service)
	if !req.signatureMatches(r, key) {
		return Identity{}, nil, &s3err.Error{
			Code: s3err.SignatureDoesNotMatch,
			// For the log only: enough to diagnose a canonicalisation
			// disagreement, with no header values (they may hold tokens).
			Err: fmt.Errorf("access key %s, canonical uri %q, signed headers %q, payload %q",
				req.cred.accessKey, canonicalURI(r), strings.Join(req.signedHeaders, ";"), req.payload),
		}
	}
	body, serr := newBody(r, req, key)
	if serr != nil {
		return Identity{}, nil, serr
	}
	return Identity{Tenant: tenant, AccessKey: req.cred.accessKey}, body, nil
}

// parsedRequest is everything Verify learns from a request before it knows
// the secret.
type parsedRequest struct {
	presigned     bool
	cred          credential
	signedHeaders []string
	signature     string // lower-case hex
	amzDate       string // the timestamp of the string to sign
	payload       string // x-amz-content-sha256, or UNSIGNED-PAYLOAD
}

func (v *Verifier) now() time.Time {
	if v.Now != nil {
		return v.Now()
	}
	return time.Now()
}

func (v *Verifier) maxSkew() time.Duration {
	if v.MaxSkew > 0 {
		return v.MaxSkew
	}
	return DefaultMaxSkew
}

// ServiceS3 is the service of S3 signatures.
const ServiceS3 = "s3"

func (v *Verifier) service() string {
	if v.Service != "" {
		return v.Service
	}
	return ServiceS3
}

// wrongService refuses a credential scope naming another service than
// the verifier's, with code (the header's or the query's).
func (v *Verifier) wrongService(c credential, code s3err.Code) *s3err.Error {
	if want := v.service(); c.service != want {
		return s3err.Newf(code, "The credential scope names service %q; this endpoint accepts only signatures made for %q (a signature is bound to the API it was made for).",
			truncate(c.service, 20), want)
	}
	return nil
}

// parse reads and checks the authentication parameters of r.
func (v *Verifier) parse(r *http.Request) (*parsedRequest, *s3err.Error) {
	authz := r.Header.Get("Authorization")
	query := parseQuery(r.URL.RawQuery)
	presigned := query.has("X-Amz-Algorithm") || query.has("X-Amz-Credential") || query.has("X-Amz-Signature")
	switch {
	case authz != "" && presigned:
		return nil, s3err.Newf(s3err.InvalidArgument, "Only one auth mechanism allowed; only the X-Amz-Algorithm query parameter, Signature query string parameter or the Authorization header should be specified")
	case authz != "":
		return v.parseHeaderAuth(r, authz)
	case presigned:
		return v.parsePresigned(r, query)
	case query.has("Signature") || query.has("AWSAccessKeyId"):
		return nil, unsupportedMechanism()
	default:
		return nil, s3err.New(s3err.AccessDenied)
	}
}

func unsupportedMechanism() *s3err.Error {
	return s3err.Newf(s3err.InvalidRequest, "The authorization mechanism you have provided is not supported. Please use %s.", algorithm)
}

func (v *Verifier) parseHeaderAuth(r *http.Request, authz string) (*parsedRequest, *s3err.Error) {
	a, err := parseAuthorization(authz)
	if err != nil {
		if errors.Is(err, errUnsupportedAlgorithm) {
			return nil, unsupportedMechanism()
		}
		return nil, s3err.Wrap(s3err.AuthorizationHeaderMalformed, err)
	}
	if serr := v.wrongService(a.cred, s3err.AuthorizationHeaderMalformed); serr != nil {
		return nil, serr
	}
	req := &parsedRequest{cred: a.cred, signedHeaders: a.signedHeaders, signature: a.signature}

	var t time.Time
	if d := r.Header.Get("X-Amz-Date"); d != "" {
		t, err = time.Parse(amzDateFormat, d)
	} else if d := r.Header.Get("Date"); d != "" {
		t, err = http.ParseTime(d)
		// An unsigned Date could be refreshed to replay the request
		// forever. (x-amz-date is covered by checkAmzHeadersSigned.)
		if err == nil && !slices.Contains(req.signedHeaders, "date") {
			return nil, s3err.Newf(s3err.AuthorizationHeaderMalformed,
				"The authorization header is malformed; the Date header must be signed when x-amz-date is absent.")
		}
	} else {
		err = errors.New("no date")
	}
	if err != nil {
		return nil, s3err.Newf(s3err.AccessDenied, "AWS authentication requires a valid Date or x-amz-date header")
	}
	t = t.UTC()
	req.amzDate = t.Format(amzDateFormat)
	if req.amzDate[:8] != a.cred.date {
		return nil, s3err.Newf(s3err.AuthorizationHeaderMalformed,
			"The authorization header is malformed; Invalid credential date. Date is not the same as X-Amz-Date.")
	}
	if d := v.now().Sub(t); d > v.maxSkew() || d < -v.maxSkew() {
		return nil, s3err.New(s3err.RequestTimeTooSkewed)
	}

	req.payload = r.Header.Get("X-Amz-Content-Sha256")
	if req.payload == "" {
		return nil, s3err.Newf(s3err.InvalidRequest, "Missing required header for this request: x-amz-content-sha256")
	}
	if serr := checkPayloadMode(req.payload); serr != nil {
		return nil, serr
	}
	if serr := checkAmzHeadersSigned(r, req.signedHeaders); serr != nil {
		return nil, serr
	}
	return req, nil
}

func (v *Verifier) parsePresigned(r *http.Request, q queryParams) (*parsedRequest, *s3err.Error) {
	bad := func(format string, args ...any) *s3err.Error {
		return s3err.Newf(s3err.AuthorizationQueryParametersError, format, args...)
	}
	if alg := q.get("X-Amz-Algorithm"); alg != algorithm {
		if alg == "" {
			return nil, bad("Query-string authentication version 4 requires the X-Amz-Algorithm, X-Amz-Credential, X-Amz-Signature, X-Amz-Date, X-Amz-SignedHeaders, and X-Amz-Expires parameters.")
		}
		return nil, bad("X-Amz-Algorithm only supports \"%s\"", algorithm)
	}
	for _, p := range []string{"X-Amz-Credential", "X-Amz-Signature", "X-Amz-Date", "X-Amz-SignedHeaders", "X-Amz-Expires"} {
		if !q.has(p) {
			return nil, bad("Query-string authentication version 4 requires the X-Amz-Algorithm, X-Amz-Credential, X-Amz-Signature, X-Amz-Date, X-Amz-SignedHeaders, and X-Amz-Expires parameters.")
		}
	}
	cred, err := parseCredential(q.get("X-Amz-Credential"))
	if err != nil {
		return nil, s3err.Wrap(s3err.AuthorizationQueryParametersError, err)
	}
	if serr := v.wrongService(cred, s3err.AuthorizationQueryParametersError); serr != nil {
		return nil, serr
	}
	signed, err := parseSignedHeaders(q.get("X-Amz-SignedHeaders"))
	if err != nil {
		return nil, s3err.Wrap(s3err.AuthorizationQueryParametersError, err)
	}
	sig, err := parseSignature(q.get("X-Amz-Signature"))
	if err != nil {
		return nil, s3err.Wrap(s3err.AuthorizationQueryParametersError, err)
	}
	t, err := time.Parse(amzDateFormat, q.get("X-Amz-Date"))
	if err != nil {
		return nil, bad("X-Amz-Date must be in the ISO8601 Long Format \"yyyyMMdd'T'HHmmss'Z'\"")
	}
	if t.Format("20060102") != cred.date {
		return nil, bad("Invalid credential date. Date is not the same as X-Amz-Date.")
	}
	expires, err := strconv.ParseInt(q.get("X-Amz-Expires"), 10, 64)
	switch {
	case err != nil:
		return nil, bad("X-Amz-Expires should be a number")
	case expires < 1:
		return nil, bad("X-Amz-Expires must be non-negative")
	case expires > maxExpires:
		return nil, bad("X-Amz-Expires must be less than a week (in seconds) that is 604800")
	}
	now := v.now()
	if t.Sub(now) > v.maxSkew() {
		return nil, s3err.Newf(s3err.AccessDenied, "Request is not valid yet")
	}
	if now.After(t.Add(time.Duration(expires) * time.Second)) {
		return nil, s3err.New(s3err.ExpiredToken)
	}

	req := &parsedRequest{
		presigned: true, cred: cred, signedHeaders: signed, signature: sig,
		amzDate: t.UTC().Format(amzDateFormat), payload: unsignedPayload,
	}
	// A presigned URL cannot know the body it will carry, so it signs
	// UNSIGNED-PAYLOAD unless the signer put a hash in the query.
	if p := q.get("X-Amz-Content-Sha256"); p != "" {
		req.payload = p
	}
	if serr := checkPayloadMode(req.payload); serr != nil {
		return nil, serr
	}
	if serr := checkAmzHeadersSigned(r, signed); serr != nil {
		return nil, serr
	}
	return req, nil
}

// checkPayloadMode accepts the x-amz-content-sha256 values Facet can verify.
func checkPayloadMode(p string) *s3err.Error {
	switch p {
	case unsignedPayload, streamingSigned, streamingSignedTrailer, streamingUnsignedTrailer:
		return nil
	case "STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD", "STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD-TRAILER", "STREAMING-AWS4-HMAC-SHA256-EVENTS":
		return s3err.Newf(s3err.NotImplemented, "x-amz-content-sha256 %s is not supported", p)
	}
	if isHex(p, 64) {
		return nil
	}
	return s3err.Newf(s3err.InvalidArgument, "x-amz-content-sha256 must be UNSIGNED-PAYLOAD, STREAMING-UNSIGNED-PAYLOAD-TRAILER, STREAMING-AWS4-HMAC-SHA256-PAYLOAD, STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER or a valid sha256 value.")
}

// checkAmzHeadersSigned rejects x-amz-* headers the signature does not
// cover, as S3 does: otherwise anyone on the path could add metadata, a copy
// source or a storage class to a signed request.
func checkAmzHeadersSigned(r *http.Request, signed []string) *s3err.Error {
	var unsigned []string
	for name := range r.Header {
		lower := strings.ToLower(name)
		if !strings.HasPrefix(lower, "x-amz-") {
			continue
		}
		if !slices.Contains(signed, lower) {
			unsigned = append(unsigned, lower)
		}
	}
	if len(unsigned) == 0 {
		return nil
	}
	slices.Sort(unsigned)
	return s3err.Newf(s3err.AccessDenied, "There were headers present in the request which were not signed: %s", strings.Join(unsigned, ", "))
}

// signatureMatches recomputes the request signature with key and compares it
// in constant time. S3 signs the path exactly as sent; clients that left a
// character unescaped that the SDKs escape still computed their signature
// over the escaped form, so that form is tried second. Both forms decode to
// the same path, so accepting either cannot change the resource signed for.
func (p *parsedRequest) signatureMatches(r *http.Request, key []byte) bool {
	uri := canonicalURI(r)
	if hmac.Equal([]byte(p.sign(r, uri, key)), []byte(p.signature)) {
		return true
	}
	alt := uriEncode(r.URL.Path, false)
	if alt == "" {
		alt = "/"
	}
	return alt != uri && hmac.Equal([]byte(p.sign(r, alt, key)), []byte(p.signature))
}

func (p *parsedRequest) sign(r *http.Request, uri string, key []byte) string {
	cr := canonicalRequest(r, uri, p.signedHeaders, p.presigned, p.payload)
	return hex.EncodeToString(hmacSHA256(key, []byte(stringToSign(p.amzDate, p.cred.scope(), cr))))
}
