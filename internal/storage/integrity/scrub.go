package integrity

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/facet-sds/facet/internal/admit"
	"github.com/facet-sds/facet/internal/storage"
)

// The scrubber reads stored objects through the same checks a GET makes,
// to find damage before a client does. One run at a time per node, in the
// background: each object is admitted into its owner's background QoS
// class and its bytes paid for as they are read, so a scrub yields to the
// tenants' own traffic. Listings are paged and objects streamed, so a run
// holds one page of keys and one block in memory, whatever the store's
// size; its report keeps the first maxFindings damaged, missing or
// unverified objects and counts the rest.

// Background admits a tenant's background work (the recycle bin's shape).
type Background interface {
	Admit(ctx context.Context, tenant string) (Work, error)
}

// Work is one admitted background operation.
type Work interface {
	// WaitBytes pays for n bytes moved, waiting as the class's rate says.
	WaitBytes(ctx context.Context, n int64) error
	Done()
}

// ScrubObserver counts what the scrubber does (promexp.Integrity).
type ScrubObserver interface {
	Scrubbed(result string, bytes int64)
	ScrubDone()
}

// BucketRef is a bucket to scrub and the tenant that owns it.
type BucketRef struct{ Tenant, Bucket string }

// Scrub results.
const (
	ResultOK         = "ok"
	ResultDamaged    = "damaged"
	ResultMissing    = "missing"
	ResultUnverified = "unverified"
)

// Run states.
const (
	ScrubRunning = "running"
	ScrubDone    = "done"
	ScrubFailed  = "failed"
)

const maxFindings = 1000

// ScrubFinding is an object that is not ok.
type ScrubFinding struct {
	Tenant string `json:"tenant"`
	Bucket string `json:"bucket"`
	Key    string `json:"key"`
	// VersionID names the version in a bucket that keeps versions.
	VersionID string `json:"version_id,omitempty"`
	// Result is damaged (a checksum failed), missing (listed, but its
	// bytes cannot be read) or unverified (stored before checksums were
	// kept: read, but nothing to check it against).
	Result string `json:"result"`
	Detail string `json:"detail,omitempty"`
}

// ScrubReport is a scrub run, running or finished.
type ScrubReport struct {
	ID string `json:"id"`
	// Tenant and Bucket are the run's scope; empty is all.
	Tenant     string     `json:"tenant,omitempty"`
	Bucket     string     `json:"bucket,omitempty"`
	State      string     `json:"state"`
	Started    time.Time  `json:"started"`
	Finished   *time.Time `json:"finished,omitempty"`
	Buckets    int        `json:"buckets"`
	Objects    int64      `json:"objects"`
	Bytes      int64      `json:"bytes"`
	OK         int64      `json:"ok"`
	Damaged    int64      `json:"damaged"`
	Missing    int64      `json:"missing"`
	Unverified int64      `json:"unverified"`
	// Findings lists the objects that are not ok, the first 1,000.
	Findings          []ScrubFinding `json:"findings"`
	FindingsTruncated bool           `json:"findings_truncated,omitempty"`
	Error             string         `json:"error,omitempty"`
}

// ErrScrubRunning refuses a second run while one is going.
var ErrScrubRunning = errors.New("a scrub is already running")

// ScrubConfig assembles a Scrubber.
type ScrubConfig struct {
	// Backend is the store to read (not a verifying wrapper: the scrubber
	// checks whatever the GETs are set to).
	Backend storage.Backend
	// Failures hears of damage found, as for GETs.
	Failures Failures
	// Background shapes the reads; nil reads unshaped.
	Background Background
	Observer   ScrubObserver
	Logger     *slog.Logger
}

// Scrubber runs scrubs.
type Scrubber struct {
	b   *Backend
	cfg ScrubConfig
	log *slog.Logger

	mu   sync.Mutex
	last *ScrubReport // the current or last run; guarded by mu
	wg   sync.WaitGroup
}

// NewScrubber returns a Scrubber.
func NewScrubber(cfg ScrubConfig) *Scrubber {
	s := &Scrubber{b: Wrap(cfg.Backend, Options{Failures: cfg.Failures}), cfg: cfg, log: cfg.Logger}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	return s
}

