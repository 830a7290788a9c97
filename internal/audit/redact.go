package audit

import (
	"net/url"
	"sort"
	"strings"
)

// Redacted replaces a secret's value.
const Redacted = "REDACTED"

// RedactQuery returns a query string fit for the audit log: the values of
// signatures, tokens, passwords and secrets are replaced by Redacted, and a
// SigV4 credential keeps its access key id only (the scope after it says
// nothing an attacker needs, but the id is what an investigator does).
// Parameters are sorted by name; a query that does not parse is dropped
// whole, since what it hides cannot be told.
func RedactQuery(raw string) string {
	if raw == "" {
		return ""
	}
	q, err := url.ParseQuery(raw)
	if err != nil {
		return Redacted
	}
	names := make([]string, 0, len(q))
	for k := range q {
		names = append(names, k)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, k := range names {
		for _, v := range q[k] {
			if b.Len() > 0 {
				b.WriteByte('&')
			}
			b.WriteString(url.QueryEscape(k))
			b.WriteByte('=')
			b.WriteString(url.QueryEscape(redactValue(k, v)))
		}
	}
	return b.String()
}

func redactValue(name, v string) string {
	n := strings.ToLower(name)
	switch {
	case n == "x-amz-credential":
		id, _, _ := strings.Cut(v, "/")
		return id
	case n == "awsaccesskeyid": // SigV2 presigned: the id alone
		return v
	case strings.Contains(n, "signature"), strings.Contains(n, "token"), strings.Contains(n, "secret"),
		strings.Contains(n, "password"), strings.Contains(n, "session"), strings.Contains(n, "auth"),
		strings.Contains(n, "key") && n != "key" && n != "prefix":
		return Redacted
	}
	return v
}
