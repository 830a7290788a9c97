package server

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/facet-sds/facet/internal/s3api"
)

// metaCache answers the S3 front end's per-request metadata questions —
// whose is this access key, whose is this bucket — from memory, so that a
// request costs no metadata-store round trip and keeps being served while
// the store is away.
//
// Correctness comes from invalidation, not from the TTL: whoever revokes a
// key, deletes a tenant or creates or deletes a bucket drops the record
// here at once (same process) and on every other node through the bus
// (fleetSync). The TTL is the safety net for an invalidation lost while
// the bus was away: a record older than it is read again before use. When
// that read fails because the store is unreachable, the old record is
// served (fail static); a store that says the record is gone is obeyed.
// Only positive answers are cached: an unknown key or bucket always asks
// the store.
type metaCache struct {
	store  cacheStore
	ttl    time.Duration
	now    func() time.Time
	health storeHealth // set by fleetSync; nil means always up
	// notify drops records here and on the other nodes (fleetSync sets
	// it); nil drops them here only.
	notify func(InvalidateMsg)

	mu      sync.RWMutex
	keys    map[string]cachedCred
	buckets map[string]cachedBucket
	gen     uint64 // bumped by every invalidation

	hits, misses, stale atomic.Uint64
}

// cacheStore is what the cache reads through to; *meta.Store is one.
type cacheStore interface {
	s3api.Credentials
	s3api.Buckets
	// ForgetAccessKeys drops keys from the store's own secret cache, so
	// that a re-read really reads the store.
	ForgetAccessKeys(accessKeys ...string)
}

// storeHealth is the node's knowledge of the store's reachability.
type storeHealth interface {
	storeDown() bool
	storeFailed(err error)
	storeOK()
}

type cachedCred struct {
	tenant, secret string
	fetched        time.Time
}

type cachedBucket struct {
	tenant  string
	created time.Time
	fetched time.Time
}

var (
	_ s3api.Credentials = (*metaCache)(nil)
	_ s3api.Buckets     = (*metaCache)(nil)
)

// defaultCacheTTL bounds how long a record lost by an invalidation (bus
// down at the time) can outlive its change in the store.
const defaultCacheTTL = 10 * time.Second

// storeReadTimeout bounds a re-read on the request path: a store that does
// not answer in time is treated as down and the cached record served.
const storeReadTimeout = time.Second

func newMetaCache(store cacheStore, ttl time.Duration) *metaCache {
	if ttl <= 0 {
		ttl = defaultCacheTTL
	}
	return &metaCache{store: store, ttl: ttl, now: time.Now, keys: map[string]cachedCred{}, buckets: map[string]cachedBucket{}}
}

func (c *metaCache) down() bool { return c.health != nil && c.health.storeDown() }

// failed tells whether err means the store could not answer (as opposed
// to an answer), and records it.
func (c *metaCache) failed(err error) bool {
	if err == nil || errors.Is(err, s3api.ErrUnknownAccessKey) || errors.Is(err, s3api.ErrNoSuchBucket) ||
		errors.Is(err, s3api.ErrBucketOwnedByOther) || errors.Is(err, s3api.ErrBucketOwnedByYou) {
		if c.health != nil {
			c.health.storeOK()
		}
		return false
	}
	if errors.Is(err, context.Canceled) {
		return false
	}
	if c.health != nil {
		c.health.storeFailed(err)
	}
	return true
}

// LookupAccessKey implements s3api.Credentials.
func (c *metaCache) LookupAccessKey(ctx context.Context, accessKey string) (string, string, error) {
	c.mu.RLock()
	e, ok := c.keys[accessKey]
	gen := c.gen
	c.mu.RUnlock()
	if ok && (c.now().Sub(e.fetched) < c.ttl || c.down()) {
		c.count(ok, c.now().Sub(e.fetched) >= c.ttl)
		return e.tenant, e.secret, nil
	}
	c.store.ForgetAccessKeys(accessKey)
	rctx, cancel := context.WithTimeout(ctx, storeReadTimeout)
	tenant, secret, err := c.store.LookupAccessKey(rctx, accessKey)
	cancel()
	if c.failed(err) && ok {
		c.count(true, true)
		return e.tenant, e.secret, nil
	}
	c.count(false, false)
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case err != nil:
		if errors.Is(err, s3api.ErrUnknownAccessKey) {
			delete(c.keys, accessKey)
		}
		return "", "", err
	case c.gen == gen:
		c.keys[accessKey] = cachedCred{tenant: tenant, secret: secret, fetched: c.now()}
	}
	return tenant, secret, nil
}

