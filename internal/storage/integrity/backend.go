package integrity

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"

	"github.com/facet-sds/facet/internal/storage"
)

// Failures hears of every checksum mismatch found on a read (a GET, a
// copy's source, the scrubber), once per damaged read.
type Failures interface {
	IntegrityFailed(ctx context.Context, bucket, key string, err error)
}

// Options configure a Backend.
type Options struct {
	// NoVerify records checksums on writes but hands reads on unchecked
	// (the fs backend's sendfile path): the benchmark's baseline, and an
	// escape hatch. Off by default.
	NoVerify bool
	// Failures hears of mismatches; nil tells no one.
	Failures Failures
}

// Backend checksums what it writes and verifies what it reads for the
// storage.Backend it wraps; every other method is the wrapped one.
type Backend struct {
	storage.Backend
	opts Options
}

// Wrap returns b with end-to-end checksums.
func Wrap(b storage.Backend, opts Options) *Backend {
	return &Backend{Backend: b, opts: opts}
}

// Unwrap returns the wrapped backend, for the optional abilities it has.
func (b *Backend) Unwrap() storage.Backend { return b.Backend }

// record returns in with its body hashed and its seal recording the sums.
func record(in storage.PutInput) storage.PutInput {
	h := newHasher()
	seal := in.Seal
	in.Body = io.TeeReader(in.Body, h)
	in.Seal = func(m *storage.ObjectMeta) error {
		if seal != nil {
			if err := seal(m); err != nil {
				return err
			}
		}
		m.System = maps.Clone(m.System)
		if m.System == nil {
			m.System = map[string]string{}
		}
		m.System[Key] = h.sums().Encode()
		return nil
	}
	return in
}

// PutObject stores the object with its checksums.
func (b *Backend) PutObject(ctx context.Context, bucket, key string, in storage.PutInput) (storage.ObjectInfo, error) {
	return b.Backend.PutObject(ctx, bucket, key, record(in))
}

// PutPart stores the part with its checksums.
func (b *Backend) PutPart(ctx context.Context, bucket, key, uploadID string, number int, in storage.PutInput) (storage.Part, error) {
	return b.Backend.PutPart(ctx, bucket, key, uploadID, number, record(in))
}

// CompleteUpload records the chosen parts' checksums, in order, as the
// object's. A part without checksums (stored before they were kept) leaves
// the object without: it is served unverified rather than refused.
func (b *Backend) CompleteUpload(ctx context.Context, bucket, key, uploadID string, parts []storage.CompletePart, meta storage.ObjectMeta) (storage.ObjectInfo, error) {
	meta.System = maps.Clone(meta.System)
	delete(meta.System, Key)
	sums, err := b.partSums(ctx, bucket, key, uploadID, parts)
	if err != nil {
		return storage.ObjectInfo{}, err
	}
	if sums != nil {
		if meta.System == nil {
			meta.System = map[string]string{}
		}
		meta.System[Key] = sums.Encode()
	}
	if len(meta.System) == 0 {
		meta.System = nil
	}
	return b.Backend.CompleteUpload(ctx, bucket, key, uploadID, parts, meta)
}

// partSums gathers the named parts' sums (nil when one has none). A part
// that is not there is left for CompleteUpload to refuse.
func (b *Backend) partSums(ctx context.Context, bucket, key, uploadID string, parts []storage.CompletePart) (*Sums, error) {
	stored := map[int]storage.Part{}
	for marker := 0; ; {
		page, truncated, err := b.Backend.ListParts(ctx, bucket, key, uploadID, marker, 1000)
		if err != nil {
			return nil, err
		}
		for _, p := range page {
			stored[p.Number] = p
			marker = p.Number
		}
		if !truncated || len(page) == 0 {
			break
		}
	}
	out := &Sums{Block: BlockSize}
	for _, cp := range parts {
		p, ok := stored[cp.Number]
		if !ok {
			return nil, nil
		}
		s, err := Of(p.System)
		if err != nil || s == nil || s.Block != out.Block || len(s.Segments) != 1 || s.Segments[0].Size != p.StoredSize {
			return nil, nil
		}
		out.Segments = append(out.Segments, s.Segments[0])
	}
	return out, nil
}

