package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/facet-sds/facet/internal/admin"
	"github.com/facet-sds/facet/internal/bus"
	"github.com/facet-sds/facet/internal/filter/cache"
	"github.com/facet-sds/facet/internal/filter/trash"
	"github.com/facet-sds/facet/internal/qos"
	"github.com/facet-sds/facet/internal/storage"
)

// requestFilterStores are what the caching and recycle-bin filters need on
// this node: the object cache on the local fast disk and the recycle bin.
type requestFilterStores struct {
	cache *cache.Store // nil: no cache directory (a stateless gateway without --cache-dir)
	trash *trash.Store
	// changes hears of every change to an object: the cache, or, on a
	// gateway without one, a publisher for the others' caches.
	changes interface{ Changed(bucket, key string) }
}

// trashPurgeEvery is how often the recycle bin's expired objects are
// purged. Every gateway runs the purge; deletes are idempotent.
const trashPurgeEvery = 10 * time.Minute

// openRequestFilterStores opens the object cache (in opts.CacheDir, by
// default DATA/cache) and the recycle bin, whose purge loop runs from
// Start. The bin's copies and purges run in the tenant's QoS background
// class of limiter.
func (s *Server) openRequestFilterStores(backend storage.Backend, owners trash.Owners, b *bus.NATS, node string, limiter *qos.Limiter) (*requestFilterStores, error) {
	opts, logger := s.opts, s.log
	st := &requestFilterStores{}
	dir := opts.CacheDir
	if dir == "" && !opts.stateless() {
		dir = filepath.Join(opts.DataDir, "cache")
	}
	if dir != "" {
		var cb cache.Bus
		connected := func() bool { return true }
		if b != nil {
			cb, connected = cacheBus{b}, b.Connected
		}
		// The cache watches the bus for the server's lifetime, not New's.
		c, err := cache.Open(s.ctx, cache.Options{Dir: dir, Node: node, Bus: cb, Connected: connected, Logger: logger})
		if err != nil {
			return nil, fmt.Errorf("object cache: %w", err)
		}
		st.cache = c
		s.closeLater("object cache", c.Close)
	}
	st.changes = publisher{b: b, node: node, log: logger}
	if st.cache != nil {
		st.changes = st.cache
	}
	changed := st.changes.Changed
	var bg trash.Background
	if limiter != nil {
		bg = trashQoS{limiter}
	}
	st.trash = trash.New(trash.Config{Backend: backend, Owners: owners, Changed: changed, Background: bg, Logger: logger})
	every := opts.TrashPurgeEvery
	if every <= 0 {
		every = trashPurgeEvery
	}
	s.later("trash purge", func(ctx context.Context) { st.trash.Run(ctx, every) })
	return st, nil
}

// nodeCache reports the object cache in GET /v1/nodes (and so in the
// node's description to the fleet and on the dashboard).
type nodeCache struct{ c *cache.Store }

func (n nodeCache) CacheStatus() admin.NodeCache {
	st := n.c.Stats()
	out := admin.NodeCache{Entries: st.Entries, Bytes: st.Bytes, Hits: st.Hits, Misses: st.Misses, ServedBytes: st.BytesServed,
		Admissions: st.Admitted, Evictions: st.Evictions, Stale: st.Stale, Invalidations: st.Invalidations, BusConnected: st.BusConnected}
	if n := st.Hits + st.Misses; n > 0 {
		out.HitRatio = float64(st.Hits) / float64(n)
	}
	return out
}

// trashQoS admits the recycle bin's work into the background class.
type trashQoS struct{ l *qos.Limiter }

func (q trashQoS) Admit(ctx context.Context, tenant string) (trash.Work, error) {
	s, err := q.l.Admit(ctx, tenant, qos.ClassBackground)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// publisher sends invalidations for a gateway without a cache of its own.
type publisher struct {
	b    *bus.NATS
	node string
	log  *slog.Logger
}

func (p publisher) Changed(bucket, key string) {
	if p.b == nil {
		return
	}
	if err := cache.Publish(cacheBus{p.b}, p.node, bucket, key); err != nil {
		p.log.Debug("object cache invalidation not published", "err", err)
	}
}

// cacheBus adapts the bus to the cache's small interface.
type cacheBus struct{ b *bus.NATS }

func (c cacheBus) Publish(subject string, data []byte) error { return c.b.Publish(subject, data) }

func (c cacheBus) Subscribe(pattern string, fn func(string, []byte)) (cache.Subscription, error) {
	return c.b.Subscribe(pattern, fn)
}

// trashAdmin adapts the recycle bin's errors to the control API's.
type trashAdmin struct{ s *trash.Store }

func trashAPIErr(err error) error {
	switch {
	case errors.Is(err, trash.ErrNotFound):
		return fmt.Errorf("%w: %v", admin.ErrTrashNotFound, err)
	case errors.Is(err, trash.ErrConflict), errors.Is(err, trash.ErrBucketGone):
		return fmt.Errorf("%w: %v", admin.ErrTrashConflict, err)
	}
	return err
}

func (t trashAdmin) List(ctx context.Context, tenant string) ([]admin.TrashItem, error) {
	items, err := t.s.List(ctx, tenant)
	return items, trashAPIErr(err)
}

func (t trashAdmin) Restore(ctx context.Context, tenant, id string, overwrite bool) (admin.TrashItem, error) {
	it, err := t.s.Restore(ctx, tenant, id, overwrite)
	return it, trashAPIErr(err)
}

func (t trashAdmin) Purge(ctx context.Context, tenant, id string) error {
	return trashAPIErr(t.s.Purge(ctx, tenant, id))
}
