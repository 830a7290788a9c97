package sigv4

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

var errUnsupportedAlgorithm = errors.New("unsupported authorization algorithm")

// credential is the parsed Credential value
// AKID/YYYYMMDD/region/service/aws4_request.
type credential struct {
	accessKey, date, region, service string
}

func (c credential) scope() string {
	return c.date + "/" + c.region + "/" + c.service + "/aws4_request"
}

// authorization is the parsed Authorization header.
type authorization struct {
	cred          credential
	signedHeaders []string
	signature     string
}

// parseAuthorization parses
// "AWS4-HMAC-SHA256 Credential=..., SignedHeaders=..., Signature=...".
// Components may come in any order, separated by commas with optional
// spaces (minio-go sends none). Error messages never echo the signature.
func parseAuthorization(h string) (authorization, error) {
	var a authorization
	alg, rest, ok := strings.Cut(strings.TrimSpace(h), " ")
	if alg != algorithm {
		return a, errUnsupportedAlgorithm
	}
	if !ok {
		return a, errors.New("missing Credential, SignedHeaders and Signature")
	}
	var haveCred, haveSigned, haveSig bool
	for part := range strings.SplitSeq(rest, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, val, ok := strings.Cut(part, "=")
		if !ok {
			return a, fmt.Errorf("component %q is not key=value", truncate(part, 40))
		}
		var err error
		switch k {
		case "Credential":
			if haveCred {
				return a, errors.New("duplicate Credential")
			}
			haveCred = true
			a.cred, err = parseCredential(val)
		case "SignedHeaders":
			if haveSigned {
				return a, errors.New("duplicate SignedHeaders")
			}
			haveSigned = true
			a.signedHeaders, err = parseSignedHeaders(val)
		case "Signature":
			if haveSig {
				return a, errors.New("duplicate Signature")
			}
			haveSig = true
			a.signature, err = parseSignature(val)
		default:
			return a, fmt.Errorf("unknown component %q", truncate(k, 40))
		}
		if err != nil {
			return a, err
		}
	}
	switch {
	case !haveCred:
		return a, errors.New("missing Credential")
	case !haveSigned:
		return a, errors.New("missing SignedHeaders")
	case !haveSig:
		return a, errors.New("missing Signature")
	}
	return a, nil
}

// parseCredential parses AKID/YYYYMMDD/region/service/aws4_request.
func parseCredential(s string) (credential, error) {
	parts := strings.Split(s, "/")
	if len(parts) != 5 {
		return credential{}, errors.New(`the Credential is mal-formed; expecting "<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/aws4_request"`)
	}
	c := credential{accessKey: parts[0], date: parts[1], region: parts[2], service: parts[3]}
	if c.accessKey == "" {
		return c, errors.New("the Credential has an empty access key")
	}
	if _, err := time.Parse("20060102", c.date); err != nil || len(c.date) != 8 {
		return c, fmt.Errorf("invalid credential date %q", truncate(c.date, 20))
	}
	if c.region == "" {
		return c, errors.New("the Credential has an empty region")
	}
	if c.service == "" {
		// Which service is the verifier's to check (Verifier.Service).
		return c, errors.New("the Credential has an empty service")
	}
	if parts[4] != "aws4_request" {
		return c, fmt.Errorf("incorrect terminal %q; expecting \"aws4_request\"", truncate(parts[4], 20))
	}
	return c, nil
}

// parseSignedHeaders parses "host;x-amz-date". The list is used in the order
// given: a client builds its canonical request from the same list.
func parseSignedHeaders(s string) ([]string, error) {
	if s == "" {
		return nil, errors.New("empty SignedHeaders")
	}
	names := strings.Split(s, ";")
	seen := make(map[string]bool, len(names))
	for _, n := range names {
		if n == "" || n != strings.ToLower(n) || strings.ContainsAny(n, " \t:") {
			return nil, fmt.Errorf("invalid signed header name %q", truncate(n, 60))
		}
		if seen[n] {
			return nil, fmt.Errorf("duplicate signed header %q", truncate(n, 60))
		}
		seen[n] = true
	}
	if !seen["host"] {
		return nil, errors.New("SignedHeaders must include host")
	}
	return names, nil
}

func parseSignature(s string) (string, error) {
	if !isHex(s, 64) {
		return "", errors.New("the Signature is not 64 hexadecimal characters")
	}
	return strings.ToLower(s), nil
}

func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// queryParam is one decoded name=value pair of a query string.
type queryParam struct{ key, value string }

// queryParams keeps every pair in order. url.ParseQuery is not used because
// it drops pairs containing ';' and stops at bad escapes, and a signature
// must be computed over everything the client sent.
type queryParams []queryParam

func parseQuery(raw string) queryParams {
	var q queryParams
	for piece := range strings.SplitSeq(raw, "&") {
		if piece == "" {
			continue
		}
		k, v, _ := strings.Cut(piece, "=")
		q = append(q, queryParam{unescapeQuery(k), unescapeQuery(v)})
	}
	return q
}

// unescapeQuery decodes a query component, '+' meaning space as in forms;
// a component with a bad escape is kept as sent.
func unescapeQuery(s string) string {
	if u, err := url.QueryUnescape(s); err == nil {
		return u
	}
	return s
}

func (q queryParams) has(k string) bool {
	for _, p := range q {
		if p.key == k {
			return true
		}
	}
	return false
}

func (q queryParams) get(k string) string {
	for _, p := range q {
		if p.key == k {
			return p.value
		}
	}
	return ""
}

// AccessKeyOf is the access key r claims to be signed with (its
// Authorization header's or presigned URL's credential), unverified, or ""
// when it names none: what failed-authentication limits count by.
func AccessKeyOf(r *http.Request) string {
	cred := r.URL.Query().Get("X-Amz-Credential")
	if h := r.Header.Get("Authorization"); h != "" {
		_, rest, _ := strings.Cut(h, "Credential=")
		cred, _, _ = strings.Cut(rest, ",")
	}
	ak, _, _ := strings.Cut(strings.TrimSpace(cred), "/")
	if len(ak) > 128 {
		ak = ak[:128] // a key id is 20 characters; bound what a client sends
	}
	return ak
}
