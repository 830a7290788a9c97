// Package trash owns the recycle bin's store: deleted objects kept, per
// tenant, in a hidden area of the backend (the bucket ".facet-trash",
// which no S3 request can name: S3 bucket names never start with '.'),
// their listing, restoration and purge. An object is kept as it was
// stored (its bytes as the filters left them, its metadata with its
// reverse plan), so restoring it needs no decoding and the restored
// object reads back as before. Entries are named
// TENANT/ID/BUCKET/KEY, where ID starts with the expiry time, so the
// listing and the purge read names only.
package trash

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/facet-sds/facet/internal/admit"
	"github.com/facet-sds/facet/internal/storage"
)

// Bucket is the backend bucket holding every tenant's recycle bin.
const Bucket = ".facet-trash"

// Errors of the store.
var (
	ErrNotFound = errors.New("no such item in the recycle bin")
	// ErrConflict: the object's key holds another object now.
	ErrConflict = errors.New("an object exists at the key")
	// ErrBucketGone: the bucket the object came from no longer exists or
	// belongs to another tenant.
	ErrBucketGone = errors.New("the object's bucket no longer belongs to the tenant")
)

// Owners tells which tenant owns a bucket (the metadata store).
type Owners interface {
	BucketOwner(ctx context.Context, bucket string) (tenant string, created time.Time, err error)
}

// Item is one deleted object in a tenant's recycle bin.
type Item struct {
	ID        string    `json:"id"`
	Tenant    string    `json:"tenant"`
	Bucket    string    `json:"bucket"`
	Key       string    `json:"key"`
	Size      int64     `json:"size"`
	ETag      string    `json:"etag"`
	DeletedAt time.Time `json:"deleted_at"`
	ExpiresAt time.Time `json:"expires_at"`
}

// Background admits the bin's own work (copies into and out of the bin,
// the purge) into its tenant's QoS background class, so that it is capped
// like the rest of Facet's work on a tenant's behalf (internal/qos).
type Background interface {
	Admit(ctx context.Context, tenant string) (Work, error)
}

// Work is one admitted background operation.
type Work interface {
	// WaitBytes pays for n bytes moved, waiting as the class's rate says.
	WaitBytes(ctx context.Context, n int64) error
	Done()
}

// Config assembles a Store.
type Config struct {
	Backend storage.Backend
	Owners  Owners
	// Background shapes the bin's work; nil runs it unshaped.
	Background Background
	// Changed is told about a restored object (cache coherence); may be nil.
	Changed func(bucket, key string)
	Logger  *slog.Logger
	Now     func() time.Time
}

// Store is the recycle bin.
type Store struct {
	b       storage.Backend
	bg      Background
	owners  Owners
	changed func(bucket, key string)
	log     *slog.Logger
	now     func() time.Time
}

// New returns a Store.
func New(cfg Config) *Store {
	s := &Store{b: cfg.Backend, bg: cfg.Background, owners: cfg.Owners, changed: cfg.Changed, log: cfg.Logger, now: cfg.Now}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.changed == nil {
		s.changed = func(string, string) {}
	}
	return s
}

// admit waits for the tenant's background class to take one more
// operation: a refusal (its operations rate is used up) is retried after
// the wait it names, until ctx ends.
func (s *Store) admit(ctx context.Context, tenant string) (Work, error) {
	if s.bg == nil {
		return noWork{}, nil
	}
	return admit.Retrying(ctx, func(ctx context.Context) (Work, error) { return s.bg.Admit(ctx, tenant) })
}

type noWork struct{}

func (noWork) WaitBytes(context.Context, int64) error { return nil }
func (noWork) Done()                                  {}

var idRE = regexp.MustCompile(`^([0-9]{1,19})-([0-9]{1,19})-([0-9a-f]{8})$`)

func (s *Store) ensureBucket(ctx context.Context) error {
	ok, err := s.b.BucketExists(ctx, Bucket)
	if err != nil || ok {
		return err
	}
	if err := s.b.CreateBucket(ctx, Bucket); err != nil && !errors.Is(err, storage.ErrBucketExists) {
		return err
	}
	return nil
}

// ConditionalDeleter is a backend that deletes an object only while it
// holds a given version, atomically (internal/storage/fs does). Over it
// Delete deletes exactly the version it kept; over another backend a
// write may still land between Delete's last check and its delete.
type ConditionalDeleter interface {
	DeleteObjectIf(ctx context.Context, bucket, key, etag string, modified time.Time) error
}

