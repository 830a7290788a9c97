package bench

import (
	"cmp"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Trace format (CSV, one request per line; bench/traces/README.md
// describes it for users):
//
//	# comment lines start with '#'; an optional header line names the columns
//	timestamp,tenant,op,bucket,key,size
//	0.000,t1,PUT,t1-docs,docs/2016/000001.pdf,812345
//	0.512,t1,GET,t1-docs,docs/2016/000001.pdf,812345
//
//	timestamp  seconds (decimal) since any origin; replay starts at the first
//	tenant     matched by name to a scenario tenant (endpoint, credentials)
//	op         GET, PUT, HEAD, DELETE or LIST
//	bucket     the bucket (empty: the tenant's bucket)
//	key        the object key (for LIST, the prefix)
//	size       bytes: written by PUT; for other ops the object's size, used
//	           to create objects the trace reads before it writes them
//
// Lines need not be sorted; replay sorts them by timestamp.

// TraceRecord is one line of a trace.
type TraceRecord struct {
	T      float64 // seconds since the trace's first record
	Tenant string
	Op     Op
	Bucket string
	Key    string
	Size   int64
}

// TraceSpec is a replay: which trace, how fast, how parallel.
type TraceSpec struct {
	File string `json:"file" yaml:"file"`
	// Speed scales time: 2 replays twice as fast, 0.5 at half speed.
	Speed float64 `json:"speed,omitempty" yaml:"speed,omitempty"`
	// Concurrency caps each tenant's requests in flight (default 16). When
	// every slot is busy, replay waits: records are never dropped, and
	// lateness is reported.
	Concurrency int `json:"concurrency,omitempty" yaml:"concurrency,omitempty"`
	// Limit replays only the first Limit records (0: all).
	Limit int `json:"limit,omitempty" yaml:"limit,omitempty"`
	// Window replays only records in the first Window of trace time.
	Window Duration `json:"window,omitempty" yaml:"window,omitempty"`
}

func (s *TraceSpec) validate() error {
	if s.File == "" {
		return errors.New("trace: no file")
	}
	if s.Speed == 0 {
		s.Speed = 1
	}
	if s.Concurrency == 0 {
		s.Concurrency = 16
	}
	if s.Speed < 0 || s.Concurrency < 0 || s.Limit < 0 {
		return errors.New("trace: speed, concurrency and limit must be positive")
	}
	return nil
}

func (s *TraceSpec) apply(recs []TraceRecord) []TraceRecord {
	if s.Window > 0 {
		w := s.Window.D().Seconds()
		i := slices.IndexFunc(recs, func(r TraceRecord) bool { return r.T >= w })
		if i >= 0 {
			recs = recs[:i]
		}
	}
	if s.Limit > 0 && len(recs) > s.Limit {
		recs = recs[:s.Limit]
	}
	return recs
}

// LoadTrace reads a trace file.
func LoadTrace(path string) ([]TraceRecord, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	recs, err := ParseTrace(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return recs, nil
}

// ParseTrace reads the CSV trace format, sorts by time and rebases the
// timestamps so that the first record is at 0.
func ParseTrace(r io.Reader) ([]TraceRecord, error) {
	cr := csv.NewReader(r)
	cr.Comment = '#'
	cr.FieldsPerRecord = 6
	cr.TrimLeadingSpace = true
	cr.ReuseRecord = true
	var out []TraceRecord
	for first := true; ; first = false {
		f, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		line, _ := cr.FieldPos(0)
		for i := range f {
			f[i] = strings.TrimSpace(f[i])
		}
		if first && strings.EqualFold(f[0], "timestamp") {
			continue
		}
		t, err := strconv.ParseFloat(f[0], 64)
		if err != nil || math.IsNaN(t) || math.IsInf(t, 0) {
			return nil, fmt.Errorf("line %d: timestamp %q: want seconds", line, f[0])
		}
		op, err := ParseOp(f[2])
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		size := int64(0)
		if f[5] != "" {
			if size, err = strconv.ParseInt(f[5], 10, 64); err != nil || size < 0 {
				return nil, fmt.Errorf("line %d: size %q: want bytes", line, f[5])
			}
		}
		if f[1] == "" {
			return nil, fmt.Errorf("line %d: no tenant", line)
		}
		if f[4] == "" && op != OpList {
			return nil, fmt.Errorf("line %d: %s needs a key", line, op)
		}
		out = append(out, TraceRecord{T: t, Tenant: f[1], Op: op, Bucket: f[3], Key: f[4], Size: size})
	}
	sortByTime(out)
	if len(out) > 0 {
		t0 := out[0].T
		for i := range out {
			out[i].T -= t0
		}
	}
	return out, nil
}

// sortByTime orders records by timestamp, keeping file order for ties.
func sortByTime(recs []TraceRecord) {
	slices.SortStableFunc(recs, func(a, b TraceRecord) int { return cmp.Compare(a.T, b.T) })
}

// WriteTrace writes records in the CSV trace format, with a header.
func WriteTrace(w io.Writer, comment string, recs []TraceRecord) error {
	if comment != "" {
		for _, l := range strings.Split(comment, "\n") {
			if _, err := fmt.Fprintf(w, "# %s\n", l); err != nil {
				return err
			}
		}
	}
	cw := csv.NewWriter(w)
	if err := cw.Write([]string{"timestamp", "tenant", "op", "bucket", "key", "size"}); err != nil {
		return err
	}
	for _, r := range recs {
		if err := cw.Write([]string{strconv.FormatFloat(r.T, 'f', 3, 64), r.Tenant, r.Op.String(), r.Bucket, r.Key, strconv.FormatInt(r.Size, 10)}); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// replayPlan is a trace bound to tenant runs.
type replayPlan struct {
	records []TraceRecord
	spec    *TraceSpec
	byName  map[string]*tenantRun
	span    time.Duration // wall time the replay should take
	late    atomic.Int64  // records started more than 100 ms after their time
	maxLag  atomic.Int64  // ns
}

func planReplay(recs []TraceRecord, runs []*tenantRun, spec *TraceSpec) (*replayPlan, error) {
	p := &replayPlan{records: recs, spec: spec, byName: map[string]*tenantRun{}}
	for _, tr := range runs {
		p.byName[tr.t.Name] = tr
	}
	for _, r := range recs {
		if _, ok := p.byName[r.Tenant]; !ok {
			return nil, fmt.Errorf("trace tenant %q has no tenant in the scenario (name one with its endpoint and credentials)", r.Tenant)
		}
	}
	if len(recs) > 0 {
		p.span = time.Duration(recs[len(recs)-1].T / spec.Speed * float64(time.Second))
	}
	return p, nil
}

func (p *replayPlan) bucket(r *TraceRecord) string {
	if r.Bucket != "" {
		return r.Bucket
	}
	return p.byName[r.Tenant].t.Bucket
}

// prepare creates the trace's buckets and the objects it reads, heads or
// deletes before writing them, with their recorded sizes.
func (p *replayPlan) prepare(ctx context.Context) error {
	type obj struct{ tenant, bucket, key string }
	buckets := map[[2]string]bool{}
	written := map[obj]bool{}
	var pre []TraceRecord
	for _, r := range p.records {
		b := p.bucket(&r)
		if b == "" {
			return fmt.Errorf("trace: tenant %s: record has no bucket and the tenant none either", r.Tenant)
		}
		buckets[[2]string{r.Tenant, b}] = true
		o := obj{r.Tenant, b, r.Key}
		switch r.Op {
		case OpPut:
			written[o] = true
		case OpGet, OpHead, OpDelete:
			if !written[o] {
				pre = append(pre, TraceRecord{Tenant: r.Tenant, Op: OpPut, Bucket: b, Key: r.Key, Size: r.Size})
			}
			written[o] = r.Op != OpDelete
		}
	}
	for tb := range buckets {
		tr := p.byName[tb[0]]
		if err := tr.client.createBucket(ctx, tb[1]); err != nil {
			return fmt.Errorf("trace: tenant %s: creating bucket %s: %w", tb[0], tb[1], err)
		}
	}
	g := newErrGroup()
	var next atomic.Int64
	for range min(16, len(pre)) {
		buf := make([]byte, 64<<10)
		g.Go(func() error {
			for ctx.Err() == nil {
				i := int(next.Add(1)) - 1
				if i >= len(pre) {
					return nil
				}
				r := &pre[i]
				tr := p.byName[r.Tenant]
				if err := tr.client.put(ctx, r.Bucket, r.Key, tr.src.NewReader(keySeed(tr.seed, r.Key, 0), r.Size), r.Size, buf); err != nil {
					return fmt.Errorf("trace: preparing %s/%s: %w", r.Bucket, r.Key, err)
				}
			}
			return ctx.Err()
		})
	}
	return g.Wait()
}

// keySeed gives each write of each key its own content.
func keySeed(seed uint64, key string, n uint64) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(key))
	return h.Sum64() ^ seed ^ (n * 0x9e3779b97f4a7c15)
}

// run replays: one dispatcher per tenant sends each record at its time
// (scaled) to that tenant's pool of Concurrency workers. Records of one key
// run in the trace's order (a GET after a PUT of the same key waits for
// the PUT), as they happened when the trace was taken; records of
// different keys overlap freely.
func (p *replayPlan) run(ctx context.Context, start time.Time, wg *sync.WaitGroup) {
	per := map[string][]int{}
	for i, r := range p.records {
		per[r.Tenant] = append(per[r.Tenant], i)
	}
	for name, idx := range per {
		tr := p.byName[name]
		work := make(chan traceJob)
		var writes atomic.Uint64
		for range p.spec.Concurrency {
			rec := tr.newRecorder()
			buf := make([]byte, 256<<10)
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := range work {
					if j.after != nil {
						// The record before it of the same key was handed
						// to a worker already, so this wait always ends.
						<-j.after
					}
					p.exec(ctx, start, tr, j.r, rec, buf, writes.Add(1))
					close(j.done)
				}
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(work)
			last := map[string]chan struct{}{}
			for _, i := range idx {
				r := &p.records[i]
				at := time.Duration(r.T / p.spec.Speed * float64(time.Second))
				sleepUntil(ctx, start, at, 0)
				j := traceJob{r: r, after: last[r.Bucket+"/"+r.Key], done: make(chan struct{})}
				last[r.Bucket+"/"+r.Key] = j.done
				select {
				case work <- j:
				case <-ctx.Done():
					return
				}
				lag := time.Since(start) - at
				if lag > 100*time.Millisecond {
					p.late.Add(1)
				}
				for {
					m := p.maxLag.Load()
					if int64(lag) <= m || p.maxLag.CompareAndSwap(m, int64(lag)) {
						break
					}
				}
			}
		}()
	}
}

// traceJob is one record for a worker: it runs once after is closed (the
// previous record of its key is done) and closes done.
type traceJob struct {
	r           *TraceRecord
	after, done chan struct{}
}

func (p *replayPlan) exec(ctx context.Context, start time.Time, tr *tenantRun, r *TraceRecord, rec *recorder, buf []byte, n uint64) {
	b := p.bucket(r)
	var (
		bytes int64
		err   error
	)
	t0 := time.Now()
	switch r.Op {
	case OpPut:
		err = tr.client.put(ctx, b, r.Key, tr.src.NewReader(keySeed(tr.seed, r.Key, n), r.Size), r.Size, buf)
		if err == nil {
			bytes = r.Size
			tr.generated.Add(r.Size)
		}
	case OpGet:
		bytes, err = tr.client.get(ctx, b, r.Key, buf)
	case OpHead:
		err = tr.client.head(ctx, b, r.Key, buf)
	case OpDelete:
		err = tr.client.delete(ctx, b, r.Key, buf)
	case OpList:
		bytes, err = tr.client.list(ctx, b, r.Key, 1000, buf)
	}
	if ctx.Err() != nil {
		return
	}
	rec.add(start, t0, r.Op, bytes, err)
}

// SynthOptions shape a synthetic trace.
type SynthOptions struct {
	// Kind is "idiada" (write-dominated documents, mean 0.91 MB) or
	// "arctur" (read-dominated web objects, mean 0.28 MB), after the
	// traces of seeds/001 §6.
	Kind     string
	Tenants  []string
	Duration time.Duration
	// Rate is each tenant's mean operations per second (Poisson
	// arrivals); 0 takes the kind's default (idiada 2, arctur 8).
	Rate float64
	Seed uint64
}

// Synthesize makes a trace resembling the sources' Idiada or Arctur
// workload. Only the published shape is reproduced (op mix, byte split,
// mean size, popularity skew), not the original requests.
func Synthesize(o SynthOptions) ([]TraceRecord, error) {
	if len(o.Tenants) == 0 {
		o.Tenants = []string{"t1"}
	}
	if o.Duration <= 0 {
		return nil, errors.New("synthesize: duration must be positive")
	}
	var gen func(tenant string, rng *rand.Rand, dur, rate float64) []TraceRecord
	switch o.Kind {
	case "idiada":
		gen = synthIdiada
		if o.Rate == 0 {
			o.Rate = 2
		}
	case "arctur":
		gen = synthArctur
		if o.Rate == 0 {
			o.Rate = 8
		}
	default:
		return nil, fmt.Errorf("synthesize: kind %q: want idiada or arctur", o.Kind)
	}
	var out []TraceRecord
	for i, t := range o.Tenants {
		rng := rand.New(rand.NewPCG(o.Seed, uint64(i)+1))
		out = append(out, gen(t, rng, o.Duration.Seconds(), o.Rate)...)
	}
	sortByTime(out)
	return out, nil
}

// lognormalSize draws a size with the given mean and coefficient of
// variation, clamped.
func lognormalSize(rng *rand.Rand, mean, cv float64, lo, hi int64) int64 {
	sig := math.Sqrt(math.Log1p(cv * cv))
	mu := math.Log(mean) - sig*sig/2
	return min(max(int64(math.Exp(mu+sig*rng.NormFloat64())), lo), hi)
}

func pickWeighted[T any](rng *rand.Rand, items []T, weights []float64) T {
	var total float64
	for _, w := range weights {
		total += w
	}
	x := rng.Float64() * total
	for i, w := range weights {
		if x < w {
			return items[i]
		}
		x -= w
	}
	return items[len(items)-1]
}

// synthIdiada: a document store for car testing and standardisation
// files. 80% of bytes are writes; reads go mostly to recent documents.
// Op mix 70% PUT, 18% GET, 8% HEAD, 4% DELETE; sizes lognormal with mean
// 0.91 MB and a heavy tail (cv 1.5, 1 KB to 50 MB).
func synthIdiada(tenant string, rng *rand.Rand, dur, rate float64) []TraceRecord {
	bucket := tenant + "-idiada"
	exts := []string{"pdf", "docx", "xlsx", "txt", "csv", "zip"}
	extW := []float64{40, 20, 15, 10, 10, 5}
	type doc struct {
		key  string
		size int64
	}
	var docs []doc
	var out []TraceRecord
	ops := []Op{OpPut, OpGet, OpHead, OpDelete}
	opW := []float64{70, 18, 8, 4}
	for t := rng.ExpFloat64() / rate; t < dur; t += rng.ExpFloat64() / rate {
		op := pickWeighted(rng, ops, opW)
		if op != OpPut && len(docs) == 0 {
			op = OpPut
		}
		switch op {
		case OpPut:
			d := doc{
				key:  fmt.Sprintf("docs/%d/%06d.%s", 2014+len(docs)*3/1000%3, len(docs)+1, pickWeighted(rng, exts, extW)),
				size: lognormalSize(rng, 0.91e6, 1.5, 1000, 50e6),
			}
			docs = append(docs, d)
			out = append(out, TraceRecord{T: t, Tenant: tenant, Op: OpPut, Bucket: bucket, Key: d.key, Size: d.size})
		default:
			// Recency: half the reads go to the newest 10% of documents.
			i := rng.IntN(len(docs))
			if rng.IntN(2) == 0 {
				i = len(docs) - 1 - rng.IntN(max(1, len(docs)/10))
			}
			d := docs[i]
			out = append(out, TraceRecord{T: t, Tenant: tenant, Op: op, Bucket: bucket, Key: d.key, Size: d.size})
			if op == OpDelete {
				docs = slices.Delete(docs, i, i+1)
			}
		}
	}
	return out
}

// synthArctur: web pages' objects served from a datacenter. 99.97% of
// bytes are reads, with Zipf popularity over a fixed set of objects; sizes
// lognormal with mean 0.28 MB (cv 2, 200 B to 20 MB).
func synthArctur(tenant string, rng *rand.Rand, dur, rate float64) []TraceRecord {
	bucket := tenant + "-arctur"
	const objects = 2000
	exts := []string{"html", "jpg", "png", "css", "js", "pdf"}
	extW := []float64{30, 35, 15, 8, 10, 2}
	keys := make([]string, objects)
	sizes := make([]int64, objects)
	for i := range keys {
		keys[i] = fmt.Sprintf("www/site%02d/%05d.%s", i%40, i, pickWeighted(rng, exts, extW))
		sizes[i] = lognormalSize(rng, 0.28e6, 2, 200, 20e6)
	}
	// Popularity: the Zipf rank is shuffled over objects, so popular
	// objects are of every size.
	perm := rng.Perm(objects)
	zipf := rand.NewZipf(rng, 1.1, 1, objects-1)
	var out []TraceRecord
	ops := []Op{OpGet, OpHead, OpPut}
	opW := []float64{97.4, 2.5, 0.1}
	for t := rng.ExpFloat64() / rate; t < dur; t += rng.ExpFloat64() / rate {
		i := perm[zipf.Uint64()]
		op := pickWeighted(rng, ops, opW)
		size := sizes[i]
		if op == OpPut {
			// Updates are small page edits.
			size = min(size, 20000)
			sizes[i] = size
		}
		out = append(out, TraceRecord{T: t, Tenant: tenant, Op: op, Bucket: bucket, Key: keys[i], Size: size})
	}
	return out
}