// Start begins a run over buckets in the background, bound to ctx (the
// server's life, not a request's), and returns its first report. tenant
// and bucket name the scope for the report.
func (s *Scrubber) Start(ctx context.Context, tenant, bucket string, buckets []BucketRef) (ScrubReport, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.last != nil && s.last.State == ScrubRunning {
		return s.last.clone(), fmt.Errorf("%w (%s, started %s)", ErrScrubRunning, s.last.ID, s.last.Started.Format(time.RFC3339))
	}
	var id [6]byte
	_, _ = rand.Read(id[:])
	rep := &ScrubReport{ID: "scrub-" + hex.EncodeToString(id[:]), Tenant: tenant, Bucket: bucket, State: ScrubRunning,
		Started: time.Now().UTC(), Buckets: len(buckets), Findings: []ScrubFinding{}}
	s.last = rep
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.run(ctx, rep, buckets)
	}()
	return rep.clone(), nil
}

// Status returns the current or last run's report; ok is false before
// the first run.
func (s *Scrubber) Status() (ScrubReport, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.last == nil {
		return ScrubReport{}, false
	}
	return s.last.clone(), true
}

// Wait returns once no run is going (the server's shutdown).
func (s *Scrubber) Wait() { s.wg.Wait() }

func (r *ScrubReport) clone() ScrubReport {
	c := *r
	c.Findings = append([]ScrubFinding{}, r.Findings...)
	return c
}

func (s *Scrubber) run(ctx context.Context, rep *ScrubReport, buckets []BucketRef) {
	s.log.InfoContext(ctx, "scrub started", "id", rep.ID, "tenant", rep.Tenant, "bucket", rep.Bucket, "buckets", len(buckets))
	var err error
	for _, ref := range buckets {
		if err = s.bucket(ctx, rep, ref); err != nil {
			break
		}
	}
	s.mu.Lock()
	now := time.Now().UTC()
	rep.Finished = &now
	rep.State = ScrubDone
	if err != nil {
		rep.State, rep.Error = ScrubFailed, err.Error()
	}
	s.mu.Unlock()
	if s.cfg.Observer != nil {
		s.cfg.Observer.ScrubDone()
	}
	lvl := slog.LevelInfo
	if rep.Damaged+rep.Missing > 0 || err != nil {
		lvl = slog.LevelError
	}
	s.log.Log(ctx, lvl, "scrub finished", "id", rep.ID, "state", rep.State, "objects", rep.Objects, "bytes", rep.Bytes,
		"damaged", rep.Damaged, "missing", rep.Missing, "unverified", rep.Unverified, "err", rep.Error)
}

// bucket scrubs one bucket, a page of keys at a time; every version of
// each key where the bucket keeps versions. A bucket deleted meanwhile is
// done.
func (s *Scrubber) bucket(ctx context.Context, rep *ScrubReport, ref BucketRef) error {
	if v, ok := s.versions(); ok {
		state, err := v.BucketVersioning(ctx, ref.Bucket)
		if errors.Is(err, storage.ErrBucketNotFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("versioning of %s: %w", ref.Bucket, err)
		}
		if state != storage.VersioningOff {
			return s.bucketVersions(ctx, rep, ref, v)
		}
	}
	marker := ""
	for {
		page, err := s.cfg.Backend.ListObjects(ctx, ref.Bucket, storage.ListOptions{Marker: marker, MaxKeys: 1000})
		if errors.Is(err, storage.ErrBucketNotFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("list %s: %w", ref.Bucket, err)
		}
		for _, o := range page.Objects {
			if err := s.object(ctx, rep, ref, o.Key, ""); err != nil {
				return err
			}
		}
		if !page.IsTruncated || page.NextMarker == "" {
			return nil
		}
		marker = page.NextMarker
	}
}

// versions returns the version API of the store, checked, if it keeps
// versions.
func (s *Scrubber) versions() (storage.Versions, bool) {
	v, ok := WithVersions(s.b).(storage.Versions)
	return v, ok
}

