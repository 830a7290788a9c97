package audit

import (
	"net/url"
	"strings"
	"testing"
)

// FuzzRedactQuery: any query string comes out parseable (or Redacted
// whole), with every signature, token and secret value replaced.
func FuzzRedactQuery(f *testing.F) {
	f.Add("X-Amz-Credential=FK%2F1%2Fr%2Fs3%2Faws4_request&X-Amz-Signature=ab")
	f.Add("Signature=x&AWSAccessKeyId=FK&token=t")
	f.Add("a=%zz&b")
	f.Fuzz(func(t *testing.T, in string) {
		out := RedactQuery(in)
		if out == Redacted || out == "" {
			return
		}
		q, err := url.ParseQuery(out)
		if err != nil {
			t.Fatalf("RedactQuery(%q) = %q does not parse: %v", in, out, err)
		}
		for k, vs := range q {
			n := strings.ToLower(k)
			if strings.Contains(n, "signature") || strings.Contains(n, "token") || strings.Contains(n, "secret") {
				for _, v := range vs {
					if v != Redacted {
						t.Fatalf("RedactQuery(%q) keeps %s=%q", in, k, v)
					}
				}
			}
		}
	})
}
