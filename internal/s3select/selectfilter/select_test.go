package selectfilter

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/facet-sds/facet/internal/filter"
)

func newSelect(t *testing.T, p filter.Params) *Select {
	t.Helper()
	f, err := Info().New(p, filter.Env{})
	if err != nil {
		t.Fatal(err)
	}
	return f.(*Select)
}

func transform(t *testing.T, f *Select, in string) (string, error) {
	t.Helper()
	r, err := f.Transform(context.Background(), &filter.Request{Method: filter.MethodGet}, strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(r)
	return string(b), err
}

const logCSV = "ts,user_id,status\n1,u1,200\n2,u2,500\n3,u1,500\n"

func TestSelectColumns(t *testing.T) {
	f := newSelect(t, filter.Params{"columns": "user_id"})
	if f.Query() != "SELECT s.user_id FROM S3Object s" {
		t.Fatalf("query %q", f.Query())
	}
	got, err := transform(t, f, logCSV)
	if err != nil || got != "u1\nu2\nu1\n" {
		t.Fatalf("got %q, %v", got, err)
	}
}

func TestSelectWhereAndSQL(t *testing.T) {
	got, err := transform(t, newSelect(t, filter.Params{"columns": "ts, user_id", "where": "s.status = '500'"}), logCSV)
	if err != nil || got != "2,u2\n3,u1\n" {
		t.Fatalf("got %q, %v", got, err)
	}
	got, err = transform(t, newSelect(t, filter.Params{"sql": "SELECT COUNT(*) FROM S3Object s WHERE s.user_id = 'u1'"}), logCSV)
	if err != nil || got != "2\n" {
		t.Fatalf("got %q, %v", got, err)
	}
	got, err = transform(t, newSelect(t, filter.Params{"where": "s.n > 1", "format": "json", "output": "json"}), "{\"n\":1}\n{\"n\":2}\n")
	if err != nil || got != "{\"n\":2}\n" {
		t.Fatalf("got %q, %v", got, err)
	}
}

func TestSelectRefusesBadParams(t *testing.T) {
	for _, p := range []filter.Params{
		{"sql": "SELECT * FROM S3Object", "columns": "a"},
		{"where": "s.a = "},
		{"sql": "DELETE FROM x"},
		{"format": "parquet", "columns": "a"},
	} {
		if _, err := Info().New(p, filter.Env{}); err == nil {
			t.Errorf("%v: accepted", p)
		}
	}
}

func TestSelectMalformedInputFailsTheStream(t *testing.T) {
	_, err := transform(t, newSelect(t, filter.Params{"columns": "a"}), "a,b\n\"open,1\n")
	if err == nil || !strings.Contains(err.Error(), "CSVParsingError") {
		t.Fatalf("err %v", err)
	}
}

func TestSelectStopsWhenTheReaderCloses(t *testing.T) {
	f := newSelect(t, filter.Params{"columns": "a"})
	big := "a\n" + strings.Repeat("xxxxxxxx\n", 1<<17)
	r, err := f.Transform(context.Background(), &filter.Request{}, strings.NewReader(big))
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 10)
	if _, err := io.ReadFull(r, buf); err != nil {
		t.Fatal(err)
	}
	r.(io.Closer).Close() // the goroutine's next write fails and it ends
}