// ErrBusy: the object kept changing while Delete tried to keep it; it
// was not deleted.
var ErrBusy = errors.New("the object kept changing while the recycle bin copied it; it was not deleted")

// deleteAttempts bounds Delete's copies of an object that keeps changing.
const deleteAttempts = 5

// Delete deletes bucket/key, keeping in tenant's bin for keepFor exactly
// the version it deletes. A PUT racing the DELETE either lands first (it
// is what is kept and deleted) or after (it stays): an acknowledged write
// is never deleted without its copy in the bin. When the object keeps
// changing under the copy, Delete gives up with ErrBusy and deletes
// nothing. A missing object is no error (there is nothing to keep).
func (s *Store) Delete(ctx context.Context, tenant, bucket, key string, keepFor time.Duration) error {
	work, err := s.start(ctx, tenant)
	if err != nil {
		return err
	}
	defer work.Done()
	cd, _ := s.b.(ConditionalDeleter)
	for range deleteAttempts {
		info, entry, err := s.keepOnce(ctx, work, tenant, bucket, key, keepFor)
		if errors.Is(err, storage.ErrObjectNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if cd != nil {
			err = cd.DeleteObjectIf(ctx, bucket, key, info.Meta.ETag, info.LastModified)
		} else {
			err = s.deleteIfUnchanged(ctx, bucket, key, info)
		}
		switch {
		case err == nil:
			return nil
		case errors.Is(err, storage.ErrObjectNotFound):
			// Deleted by another request meanwhile. This copy is of the
			// version it deleted, and stays: that request may have had no
			// bin in force (a policy changed), and a duplicate is better
			// than a loss.
			return nil
		case !errors.Is(err, storage.ErrVersionChanged):
			return err
		}
		// Overwritten under the copy: the copy is of a version no one
		// deleted; drop it and keep the new one.
		if derr := s.b.DeleteObject(ctx, Bucket, entry); derr != nil {
			s.log.WarnContext(ctx, "recycle bin: a copy of an overwritten version stays in the bin", "tenant", tenant, "bucket", bucket, "err", derr)
		}
	}
	return fmt.Errorf("recycle bin: %s/%s: %w", bucket, key, ErrBusy)
}

// Busy reports whether err is Delete's giving up on an object that kept
// changing (the S3 front end answers SlowDown: retry).
func (s *Store) Busy(err error) bool { return errors.Is(err, ErrBusy) }

// deleteIfUnchanged is DeleteObjectIf for a backend without it: check,
// then delete (the instant between the two stays open).
func (s *Store) deleteIfUnchanged(ctx context.Context, bucket, key string, kept storage.ObjectInfo) error {
	now, err := s.b.HeadObject(ctx, bucket, key)
	if err != nil {
		return err
	}
	if now.Meta.ETag != kept.Meta.ETag || !now.LastModified.Equal(kept.LastModified) {
		return storage.ErrVersionChanged
	}
	return s.b.DeleteObject(ctx, bucket, key)
}

// Keep copies bucket/key, as stored, into tenant's recycle bin for
// keepFor, while it goes on existing (Restore keeps the object it
// overwrites). It returns storage.ErrObjectNotFound when there is
// nothing to keep.
func (s *Store) Keep(ctx context.Context, tenant, bucket, key string, keepFor time.Duration) error {
	work, err := s.start(ctx, tenant)
	if err != nil {
		return err
	}
	defer work.Done()
	_, _, err = s.keepOnce(ctx, work, tenant, bucket, key, keepFor)
	return err
}

// start readies the bin for a copy into it and admits the copy into
// tenant's background class; the caller ends the work.
func (s *Store) start(ctx context.Context, tenant string) (Work, error) {
	if err := s.ensureBucket(ctx); err != nil {
		return nil, fmt.Errorf("recycle bin: %w", err)
	}
	return s.admit(ctx, tenant)
}

// keepOnce copies the version of bucket/key it reads into the bin and
// returns that version's info and the bin entry's name.
func (s *Store) keepOnce(ctx context.Context, work Work, tenant, bucket, key string, keepFor time.Duration) (storage.ObjectInfo, string, error) {
	rc, info, err := s.b.GetObject(ctx, bucket, key, nil)
	if err != nil {
		return info, "", err
	}
	defer rc.Close()
	now := s.now()
	var r [4]byte
	if _, err := rand.Read(r[:]); err != nil {
		return info, "", err
	}
	id := fmt.Sprintf("%d-%d-%s", now.Add(keepFor).Unix(), now.UnixNano(), hex.EncodeToString(r[:]))
	meta := info.Meta
	meta.System = maps.Clone(meta.System)
	if meta.System == nil {
		meta.System = map[string]string{}
	}
	meta.System["facet.trash.modified"] = strconv.FormatInt(info.LastModified.UnixNano(), 10)
	counted := &countReader{r: rc, ctx: ctx, w: work}
	entry := tenant + "/" + id + "/" + bucket + "/" + key
	_, err = s.b.PutObject(ctx, Bucket, entry, storage.PutInput{Body: counted, Meta: meta,
		Seal: func(*storage.ObjectMeta) error {
			if counted.n != info.StoredSize {
				return fmt.Errorf("recycle bin: read %d of the object's %d stored bytes", counted.n, info.StoredSize)
			}
			return nil
		}})
	if err != nil {
		return info, "", fmt.Errorf("recycle bin: keep %s/%s: %w", bucket, key, err)
	}
	s.log.InfoContext(ctx, "recycle bin: kept deleted object", "tenant", tenant, "bucket", bucket, "id", id)
	return info, entry, nil
}

// countReader counts a copy's bytes and pays for them in the background
// class as they pass.
type countReader struct {
	r   interface{ Read([]byte) (int, error) }
	ctx context.Context
	w   Work
	n   int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if n > 0 {
		if werr := c.w.WaitBytes(c.ctx, int64(n)); werr != nil {
			return n, werr
		}
	}
	return n, err
}

// parse reads an entry's name; ok is false for a name this store did not
// write.
func parse(name string, info storage.ObjectInfo) (Item, bool) {
	parts := strings.SplitN(name, "/", 4)
	if len(parts) != 4 || parts[0] == "" || parts[2] == "" {
		return Item{}, false
	}
	m := idRE.FindStringSubmatch(parts[1])
	if m == nil {
		return Item{}, false
	}
	exp, err1 := strconv.ParseInt(m[1], 10, 64)
	del, err2 := strconv.ParseInt(m[2], 10, 64)
	if err1 != nil || err2 != nil {
		return Item{}, false
	}
	return Item{ID: parts[1], Tenant: parts[0], Bucket: parts[2], Key: parts[3], Size: info.Meta.Size, ETag: info.Meta.ETag,
		DeletedAt: time.Unix(0, del).UTC(), ExpiresAt: time.Unix(exp, 0).UTC()}, true
}

// each calls fn for every entry under prefix, in name order.
func (s *Store) each(ctx context.Context, prefix string, fn func(name string, it Item) error) error {
	ok, err := s.b.BucketExists(ctx, Bucket)
	if err != nil || !ok {
		return err
	}
	marker := ""
	for {
		res, err := s.b.ListObjects(ctx, Bucket, storage.ListOptions{Prefix: prefix, Marker: marker, MaxKeys: 1000})
		if err != nil {
			return err
		}
		for _, o := range res.Objects {
			if it, ok := parse(o.Key, o); ok {
				if err := fn(o.Key, it); err != nil {
					return err
				}
			}
			marker = o.Key
		}
		if !res.IsTruncated || len(res.Objects) == 0 {
			return nil
		}
		if res.NextMarker != "" {
			marker = res.NextMarker
		}
	}
}

// List returns tenant's recycle bin, oldest deletion first.
func (s *Store) List(ctx context.Context, tenant string) ([]Item, error) {
	if err := checkTenant(tenant); err != nil {
		return nil, err
	}
	out := []Item{}
	err := s.each(ctx, tenant+"/", func(_ string, it Item) error {
		out = append(out, it)
		return nil
	})
	return out, err
}

func checkTenant(t string) error {
	if t == "" || strings.Contains(t, "/") {
		return fmt.Errorf("%w: tenant %q", ErrNotFound, t)
	}
	return nil
}

// find returns the entry name and item of id in tenant's bin.
func (s *Store) find(ctx context.Context, tenant, id string) (string, Item, error) {
	if err := checkTenant(tenant); err != nil {
		return "", Item{}, err
	}
	if !idRE.MatchString(id) {
		return "", Item{}, fmt.Errorf("%w: id %q", ErrNotFound, id)
	}
	var name string
	var item Item
	err := s.each(ctx, tenant+"/"+id+"/", func(n string, it Item) error {
		name, item = n, it
		return nil
	})
	if err != nil {
		return "", Item{}, err
	}
	if name == "" {
		return "", Item{}, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	return name, item, nil
}

// Restore puts item id back at its bucket and key, as it was stored, and
// removes it from the bin. An object at that key now is kept (ErrConflict)
// unless overwrite is set; it then goes to the bin itself, for as long as
// the restored item was kept, so a restore never loses data either.
func (s *Store) Restore(ctx context.Context, tenant, id string, overwrite bool) (Item, error) {
	name, it, err := s.find(ctx, tenant, id)
	if err != nil {
		return Item{}, err
	}
	owner, _, err := s.owners.BucketOwner(ctx, it.Bucket)
	if err != nil || owner != tenant {
		return Item{}, fmt.Errorf("%w: %s", ErrBucketGone, it.Bucket)
	}
	if _, err := s.b.HeadObject(ctx, it.Bucket, it.Key); err == nil {
		if !overwrite {
			return Item{}, fmt.Errorf("%w: %s/%s", ErrConflict, it.Bucket, it.Key)
		}
		if err := s.Keep(ctx, tenant, it.Bucket, it.Key, it.ExpiresAt.Sub(it.DeletedAt)); err != nil && !errors.Is(err, storage.ErrObjectNotFound) {
			return Item{}, err
		}
	} else if !errors.Is(err, storage.ErrObjectNotFound) {
		return Item{}, err
	}
	work, err := s.admit(ctx, tenant)
	if err != nil {
		return Item{}, err
	}
	defer work.Done()
	rc, info, err := s.b.GetObject(ctx, Bucket, name, nil)
	if err != nil {
		return Item{}, err
	}
	defer rc.Close()
	meta := info.Meta
	meta.System = maps.Clone(meta.System)
	delete(meta.System, "facet.trash.modified")
	if len(meta.System) == 0 {
		meta.System = nil
	}
	counted := &countReader{r: rc, ctx: ctx, w: work}
	_, err = s.b.PutObject(ctx, it.Bucket, it.Key, storage.PutInput{Body: counted, Meta: meta, Seal: func(*storage.ObjectMeta) error {
		if counted.n != info.StoredSize {
			return fmt.Errorf("recycle bin: read %d of %d stored bytes", counted.n, info.StoredSize)
		}
		return nil
	}})
	s.changed(it.Bucket, it.Key)
	if err != nil {
		return Item{}, fmt.Errorf("recycle bin: restore %s/%s: %w", it.Bucket, it.Key, err)
	}
	if err := s.b.DeleteObject(ctx, Bucket, name); err != nil {
		return Item{}, fmt.Errorf("recycle bin: restored, but the bin entry stays: %w", err)
	}
	s.log.InfoContext(ctx, "recycle bin: restored object", "tenant", tenant, "bucket", it.Bucket, "id", id)
	return it, nil
}

// Purge removes item id from tenant's bin now.
func (s *Store) Purge(ctx context.Context, tenant, id string) error {
	name, _, err := s.find(ctx, tenant, id)
	if err != nil {
		return err
	}
	return s.b.DeleteObject(ctx, Bucket, name)
}

// PurgeExpired removes every tenant's items whose time is up and returns
// how many it removed.
func (s *Store) PurgeExpired(ctx context.Context) (int, error) {
	now := s.now()
	n := 0
	err := s.each(ctx, "", func(name string, it Item) error {
		if it.ExpiresAt.After(now) {
			return nil
		}
		work, err := s.admit(ctx, it.Tenant)
		if err != nil {
			return err
		}
		err = s.b.DeleteObject(ctx, Bucket, name)
		work.Done()
		if err != nil {
			return err
		}
		n++
		return nil
	})
	return n, err
}

// Run purges expired items every period until ctx ends, each deletion
// admitted into its tenant's background class. A failed pass is logged
// and retried at the next period; a panic in a pass is recovered and
// logged, so the loop never takes the gateway down.
func (s *Store) Run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		s.pass(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (s *Store) pass(ctx context.Context) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("recycle bin: purge pass panicked", "panic", fmt.Sprint(r))
		}
	}()
	n, err := s.PurgeExpired(ctx)
	if err != nil && ctx.Err() == nil {
		s.log.Warn("recycle bin: purge pass failed", "err", err)
	}
	if n > 0 {
		s.log.Info("recycle bin: purged expired objects", "count", n)
	}
}
