package meta

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/facet-sds/facet/internal/ownership"
	"github.com/facet-sds/facet/internal/s3err"
)

// Cache answers the S3 front end's per-request metadata questions —
// whose is this access key, whose is this bucket — from memory, so that a
// request costs no metadata-store round trip and keeps being served while
// the store is away.
//
// Correctness comes from invalidation, not from the TTL: whoever revokes a
// key, deletes a tenant or creates or deletes a bucket drops the record
// here at once (same process) and on every other node through the bus
// (internal/fleet). The TTL is the safety net for an invalidation lost
// while the bus was away: a record older than it is read again before
// use. When that read fails because the store is unreachable, the old
// record is served (fail static); a store that says the record is gone is
// obeyed. Only positive answers are cached: an unknown key or bucket
// always asks the store.
type Cache struct {
	store  CacheStore
	ttl    time.Duration
	now    func() time.Time
	health Health // nil means always up
	// notify tells the other nodes of records dropped here; nil tells
	// nobody.
	notify func(Invalidation)

	mu      sync.RWMutex
	keys    map[string]cachedCred
	buckets map[string]cachedBucket
	gen     uint64 // bumped by every invalidation

	hits, misses, stale atomic.Uint64
}

// CacheStore is what the cache reads through to; *Store is one. It spells
// out the methods of s3api.Credentials and s3api.Buckets (which the Cache
// serves, checked in contract_test.go) so that meta does not import the
// front end.
type CacheStore interface {
	LookupAccessKey(ctx context.Context, accessKey string) (tenant, secret string, err error)
	ClaimBucket(ctx context.Context, tenant, bucket string) error
	ReleaseBucket(ctx context.Context, tenant, bucket string) error
	BucketOwner(ctx context.Context, bucket string) (tenant string, created time.Time, err error)
	ListBuckets(ctx context.Context, tenant string) ([]ownership.Bucket, error)
	// ForgetAccessKeys drops keys from the store's own secret cache, so
	// that a re-read really reads the store.
	ForgetAccessKeys(accessKeys ...string)
}

// Health is the node's knowledge of the store's reachability, shared by
// the cache (which records its reads) and the fleet sync (which records
// its polls); fleet.Health is one.
type Health interface {
	StoreDown() bool
	StoreFailed(err error)
	StoreOK()
}

// Invalidation names cached records that changed in the store: access keys
// revoked, tenants deleted (with all their keys), buckets created or
// deleted. The fleet's invalidation message carries it to the other nodes.
type Invalidation struct {
	Keys    []string `json:"keys,omitempty"`
	Tenants []string `json:"tenants,omitempty"`
	Buckets []string `json:"buckets,omitempty"`
}

// CacheConfig configures a Cache.
type CacheConfig struct {
	Store CacheStore
	// TTL bounds how long a record is used without a re-read; 0 means
	// DefaultCacheTTL.
	TTL time.Duration
	// Health is shared with the fleet sync; nil means always up.
	Health Health
	// Notify tells the other nodes of records this node dropped (after
	// it dropped them here); nil tells nobody.
	Notify func(Invalidation)
	// Now is the clock (tests move it past the TTL); nil means time.Now.
	Now func() time.Time
}

// CacheStats counts lookups by result.
type CacheStats struct{ Hits, Misses, Stale uint64 }

type cachedCred struct {
	tenant, secret string
	fetched        time.Time
}

type cachedBucket struct {
	tenant  string
	created time.Time
	fetched time.Time
}

// DefaultCacheTTL bounds how long a record lost by an invalidation (bus
// down at the time) can outlive its change in the store.
const DefaultCacheTTL = 10 * time.Second

// storeReadTimeout bounds a re-read on the request path: a store that does
// not answer in time is treated as down and the cached record served.
const storeReadTimeout = time.Second