// GetObject streams the stored bytes, each block checked before any of
// it is handed on. The first block is checked before GetObject returns,
// so damage there is an error the caller can answer before its status.
func (b *Backend) GetObject(ctx context.Context, bucket, key string, rng *storage.Range) (io.ReadCloser, storage.ObjectInfo, error) {
	if b.opts.NoVerify {
		return b.Backend.GetObject(ctx, bucket, key, rng)
	}
	// The checksums come with the stream, so the range to read is guessed
	// at blocks of BlockSize from the object's start: right for simple
	// objects and for multipart objects whose parts are multiples of it
	// (the common 5, 8, 16 MiB...); else the read is made again.
	var guess *storage.Range
	if rng != nil {
		start := rng.Start - rng.Start%BlockSize
		if rng.Start < 0 {
			start = rng.Start
		}
		guess = &storage.Range{Start: start, Length: roundUp(rng.Start+rng.Length) - start}
	}
	rc, info, err := b.Backend.GetObject(ctx, bucket, key, guess)
	if err != nil {
		return nil, info, err
	}
	r, err := b.verified(ctx, rc, info, guess, rng)
	if err != nil {
		return nil, storage.ObjectInfo{}, err
	}
	return r, info, nil
}

func roundUp(n int64) int64 { return (n + BlockSize - 1) / BlockSize * BlockSize }

// verified turns rc, the stored stream of info over guess (nil: all of
// it), into the checked stream of rng.
func (b *Backend) verified(ctx context.Context, rc io.ReadCloser, info storage.ObjectInfo, guess, rng *storage.Range) (io.ReadCloser, error) {
	what := info.Bucket + "/" + info.Key
	failed := func(err error) { b.failed(ctx, info.Bucket, info.Key, err) }
	sums, err := Of(info.Meta.System)
	if err == nil && sums != nil && sums.Size() != info.StoredSize {
		err = fmt.Errorf("checksums describe %d bytes, %d stored", sums.Size(), info.StoredSize)
	}
	if err != nil {
		rc.Close()
		err = fmt.Errorf("integrity: %s: %w: %w", what, ErrCorrupt, err)
		failed(err)
		return nil, err
	}
	gstart, gend := int64(0), info.StoredSize
	if guess != nil {
		gstart, gend = guess.Start, min(guess.Start+guess.Length, info.StoredSize)
	}
	off, n := int64(0), info.StoredSize
	if rng != nil {
		off, n = rng.Start, min(rng.Length, info.StoredSize-rng.Start)
	}
	if sums == nil {
		// Written before checksums were kept: served as it is.
		if rng == nil {
			return rc, nil
		}
		return skipped(rc, off-gstart, n)
	}
	if n <= 0 {
		return rc, nil
	}
	first, _, _, _ := sums.blockAt(off)
	lastStart, lastLen, _, _ := sums.blockAt(off + n - 1)
	if first < gstart || lastStart+lastLen > gend {
		// The parts do not fall on the guessed blocks: read what they
		// need, of the same version.
		rc.Close()
		again, got, err := b.Backend.GetObject(ctx, info.Bucket, info.Key, &storage.Range{Start: first, Length: lastStart + lastLen - first})
		if err != nil {
			return nil, err
		}
		if got.Meta.ETag != info.Meta.ETag || !got.LastModified.Equal(info.LastModified) {
			again.Close()
			return nil, fmt.Errorf("integrity: %s: %w", what, errChanged)
		}
		rc, gstart = again, first
	}
	if skip := first - gstart; skip > 0 {
		if _, err := io.CopyN(io.Discard, rc, skip); err != nil {
			rc.Close()
			return nil, fmt.Errorf("integrity: %s: %w", what, err)
		}
	}
	v := newVerifier(rc, sums, first, off, n, what, failed)
	v.fill()
	if v.err != nil && v.err != io.EOF {
		err := v.err
		v.Close()
		return nil, err
	}
	return v, nil
}

// errChanged: the object was overwritten between the two reads of one
// range; the caller's version check reports it as its own.
var errChanged = errors.New("object changed while being read")

func (b *Backend) failed(ctx context.Context, bucket, key string, err error) {
	if b.opts.Failures != nil {
		b.opts.Failures.IntegrityFailed(ctx, bucket, key, err)
	}
}

// skipped drops skip bytes of rc and reads n more.
func skipped(rc io.ReadCloser, skip, n int64) (io.ReadCloser, error) {
	if skip > 0 {
		if _, err := io.CopyN(io.Discard, rc, skip); err != nil {
			rc.Close()
			return nil, err
		}
	}
	return struct {
		io.Reader
		io.Closer
	}{io.LimitReader(rc, n), rc}, nil
}
