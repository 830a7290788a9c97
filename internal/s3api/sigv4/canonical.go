package sigv4

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// canonicalURI is the path exactly as the client sent it. S3, unlike other
// AWS services, neither normalises "//" or ".." nor encodes the path twice.
func canonicalURI(r *http.Request) string {
	if p := r.URL.EscapedPath(); p != "" {
		return p
	}
	return "/"
}

// uriEncode percent-encodes everything outside RFC 3986's unreserved set
// with upper-case hex, as SigV4 specifies; '/' is kept unless encodeSlash.
func uriEncode(s string, encodeSlash bool) string {
	const hexDigits = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' ||
			c == '-' || c == '_' || c == '.' || c == '~' || (c == '/' && !encodeSlash) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&15])
	}
	return b.String()
}

// canonicalQuery encodes every parameter (but a presigned request's own
// signature) and sorts the encoded pairs, as the spec says: sorting happens
// after encoding.
func canonicalQuery(q queryParams, presigned bool) string {
	pairs := make([]queryParam, 0, len(q))
	for _, p := range q {
		if presigned && p.key == "X-Amz-Signature" {
			continue
		}
		pairs = append(pairs, queryParam{uriEncode(p.key, true), uriEncode(p.value, true)})
	}
	slices.SortFunc(pairs, func(a, b queryParam) int {
		if c := strings.Compare(a.key, b.key); c != 0 {
			return c
		}
		return strings.Compare(a.value, b.value)
	})
	var b strings.Builder
	for i, p := range pairs {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(p.key)
		b.WriteByte('=')
		b.WriteString(p.value)
	}
	return b.String()
}

// headerValues returns the values of a signed header as the client saw
// them. net/http moves some headers out of r.Header; they are put back.
func headerValues(r *http.Request, name string) []string {
	switch name {
	case "host":
		if r.Host != "" {
			return []string{r.Host}
		}
		return []string{r.URL.Host}
	case "content-length":
		if v := r.Header.Values("Content-Length"); len(v) > 0 {
			return v
		}
		if r.ContentLength >= 0 {
			return []string{strconv.FormatInt(r.ContentLength, 10)}
		}
	case "transfer-encoding":
		if v := r.Header.Values("Transfer-Encoding"); len(v) > 0 {
			return v
		}
		if len(r.TransferEncoding) > 0 {
			return []string{strings.Join(r.TransferEncoding, ",")}
		}
	}
	return r.Header.Values(name)
}

// canonicalHeaderValue trims a value and collapses runs of spaces.
func canonicalHeaderValue(v string) string {
	v = strings.TrimSpace(v)
	if !strings.Contains(v, "  ") {
		return v
	}
	var b strings.Builder
	space := false
	for i := 0; i < len(v); i++ {
		if v[i] == ' ' {
			if space {
				continue
			}
			space = true
		} else {
			space = false
		}
		b.WriteByte(v[i])
	}
	return b.String()
}

func canonicalRequest(r *http.Request, uri string, signed []string, presigned bool, payload string) string {
	var b strings.Builder
	b.WriteString(r.Method)
	b.WriteByte('\n')
	b.WriteString(uri)
	b.WriteByte('\n')
	b.WriteString(canonicalQuery(parseQuery(r.URL.RawQuery), presigned))
	b.WriteByte('\n')
	for _, name := range signed {
		b.WriteString(name)
		b.WriteByte(':')
		for i, v := range headerValues(r, name) {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(canonicalHeaderValue(v))
		}
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	b.WriteString(strings.Join(signed, ";"))
	b.WriteByte('\n')
	b.WriteString(payload)
	return b.String()
}

func stringToSign(amzDate, scope, canonical string) string {
	sum := sha256.Sum256([]byte(canonical))
	return algorithm + "\n" + amzDate + "\n" + scope + "\n" + hex.EncodeToString(sum[:])
}

func hmacSHA256(key, data []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(data)
	return m.Sum(nil)
}

// keyID identifies a derived signing key. The secret is part of it so that
// a rotated secret never meets a stale key.
type keyID struct{ secret, date, region, service string }

// signingKey returns HMAC chain("AWS4"+secret, date, region, service,
// "aws4_request"), cached: deriving it costs four HMACs per request
// otherwise.
func (v *Verifier) signingKey(secret, date, region, service string) []byte {
	id := keyID{secret, date, region, service}
	v.mu.Lock()
	k, ok := v.keys[id]
	v.mu.Unlock()
	if ok {
		return k
	}
	k = deriveKey(secret, date, region, service)
	v.mu.Lock()
	if v.keys == nil {
		v.keys = make(map[keyID][]byte)
	}
	if len(v.keys) >= maxCachedKeys {
		// Evict an arbitrary entry; map iteration order is random enough
		// for a cache whose working set is far below its bound.
		for old := range v.keys {
			delete(v.keys, old)
			break
		}
	}
	v.keys[id] = k
	v.mu.Unlock()
	return k
}

func deriveKey(secret, date, region, service string) []byte {
	k := hmacSHA256([]byte("AWS4"+secret), []byte(date))
	k = hmacSHA256(k, []byte(region))
	k = hmacSHA256(k, []byte(service))
	return hmacSHA256(k, []byte("aws4_request"))
}