// NewCache returns an empty cache over cfg.Store.
func NewCache(cfg CacheConfig) *Cache {
	ttl := cfg.TTL
	if ttl <= 0 {
		ttl = DefaultCacheTTL
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	return &Cache{store: cfg.Store, ttl: ttl, now: now, health: cfg.Health, notify: cfg.Notify,
		keys: map[string]cachedCred{}, buckets: map[string]cachedBucket{}}
}

func (c *Cache) down() bool { return c.health != nil && c.health.StoreDown() }

// failed tells whether err means the store could not answer (as opposed
// to an answer), and records it.
func (c *Cache) failed(err error) bool {
	if err == nil || errors.Is(err, s3err.ErrUnknownAccessKey) || errors.Is(err, s3err.ErrNoSuchBucket) ||
		errors.Is(err, s3err.ErrBucketOwnedByOther) || errors.Is(err, s3err.ErrBucketOwnedByYou) {
		if c.health != nil {
			c.health.StoreOK()
		}
		return false
	}
	if errors.Is(err, context.Canceled) {
		return false
	}
	if c.health != nil {
		c.health.StoreFailed(err)
	}
	return true
}

// LookupAccessKey implements s3api.Credentials.
func (c *Cache) LookupAccessKey(ctx context.Context, accessKey string) (string, string, error) {
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
		if errors.Is(err, s3err.ErrUnknownAccessKey) {
			delete(c.keys, accessKey)
		}
		return "", "", err
	case c.gen == gen:
		c.keys[accessKey] = cachedCred{tenant: tenant, secret: secret, fetched: c.now()}
	}
	return tenant, secret, nil
}

// BucketOwner implements s3api.Buckets.
func (c *Cache) BucketOwner(ctx context.Context, bucket string) (string, time.Time, error) {
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
		if errors.Is(err, s3err.ErrNoSuchBucket) {
			delete(c.buckets, bucket)
		}
		return "", time.Time{}, err
	case c.gen == gen:
		c.buckets[bucket] = cachedBucket{tenant: tenant, created: created, fetched: c.now()}
	}
	return tenant, created, nil
}

func (c *Cache) count(hit, stale bool) {
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
func (c *Cache) ClaimBucket(ctx context.Context, tenant, bucket string) error {
	err := c.store.ClaimBucket(ctx, tenant, bucket)
	if !c.failed(err) && err == nil {
		// A node may still hold a previous owner whose release it missed.
		c.changed(Invalidation{Buckets: []string{bucket}})
	}
	return err
}

// ReleaseBucket implements s3api.Buckets; the record is dropped whatever
// the outcome (dropping costs one read).
func (c *Cache) ReleaseBucket(ctx context.Context, tenant, bucket string) error {
	err := c.store.ReleaseBucket(ctx, tenant, bucket)
	c.failed(err)
	c.changed(Invalidation{Buckets: []string{bucket}})
	return err
}

// changed drops the records m names here, then on every other node when
// notify is set.
func (c *Cache) changed(m Invalidation) {
	c.Invalidate(m)
	if c.notify != nil {
		c.notify(m)
	}
}

// ListBuckets implements s3api.Buckets: a listing always reads the store.
func (c *Cache) ListBuckets(ctx context.Context, tenant string) ([]ownership.Bucket, error) {
	out, err := c.store.ListBuckets(ctx, tenant)
	c.failed(err)
	return out, err
}

// Invalidate drops the records m names (this node only).
func (c *Cache) Invalidate(m Invalidation) {
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

// StaleAll makes every record due for a re-read (invalidations may have
// been missed), keeping it to serve should the store be away.
func (c *Cache) StaleAll() {
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

// Stats returns the lookup counts so far.
func (c *Cache) Stats() CacheStats {
	return CacheStats{Hits: c.hits.Load(), Misses: c.misses.Load(), Stale: c.stale.Load()}
}

// Collectors count the lookups by result for /metrics.
func (c *Cache) Collectors() []prometheus.Collector {
	lookups := func(result string, v *atomic.Uint64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "facet_meta_cache_lookups_total",
			Help:        "credential and bucket-ownership lookups by result: hit (fresh record), miss (read from the store), stale (served from memory while the store was unreachable)",
			ConstLabels: prometheus.Labels{"result": result}}, func() float64 { return float64(v.Load()) })
	}
	return []prometheus.Collector{lookups("hit", &c.hits), lookups("miss", &c.misses), lookups("stale", &c.stale)}
}
