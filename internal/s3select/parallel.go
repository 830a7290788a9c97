package s3select

import (
	"context"
	"runtime"
	"sync"
)

// parallelChunk is the share of an object one worker scans. Workers run
// ScanRange sub-queries, whose record-boundary rules make their results
// add up to exactly the whole; results are sent in object order.
const parallelChunk = 8 << 20

func (n Native) workers() int {
	if n.Workers > 0 {
		return n.Workers
	}
	return runtime.GOMAXPROCS(0)
}

// parallel reports whether a run can be cut into chunks: uncompressed
// CSV or JSON lines whose record boundaries are findable, or Parquet
// (a chunk reads the row groups that start in it), a query that neither
// aggregates nor stops at a LIMIT, and enough bytes to share.
func (p *prepared) parallel(size int64) bool {
	in := p.req.Input
	switch {
	case p.workers < 2, in.CompressionType != "NONE",
		in.CSV != nil && in.CSV.AllowQuotedRecordDelimiter, in.JSON != nil && in.JSON.Type != "LINES",
		p.q.Limit >= 0, p.q.HasAggregates():
		return false
	}
	start, end := p.req.scanBounds(size)
	return end-start+1 >= 2*p.chunk
}

// chunkSink keeps a chunk's records until its turn comes.
type chunkSink struct{ b []byte }

func (c *chunkSink) Records(p []byte) error { c.b = append(c.b, p...); return nil }
func (*chunkSink) Progress(Stats) error     { return nil }
func (*chunkSink) Cont() error              { return nil }

type chunkResult struct {
	records []byte
	stats   Stats
	err     error
}

// runParallel scans chunks on up to p.workers goroutines, at most
// p.workers results held at a time, and emits them in order.
func (p *prepared) runParallel(ctx context.Context, in Input, out Sink) (Stats, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start, end := p.req.scanBounds(in.Size())
	order := make(chan chan chunkResult, p.workers-1)
	// Chunk outputs are recycled: fresh multi-MiB buffers cost page faults.
	bufs, lineBufs := &bufPool{}, &bufPool{}
	go func() {
		defer close(order)
		for cs := start; cs <= end; cs += p.chunk {
			ce := min(cs+p.chunk-1, end)
			res := make(chan chunkResult, 1)
			select {
			case order <- res:
			case <-ctx.Done():
				return
			}
			go func() {
				sub := *p
				req := *p.req
				req.ScanRange = &ScanRange{Start: &cs, End: &ce}
				sub.req, sub.workers, sub.lineBufs = &req, 1, lineBufs
				sink := chunkSink{b: bufs.get()}
				st, err := sub.Run(ctx, in, &sink)
				res <- chunkResult{sink.b, st, err}
			}()
		}
	}()
	var total Stats
	last := p.now()
	for res := range order {
		var r chunkResult
		select {
		case r = <-res:
		case <-ctx.Done():
			return total, AsError(ctx.Err())
		}
		total.BytesScanned += r.stats.BytesScanned
		total.BytesProcessed += r.stats.BytesProcessed
		total.BytesReturned += r.stats.BytesReturned
		if r.err != nil {
			return total, r.err
		}
		now := p.now()
		var err error
		switch {
		case len(r.records) > 0:
			err = out.Records(r.records)
			bufs.put(r.records)
		case now.Sub(last) < p.period:
			continue
		case p.req.RequestProgress.Enabled:
			err = out.Progress(total)
		default:
			err = out.Cont()
		}
		if err != nil {
			return total, AsError(err)
		}
		last = now
	}
	return total, nil
}

// bufPool recycles chunk output buffers within one run.
type bufPool struct {
	mu   sync.Mutex
	free [][]byte
}

func (b *bufPool) get() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	if n := len(b.free); n > 0 {
		buf := b.free[n-1]
		b.free = b.free[:n-1]
		return buf[:0]
	}
	return nil
}

func (b *bufPool) put(buf []byte) {
	b.mu.Lock()
	b.free = append(b.free, buf)
	b.mu.Unlock()
}
