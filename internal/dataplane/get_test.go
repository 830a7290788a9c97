package dataplane

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/facet-sds/facet/internal/filter"
	"github.com/facet-sds/facet/internal/filter/builtin"
)

// upper is a one-way GET transformer; suffix marks which ran in which order.
type upper struct {
	info   *filter.Info
	suffix string
	closed *int
}

func (u *upper) Info() *filter.Info { return u.info }

func (u *upper) Transform(_ context.Context, _ *filter.Request, in io.Reader) (io.Reader, error) {
	b, err := io.ReadAll(in)
	if err != nil {
		return nil, err
	}
	return &closeCounter{Reader: bytes.NewReader(append(bytes.ToUpper(b), u.suffix...)), n: u.closed}, nil
}

type closeCounter struct {
	io.Reader
	n *int
}

func (c *closeCounter) Close() error { *c.n++; return nil }

type reqOnly struct{ upper }

func (reqOnly) RequestOnly() {}

func TestGetTransformsRunOneWayFiltersStorageFirst(t *testing.T) {
	closed := 0
	mk := func(name, suffix string, rev bool) *upper {
		return &upper{info: &filter.Info{Name: name, Reversible: rev}, suffix: suffix, closed: &closed}
	}
	noop, _ := builtin.NewRegistry().Lookup("noop")
	nf, err := noop.New(filter.Params{}, filter.Env{})
	if err != nil {
		t.Fatal(err)
	}
	p := Pipeline{Steps: []Step{
		{Stage: filter.StageGateway, Filter: mk("gw", "+gw", false), Policy: "p1"},
		{Stage: filter.StageGateway, Filter: nf, Policy: "p2"},                                      // reversible: its plan undoes it
		{Stage: filter.StageGateway, Filter: &reqOnly{*mk("cache", "+cache", false)}, Policy: "p3"}, // request-only
		{Stage: filter.StageGateway, Filter: mk("rev", "+rev", true), Policy: "p4"},                 // declared reversible
		{Stage: filter.StageStorage, Filter: mk("st", "+st", false), Policy: "p5"},
	}}
	g := p.GetTransforms()
	if got := strings.Join(g.Names(), ","); got != "st,gw" {
		t.Fatalf("GET transforms %s, want st,gw", got)
	}
	rc, err := g.Get(context.Background(), &filter.Request{Method: filter.MethodGet}, strings.NewReader("abc"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(rc)
	if err != nil || string(out) != "ABC+ST+gw" {
		t.Fatalf("got %q, %v", out, err)
	}
	if err := rc.Close(); err != nil || closed != 2 {
		t.Fatalf("close: %v, %d streams closed, want 2", err, closed)
	}
	e1 := g.TransformedETag("abc123")
	if e1 == "abc123" || len(e1) != 32 || e1 != g.TransformedETag("abc123") {
		t.Fatalf("derived ETag %q", e1)
	}
	if e1 == g.TransformedETag("abc124") {
		t.Fatal("the derived ETag does not follow the stored one")
	}
	g.Steps[0].Policy = "p9"
	if e1 == g.TransformedETag("abc123") {
		t.Fatal("the derived ETag does not follow the policies in force")
	}
	if !(Pipeline{Steps: p.Steps[1:4]}).GetTransforms().Empty() {
		t.Fatal("reversible and request-only filters are not GET transforms")
	}
}

// GET transforms are timed as PUT steps are, under method GET: each step
// its own time and output bytes, storage stage first.
func TestGetTransformStepTimes(t *testing.T) {
	log := newStepLog()
	mk := func(name string, perByte int, writeTo bool) filter.Filter {
		return &costFilter{info: &filter.Info{Name: name, Version: 1}, clock: log.fakeClock, perByte: perByte, writeTo: writeTo}
	}
	p := Pipeline{Steps: []Step{
		{Stage: filter.StageGateway, Filter: mk("b", 5, true)},
		{Stage: filter.StageStorage, Filter: mk("a", 3, false)},
	}}.GetTransforms()
	p.Observer = log
	const size = 10_000
	body := &costReader{r: bytes.NewReader(make([]byte, size)), c: log.fakeClock, perByte: 7}
	out, err := p.Get(context.Background(), &filter.Request{Method: filter.MethodGet}, body)
	if err != nil {
		t.Fatal(err)
	}
	dst := &costWriter{c: log.fakeClock, perByte: 11}
	if n, err := io.Copy(dst, out); err != nil || n != 4*size {
		t.Fatalf("copied %d, %v", n, err)
	}
	checkMeter(t, log, "GET/storage/a", 2*size*3, 2*size)
	checkMeter(t, log, "GET/gateway/b", 4*size*5, 4*size)
}
