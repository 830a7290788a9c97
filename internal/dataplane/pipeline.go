package dataplane

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"

	"github.com/facet-sds/facet/internal/filter"
)

// Step is one filter instance to run at one stage.
type Step struct {
	Stage  filter.Stage
	Filter filter.Filter
	// Policy names what put the step there, for errors and explain.
	Policy string
}

// Pipeline is the filters resolved for one request, in running order:
// gateway-stage steps first, then storage-stage steps.
type Pipeline struct {
	Steps []Step
	// Observer, when set, is told each step's time (see Timed).
	Observer StepObserver
}

// Empty reports whether nothing runs.
func (p Pipeline) Empty() bool { return len(p.Steps) == 0 }

// Put transforms a PUT body: each step's encoder or transformer wraps the
// stream the previous one produced. The returned plan function is valid
// once the returned stream has been read to io.EOF.
func (p Pipeline) Put(ctx context.Context, req *filter.Request, plain io.Reader) (io.Reader, func() (Plan, error), error) {
	// A chain built outside an S3 request (a background task) shares a
	// budget's slot too.
	ctx = filter.Scoped(ctx)
	clock := p.clock(filter.MethodPut)
	stream := clock.reader(-1, plain)
	var finishers []func() (filter.Record, error)
	lastT := lastTransformer(p.Steps)
	var logical *LogicalOutput
	for i, st := range p.Steps {
		if _, ok := st.Filter.(filter.RequestOnly); ok {
			continue
		}
		start := clock.begin()
		switch f := st.Filter.(type) {
		case filter.Encoder:
			out, rec, err := f.Encode(ctx, req, stream)
			if err != nil {
				return nil, nil, fmt.Errorf("filter %s (%s): %w", f.Info().Name, st.Policy, err)
			}
			stream = out
			finishers = append(finishers, rec)
		case filter.Transformer:
			out, err := f.Transform(ctx, req, stream)
			if err != nil {
				return nil, nil, fmt.Errorf("filter %s (%s): %w", f.Info().Name, st.Policy, err)
			}
			stream = out
		default:
			return nil, nil, fmt.Errorf("filter %s cannot run on PUT", st.Filter.Info().Name)
		}
		clock.built(i, start)
		stream = clock.reader(i, stream)
		if i == lastT {
			logical = &LogicalOutput{h: md5.New()}
			stream = &logicalTap{r: stream, l: logical}
		}
	}
	clock.done()
	plan := func() (Plan, error) {
		var pl Plan
		if logical != nil {
			logical.MD5 = hex.EncodeToString(logical.h.Sum(nil))
			pl.Logical = logical
		}
		for _, fin := range finishers {
			rec, err := fin()
			if err != nil {
				return Plan{}, err
			}
			pl.Records = append(pl.Records, rec)
		}
		return pl, nil
	}
	return stream, plan, nil
}

// FilterLookup finds a filter by name: a *filter.Registry, or the policy
// service's registry in force, which includes filters registered at run
// time.
type FilterLookup interface {
	Lookup(name string) (*filter.Info, bool)
}

// DecoderLookup is a FilterLookup that also holds ready decoders,
// provisioned when its registry loaded (the policy service): Open uses
// them instead of building an instance per request.
type DecoderLookup interface {
	FilterLookup
	Decoder(name string) (*filter.Info, filter.Decoder, bool)
}

// LogicalOutput is what a PUT pipeline's transformers made of the body:
// the object as clients will read it back, whose size and MD5 replace the
// client's (a redaction filter shortens the text it masks).
type LogicalOutput struct {
	Size int64
	MD5  string
	h    hash.Hash
}

func (l *LogicalOutput) Write(p []byte) (int, error) {
	l.Size += int64(len(p))
	return l.h.Write(p)
}

// logicalTap feeds what passes through it to a LogicalOutput. It keeps
// its source's WriteTo, which the top of a chain must not lose.
type logicalTap struct {
	r io.Reader
	l *LogicalOutput
}

func (t *logicalTap) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	_, _ = t.l.Write(p[:n])
	return n, err
}

func (t *logicalTap) WriteTo(w io.Writer) (int64, error) {
	if wt, ok := t.r.(io.WriterTo); ok {
		return wt.WriteTo(io.MultiWriter(w, t.l))
	}
	return io.Copy(w, struct{ io.Reader }{t})
}

// lastTransformer is the index of the last one-way transformer that runs
// before any reversible encoder (whose output the reverse plan undoes),
// or -1 when none does.
func lastTransformer(steps []Step) int {
	last := -1
	for i, st := range steps {
		switch st.Filter.(type) {
		case filter.Encoder:
			return last
		case filter.Transformer:
			last = i
		}
	}
	return last
}

// ErrFilterUnavailable marks an object this node cannot read back: the
// filter that wrote it (or that version of it) is not loaded here, because
// it was deleted (--force) or this node has not loaded it yet.
var ErrFilterUnavailable = errors.New("the filter that wrote it is not loaded on this server")

// Decoders builds filter instances able to undo recorded plans.
type Decoders struct {
	Registry FilterLookup
	Env      filter.Env
	// Observer, when set, is told each decoder's time.
	Observer StepObserver
}

// Open composes the decoders of plan over the stored stream, last applied
// first, and returns the logical view.
func (d Decoders) Open(ctx context.Context, req *filter.Request, plan Plan, stored filter.Source) (filter.Source, error) {
	clock := d.clock(plan)
	src := clock.source(-1, stored)
	for i := len(plan.Records) - 1; i >= 0; i-- {
		rec := plan.Records[i]
		k, start := len(plan.Records)-1-i, clock.begin()
		_, dec, err := d.decoder(rec)
		if err != nil {
			return nil, err
		}
		if src, err = dec.Decode(ctx, req, rec, src); err != nil {
			return nil, fmt.Errorf("undo %s: %w", rec.Filter, err)
		}
		clock.built(k, start)
		src = clock.source(k, src)
	}
	clock.done()
	return src, nil
}

// decoder returns the filter that can undo rec: a ready one when the
// registry holds them, else one built now with default parameters.
func (d Decoders) decoder(rec filter.Record) (*filter.Info, filter.Decoder, error) {
	var (
		info  *filter.Info
		dec   filter.Decoder
		ready bool
	)
	if dl, ok := d.Registry.(DecoderLookup); ok {
		info, dec, ready = dl.Decoder(rec.Filter)
	}
	if !ready {
		var ok bool
		if info, ok = d.Registry.Lookup(rec.Filter); !ok {
			return nil, nil, fmt.Errorf("object was written through filter %q: %w", rec.Filter, ErrFilterUnavailable)
		}
	}
	if rec.Version > info.Version {
		return nil, nil, fmt.Errorf("object was written by %s version %d, this server has version %d: %w", rec.Filter, rec.Version, info.Version, ErrFilterUnavailable)
	}
	if ready {
		return info, dec, nil
	}
	inst, err := info.New(nil, d.Env) // defaults apply
	if err != nil {
		return nil, nil, fmt.Errorf("instantiate %s: %w", rec.Filter, err)
	}
	dec, ok := inst.(filter.Decoder)
	if !ok {
		return nil, nil, fmt.Errorf("filter %s recorded a reverse plan but cannot decode", rec.Filter)
	}
	return info, dec, nil
}
