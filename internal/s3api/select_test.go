package s3api

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/facet-sds/facet/internal/s3err"
	"github.com/facet-sds/facet/internal/s3select"
)

func TestSelectRoute(t *testing.T) {
	cases := []struct {
		method, url string
		want        operation
	}{
		{http.MethodPost, "/b/k.csv?select&select-type=2", opSelectObjectContent},
		{http.MethodPost, "/b/k.csv?select", opSelectObjectContent},
		{http.MethodGet, "/b/k.csv?select", opUnknown},
		{http.MethodPost, "/b?select", opUnknown},
	}
	for _, c := range cases {
		r := httptest.NewRequest(c.method, c.url, nil)
		tg, err := parseTarget(r.Host, r.URL.EscapedPath(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := resolveOperation(r, tg, r.URL.Query()); got != c.want {
			t.Errorf("%s %s = %q, want %q", c.method, c.url, got, c.want)
		}
	}
}

func TestSelectErrorsAreS3Errors(t *testing.T) {
	_, err := s3select.ParseRequest(strings.NewReader("<SelectObjectContentRequest><Expression>SELECT</Expression>" +
		"<InputSerialization><CSV/></InputSerialization><OutputSerialization><CSV/></OutputSerialization></SelectObjectContentRequest>"))
	if err != nil {
		t.Fatal(err)
	}
	req, _ := s3select.ParseRequest(strings.NewReader("<SelectObjectContentRequest><Expression>SELECT * FROM S3Object WHERE</Expression>" +
		"<InputSerialization><CSV/></InputSerialization><OutputSerialization><CSV/></OutputSerialization></SelectObjectContentRequest>"))
	_, err = s3select.Native{}.Prepare(req)
	e := s3err.As(selectErr(err))
	if e.Code.Name != "ParseExpectedExpression" || e.Code.Status != http.StatusBadRequest || !strings.Contains(e.Code.Message, "line 1, column") {
		t.Fatalf("got %+v", e)
	}
	if _, err := s3select.ParseRequest(strings.NewReader("<nope")); s3select.AsError(err).Code != s3select.CodeMalformedXML {
		t.Fatalf("got %v", err)
	}
}