// bucketVersions scrubs every version of a bucket that keeps them, a page
// at a time; delete markers have no bytes.
func (s *Scrubber) bucketVersions(ctx context.Context, rep *ScrubReport, ref BucketRef, v storage.Versions) error {
	var opts storage.ListVersionsOptions
	opts.MaxKeys = 1000
	for {
		page, err := v.ListObjectVersions(ctx, ref.Bucket, opts)
		if errors.Is(err, storage.ErrBucketNotFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("list versions of %s: %w", ref.Bucket, err)
		}
		for _, o := range page.Versions {
			if o.DeleteMarker {
				continue
			}
			if err := s.object(ctx, rep, ref, o.Key, o.VersionID); err != nil {
				return err
			}
		}
		if !page.IsTruncated || page.NextKeyMarker == "" {
			return nil
		}
		opts.KeyMarker, opts.VersionIDMarker = page.NextKeyMarker, page.NextVersionIDMarker
	}
}

// object reads one object through the checks and records the result.
// Only a failure to go on (the run's context ended, the store
// unavailable) is returned.
func (s *Scrubber) object(ctx context.Context, rep *ScrubReport, ref BucketRef, key, versionID string) error {
	work, err := s.admit(ctx, ref.Tenant)
	if err != nil {
		return err
	}
	defer work.Done()
	result, n, detail, err := s.read(ctx, work, ref.Bucket, key, versionID)
	if err != nil || result == "" {
		return err
	}
	if s.cfg.Observer != nil {
		s.cfg.Observer.Scrubbed(result, n)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rep.Objects++
	rep.Bytes += n
	switch result {
	case ResultOK:
		rep.OK++
		return nil
	case ResultDamaged:
		rep.Damaged++
	case ResultMissing:
		rep.Missing++
	case ResultUnverified:
		rep.Unverified++
	}
	if len(rep.Findings) >= maxFindings {
		rep.FindingsTruncated = true
		return nil
	}
	rep.Findings = append(rep.Findings, ScrubFinding{Tenant: ref.Tenant, Bucket: ref.Bucket, Key: key, VersionID: versionID, Result: result, Detail: detail})
	return nil
}

// read checks one object: result "" means it went away since the listing.
func (s *Scrubber) read(ctx context.Context, work Work, bucket, key, versionID string) (result string, n int64, detail string, err error) {
	classify := func(err error) (string, int64, string, error) {
		switch {
		case ctx.Err() != nil:
			return "", n, "", ctx.Err()
		case errors.Is(err, storage.ErrObjectNotFound), errors.Is(err, storage.ErrNoSuchVersion):
			return "", n, "", nil
		case errors.Is(err, storage.ErrUnavailable):
			return "", n, "", err
		case errors.Is(err, ErrCorrupt):
			return ResultDamaged, n, err.Error(), nil
		}
		return ResultMissing, n, err.Error(), nil
	}
	var rc io.ReadCloser
	var info storage.ObjectInfo
	if v, ok := s.versions(); ok && versionID != "" {
		rc, info, err = v.GetObjectVersion(ctx, bucket, key, versionID, nil)
	} else {
		rc, info, err = s.b.GetObject(ctx, bucket, key, nil)
	}
	if err != nil {
		return classify(err)
	}
	defer rc.Close()
	n, err = io.Copy(io.Discard, paced{ctx: ctx, r: rc, w: work})
	if err != nil {
		return classify(err)
	}
	if n != info.StoredSize {
		return ResultMissing, n, fmt.Sprintf("read %d of %d stored bytes", n, info.StoredSize), nil
	}
	if _, ok := info.Meta.System[Key]; !ok {
		return ResultUnverified, n, "", nil
	}
	return ResultOK, n, "", nil
}

// admit waits for the tenant's background class to take one more
// operation, retrying a refusal after the wait it names.
func (s *Scrubber) admit(ctx context.Context, tenant string) (Work, error) {
	if s.cfg.Background == nil {
		return noWork{}, nil
	}
	return admit.Retrying(ctx, func(ctx context.Context) (Work, error) { return s.cfg.Background.Admit(ctx, tenant) })
}

type noWork struct{}

func (noWork) WaitBytes(context.Context, int64) error { return nil }
func (noWork) Done()                                  {}

// paced pays for the bytes it reads.
type paced struct {
	ctx context.Context
	r   io.Reader
	w   Work
}

func (p paced) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if n > 0 {
		if werr := p.w.WaitBytes(p.ctx, int64(n)); werr != nil {
			return n, werr
		}
	}
	return n, err
}
