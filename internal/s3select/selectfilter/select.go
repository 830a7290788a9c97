// Package selectfilter owns the select filter: the glue that makes the S3
// Select engine (internal/s3select) a GET-side filter of the policy
// pipeline. It lives beside the engine so that only what lists the
// built-in filters links s3select and parquet-go.
package selectfilter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/facet-sds/facet/internal/filter"
	"github.com/facet-sds/facet/internal/s3select"
)

// The select filter is the sources' SQL push-down for clients that only
// do plain GETs (seeds/000 §9.4.1, tenant T2): a policy such as
// `FOR BUCKET logs DO SET select WITH columns=user_id` makes every GET of
// the bucket return only the chosen columns (and rows) of its CSV or
// JSON-lines objects, computed at the storage stage over the logical
// stream, so only the selected bytes leave the storage side.
const (
	selectName    = "select"
	selectVersion = 1
)

// Select is a select filter instance: its query is compiled once.
type Select struct {
	info     *filter.Info
	query    string
	prepared s3select.Prepared
}

var _ filter.Transformer = (*Select)(nil)

func Info() *filter.Info {
	in := &filter.Info{
		Name:    selectName,
		Version: selectVersion,
		Kind:    "native",
		Methods: []filter.Method{filter.MethodGet},
		Stages:  []filter.Stage{filter.StageStorage, filter.StageGateway},
		Doc: "SQL push-down on plain GETs: returns only the chosen columns (columns=) and rows (where=) of CSV or " +
			"JSON-lines objects, or the result of a whole S3 Select query (sql=), as CSV (or JSON with output=json).",
		Params: []filter.ParamSpec{
			{Name: "columns", Type: filter.TypeString, Doc: "columns to keep, separated by commas or spaces (default all: with no parameter the filter passes records through)"},
			{Name: "where", Type: filter.TypeString, Doc: "an S3 Select condition on s, e.g. \"s.status = '500'\""},
			{Name: "sql", Type: filter.TypeString, Doc: "a whole S3 Select query (instead of columns= and where=)"},
			{Name: "format", Type: filter.TypeEnum, Default: "csv", Enum: []string{"csv", "json"},
				Doc: "the objects' format: csv, or json (one document per line)"},
			{Name: "header", Type: filter.TypeEnum, Default: "use", Enum: []string{"use", "ignore", "none"},
				Doc: "CSV FileHeaderInfo: use names columns from the first line"},
			{Name: "output", Type: filter.TypeEnum, Default: "csv", Enum: []string{"csv", "json"}, Doc: "the format GETs return"},
		},
	}
	in.Config = func() filter.Provisioner { return &selectConfig{info: in} }
	return in
}

// selectConfig is the select filter's parameters, decoded.
type selectConfig struct {
	Columns string `param:"columns"`
	Where   string `param:"where"`
	SQL     string `param:"sql"`
	Format  string `param:"format"`
	Header  string `param:"header"`
	Output  string `param:"output"`

	info *filter.Info
}

var (
	_ filter.Validator   = (*selectConfig)(nil)
	_ filter.Provisioner = (*selectConfig)(nil)
)

// Validate compiles the query, so that a policy whose SQL does not parse
// is refused when it is checked rather than on every GET.
func (c *selectConfig) Validate() error {
	_, _, err := c.prepare()
	return err
}

func (c *selectConfig) Provision(filter.Env) (filter.Filter, error) {
	q, prepared, err := c.prepare()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", selectName, err)
	}
	return &Select{info: c.info, query: q, prepared: prepared}, nil
}

func (c *selectConfig) prepare() (string, s3select.Prepared, error) {
	q, err := c.query()
	if err != nil {
		return "", nil, err
	}
	req := &s3select.Request{Expression: q}
	if c.Format == "json" {
		req.Input.JSON = &s3select.JSONInput{Type: "LINES"}
	} else {
		req.Input.CSV = &s3select.CSVInput{FileHeaderInfo: strings.ToUpper(c.Header)}
	}
	if c.Output == "json" {
		req.Output.JSON = &s3select.JSONOutput{}
	} else {
		req.Output.CSV = &s3select.CSVOutput{}
	}
	prepared, err := s3select.Native{Workers: 1}.Prepare(req) // a GET body is one stream
	if err != nil {
		param := "where"
		switch {
		case strings.TrimSpace(c.SQL) != "":
			param = "sql"
		case strings.TrimSpace(c.Where) == "":
			param = "columns"
		}
		return "", nil, &filter.ParamError{Param: param, Msg: err.Error()}
	}
	return q, prepared, nil
}

// query builds the S3 Select query the parameters stand for.
func (c *selectConfig) query() (string, error) {
	if q := strings.TrimSpace(c.SQL); q != "" {
		if c.Columns != "" || c.Where != "" {
			return "", filter.Invalid("sql", "sql= replaces columns= and where=: give one or the other")
		}
		return q, nil
	}
	cols := strings.FieldsFunc(c.Columns, func(r rune) bool { return r == ',' || r == ' ' })
	proj := "*"
	if len(cols) > 0 {
		for i, col := range cols {
			cols[i] = "s." + quoteIdent(col)
		}
		proj = strings.Join(cols, ", ")
	}
	q := "SELECT " + proj + " FROM S3Object s"
	if w := strings.TrimSpace(c.Where); w != "" {
		q += " WHERE " + w
	}
	return q, nil
}

// quoteIdent writes a column name as an identifier: bare when it is one
// (case-insensitive, as S3 Select matches), else double-quoted.
func quoteIdent(c string) string {
	plain := c != "" && !(c[0] >= '0' && c[0] <= '9')
	for i := 0; i < len(c) && plain; i++ {
		ch := c[i]
		plain = ch == '_' || ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9'
	}
	if plain {
		return c
	}
	return `"` + strings.ReplaceAll(c, `"`, `""`) + `"`
}

func (f *Select) Info() *filter.Info { return f.info }

// Query is the S3 Select query the instance runs; the S3 front end
// recognises the filter by it (a GET it rewrites has no known length).
func (f *Select) Query() string { return f.query }

// Transform runs the query over in as it streams and returns its result.
// A failure mid-stream (a malformed record) ends the returned stream with
// the error.
func (f *Select) Transform(ctx context.Context, _ *filter.Request, in io.Reader) (io.Reader, error) {
	pr, pw := io.Pipe()
	go func() {
		_, err := f.prepared.Run(ctx, &streamInput{r: in}, pipeSink{pw})
		pw.CloseWithError(err)
	}()
	return pr, nil
}

// streamInput presents a one-pass stream as an Input: CSV and JSON lines
// read it once from the start.
type streamInput struct {
	r    io.Reader
	used bool
}

func (s *streamInput) Size() int64 { return math.MaxInt64 }

func (s *streamInput) Open(_ context.Context, off, _ int64) (io.ReadCloser, error) {
	if off != 0 || s.used {
		return nil, errors.New("select filter: the stream can be read once, from its start")
	}
	s.used = true
	return io.NopCloser(s.r), nil
}

// pipeSink writes records to the GET response stream.
type pipeSink struct{ w *io.PipeWriter }

func (p pipeSink) Records(b []byte) error { _, err := p.w.Write(b); return err }
func (pipeSink) Progress(s3select.Stats) error {
	return nil
}
func (pipeSink) Cont() error { return nil }