// BucketOwner implements s3api.Buckets.
func (c *metaCache) BucketOwner(ctx context.Context, bucket string) (string, time.Time, error) {
	c.mu.RLock()
	e, ok := c.buckets[bucket]
	gen := c.gen
	c.mu.RUnlock()
	if ok && (c.now().Sub(e.fetched) < c.ttl || c.down()) {
		c.count(ok, c.now().Sub(e.fetched) >= c.ttl)
		return e.tenant, e.created, nil
	}
	rctx, cancel := context.WithTimeout(ctx, storeReadTimeout)
	tenant, created, err := c.store.BucketOwner(rctx, bucket)
	cancel()
	if c.failed(err) && ok {
		c.count(true, true)
		return e.tenant, e.created, nil
	}
	c.count(false, false)
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case err != nil:
		if errors.Is(err, s3api.ErrNoSuchBucket) {
			delete(c.buckets, bucket)
		}
		return "", time.Time{}, err
	case c.gen == gen:
		c.buckets[bucket] = cachedBucket{tenant: tenant, created: created, fetched: c.now()}
	}
	return tenant, created, nil
}

func (c *metaCache) count(hit, stale bool) {
	switch {
	case stale:
		c.stale.Add(1)
	case hit:
		c.hits.Add(1)
	default:
		c.misses.Add(1)
	}
}

// ClaimBucket implements s3api.Buckets; the claim is the store's.
func (c *metaCache) ClaimBucket(ctx context.Context, tenant, bucket string) error {
	err := c.store.ClaimBucket(ctx, tenant, bucket)
	if !c.failed(err) && err == nil {
		// A node may still hold a previous owner whose release it missed.
		c.changed(InvalidateMsg{Buckets: []string{bucket}})
	}
	return err
}

// ReleaseBucket implements s3api.Buckets; the record is dropped whatever
// the outcome (dropping costs one read).
func (c *metaCache) ReleaseBucket(ctx context.Context, tenant, bucket string) error {
	err := c.store.ReleaseBucket(ctx, tenant, bucket)
	c.failed(err)
	c.changed(InvalidateMsg{Buckets: []string{bucket}})
	return err
}

// changed drops the records m names, on every node when notify is set.
func (c *metaCache) changed(m InvalidateMsg) {
	if c.notify != nil {
		c.notify(m)
		return
	}
	c.invalidate(m)
}

// ListBuckets implements s3api.Buckets: a listing always reads the store.
func (c *metaCache) ListBuckets(ctx context.Context, tenant string) ([]s3api.BucketEntry, error) {
	out, err := c.store.ListBuckets(ctx, tenant)
	c.failed(err)
	return out, err
}

// invalidate drops the records m names.
func (c *metaCache) invalidate(m InvalidateMsg) {
	var forget []string
	c.mu.Lock()
	c.gen++
	for _, k := range m.Keys {
		delete(c.keys, k)
		forget = append(forget, k)
	}
	if len(m.Tenants) > 0 {
		gone := map[string]bool{}
		for _, t := range m.Tenants {
			gone[t] = true
		}
		for k, e := range c.keys {
			if gone[e.tenant] {
				delete(c.keys, k)
				forget = append(forget, k)
			}
		}
		for b, e := range c.buckets {
			if gone[e.tenant] {
				delete(c.buckets, b)
			}
		}
	}
	for _, b := range m.Buckets {
		delete(c.buckets, b)
	}
	c.mu.Unlock()
	if len(forget) > 0 {
		c.store.ForgetAccessKeys(forget...)
	}
}

// staleAll makes every record due for a re-read (invalidations may have
// been missed), keeping it to serve should the store be away.
func (c *metaCache) staleAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	for k, e := range c.keys {
		e.fetched = time.Time{}
		c.keys[k] = e
	}
	for b, e := range c.buckets {
		e.fetched = time.Time{}
		c.buckets[b] = e
	}
}

func (c *metaCache) collectors() []prometheus.Collector {
	lookups := func(result string, v *atomic.Uint64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "facet_meta_cache_lookups_total",
			Help:        "credential and bucket-ownership lookups by result: hit (fresh record), miss (read from the store), stale (served from memory while the store was unreachable)",
			ConstLabels: prometheus.Labels{"result": result}}, func() float64 { return float64(v.Load()) })
	}
	return []prometheus.Collector{lookups("hit", &c.hits), lookups("miss", &c.misses), lookups("stale", &c.stale)}
}
