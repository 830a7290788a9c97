package meta

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/facet-sds/facet/internal/tlsconf"
)

// DefaultRedisPrefix is put in front of every Redis key the store uses, so
// that a Redis shared with other applications (or other Facet clusters,
// with ?prefix=) is safe.
const DefaultRedisPrefix = "facet:"

// redisKV implements kv on Redis. Each table is two Redis keys:
//
//	<prefix><table>        hash: key -> value
//	<prefix><table>:keys   sorted set of the same keys, all scored 0, so that
//	                       ZRANGEBYLEX scans a prefix in byte order
//
// Transactions are optimistic. A transaction WATCHes a table's hash before
// its first read of that table, buffers its writes, and commits them with
// MULTI/EXEC; EXEC fails if a watched hash changed since, and the whole
// transaction runs again. Every write touches the hash, so watching the hash
// covers the sorted set too. A read-only transaction that read more than
// once validates the same way (MULTI PING EXEC), so it never sees half of
// another transaction. MULTI/EXEC is also all-or-nothing in Redis's append
// only file, so a crash never leaves a half-applied transaction.
type redisKV struct {
	rdb    *redis.Client
	prefix string
	tables map[string]bool
}

// redisMaxAttempts bounds the retries of one conflicting transaction. The
// store's transactions are a few round trips, so hitting it means a storm
// of writers on one table, which the caller should hear about.
const redisMaxAttempts = 100

// errConflict reports a transaction that lost every attempt.
var errConflict = errors.New("too many conflicting concurrent transactions")

// openRedis connects to the Redis named by rawURL (redis:// or rediss://,
// the go-redis URL syntax, plus optional prefix= and, for rediss://, ca=
// query parameters: ca= names a PEM file of the CAs that verify the
// server instead of the system's roots).
// Errors and logs show the URL redacted: it may carry a password.
func openRedis(ctx context.Context, rawURL string, logger *slog.Logger) (*redisKV, string, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, "", errors.New("meta: malformed redis URL")
	}
	shown := u.Redacted()
	prefix := DefaultRedisPrefix
	q := u.Query()
	if q.Has("prefix") {
		prefix = q.Get("prefix")
		if prefix == "" {
			return nil, "", fmt.Errorf("meta: %s: empty prefix: every key must be prefixed so a shared Redis stays safe", shown)
		}
		q.Del("prefix")
		u.RawQuery = q.Encode()
	}
	if q.Has("skip_verify") {
		// go-redis would turn verification off; Facet always verifies.
		return nil, "", fmt.Errorf("meta: %s: skip_verify is not supported: give the server's CA with ca=FILE", shown)
	}
	caFile := q.Get("ca")
	if q.Has("ca") {
		if u.Scheme != "rediss" {
			return nil, "", fmt.Errorf("meta: %s: ca= verifies a TLS connection; use a rediss:// URL", shown)
		}
		q.Del("ca")
		u.RawQuery = q.Encode()
	}
	opts, err := redis.ParseURL(u.String())
	if err != nil {
		return nil, "", fmt.Errorf("meta: %s: %w", shown, err)
	}
	if opts.TLSConfig != nil {
		// rediss://: the server is verified against the system's roots,
		// or ca='s certificates.
		cfg, err := tlsconf.ClientConfig(caFile)
		if err != nil {
			return nil, "", fmt.Errorf("meta: %s: %w", shown, err)
		}
		cfg.ServerName = opts.TLSConfig.ServerName
		opts.TLSConfig = cfg
	}
	// Facet talks to plain Redis; the cloud maintenance handshake only
	// costs a failed command per connection.
	opts.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	// Callers bound store calls with context deadlines (the request path's
	// 1 s re-read, the fleet's 2 s health poll). Without this go-redis
	// ignores them on the socket and waits out its own timeouts, so a hung
	// (not dead) Redis stalled every such call for 5 s.
	opts.ContextTimeoutEnabled = true
	rdb := redis.NewClient(opts)
	if err := rdb.Ping(ctx).Err(); err != nil {
		_ = rdb.Close() // the ping error is the one worth reporting
		return nil, "", fmt.Errorf("meta: redis at %s: %w", shown, err)
	}
	r := &redisKV{rdb: rdb, prefix: prefix, tables: map[string]bool{}}
	for _, t := range allTables {
		r.tables[t] = true
	}
	r.warnIfVolatile(ctx, logger, shown)
	return r, shown, nil
}

// warnIfVolatile tells the operator when Redis would lose acknowledged
// metadata in a crash. Managed Redis often forbids CONFIG; that is not an
// error, just unknown.
func (r *redisKV) warnIfVolatile(ctx context.Context, logger *slog.Logger, shown string) {
	if logger == nil {
		return
	}
	cfg, err := r.rdb.ConfigGet(ctx, "appendonly").Result()
	if err != nil {
		logger.Debug("redis persistence unknown", "redis", shown, "err", err)
		return
	}
	if cfg["appendonly"] != "yes" {
		logger.Warn("redis metadata store runs without appendonly: changes acknowledged since the last snapshot are lost if Redis crashes", "redis", shown)
	}
}

func (r *redisKV) hashKey(table string) string { return r.prefix + table }
func (r *redisKV) setKey(table string) string  { return r.prefix + table + ":keys" }

func (r *redisKV) view(ctx context.Context, fn func(kvTx) error) error {
	return r.run(ctx, false, fn)
}

func (r *redisKV) update(ctx context.Context, fn func(kvTx) error) error {
	return r.run(ctx, true, fn)
}

func (r *redisKV) close() error { return r.rdb.Close() }

func (r *redisKV) run(ctx context.Context, writable bool, fn func(kvTx) error) error {
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		err := r.rdb.Watch(ctx, func(tx *redis.Tx) error {
			t := &redisTx{ctx: ctx, kv: r, tx: tx, writable: writable, watched: map[string]bool{}, writes: map[string]map[string]pending{}}
			if err := fn(t); err != nil {
				return err
			}
			return t.commit()
		})
		if !errors.Is(err, redis.TxFailedErr) {
			return err
		}
		if attempt == redisMaxAttempts {
			return fmt.Errorf("redis: %w (%d attempts)", errConflict, attempt)
		}
		// Jittered, growing backoff spreads the losers of a conflict apart.
		d := time.Duration(rand.Int64N(int64(min(attempt, 50)) * int64(200*time.Microsecond)))
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(d):
		}
	}
}

// pending is a buffered write: a new value, or a deletion.
type pending struct {
	val []byte
	del bool
}

type redisTx struct {
	ctx      context.Context
	kv       *redisKV
	tx       *redis.Tx
	writable bool
	watched  map[string]bool
	reads    int
	writes   map[string]map[string]pending // table -> key -> write
}

func (t *redisTx) watch(table string) error {
	if !t.kv.tables[table] {
		return fmt.Errorf("meta: table %q missing", table)
	}
	if t.watched[table] {
		return nil
	}
	if err := t.tx.Watch(t.ctx, t.kv.hashKey(table)).Err(); err != nil {
		return fmt.Errorf("redis WATCH: %w", err)
	}
	t.watched[table] = true
	return nil
}

func (t *redisTx) get(table, key string) ([]byte, error) {
	if w, ok := t.writes[table][key]; ok {
		if w.del {
			return nil, nil
		}
		return w.val, nil
	}
	if err := t.watch(table); err != nil {
		return nil, err
	}
	t.reads++
	v, err := t.tx.HGet(t.ctx, t.kv.hashKey(table), key).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("redis HGET: %w", err)
	}
	if v == nil {
		v = []byte{} // present but empty, as index entries are
	}
	return v, nil
}

func (t *redisTx) buffer(table, key string, w pending) error {
	if !t.writable {
		return errors.New("meta: write in a read-only transaction")
	}
	if !t.kv.tables[table] {
		return fmt.Errorf("meta: table %q missing", table)
	}
	m := t.writes[table]
	if m == nil {
		m = map[string]pending{}
		t.writes[table] = m
	}
	m[key] = w
	return nil
}

func (t *redisTx) put(table, key string, val []byte) error {
	return t.buffer(table, key, pending{val: slices.Clone(val)})
}

func (t *redisTx) del(table, key string) error {
	return t.buffer(table, key, pending{del: true})
}

// scanBatch bounds one HMGET, so a large table is read in round trips of
// reasonable size.
const scanBatch = 256

func (t *redisTx) scan(table, prefix string, fn func(string, []byte) error) error {
	if err := t.watch(table); err != nil {
		return err
	}
	lo, hi := "-", "+"
	if prefix != "" {
		lo = "[" + prefix
		if succ, ok := prefixEnd(prefix); ok {
			hi = "(" + succ
		}
	}
	t.reads++
	keys, err := t.tx.ZRangeByLex(t.ctx, t.kv.setKey(table), &redis.ZRangeBy{Min: lo, Max: hi}).Result()
	if err != nil {
		return fmt.Errorf("redis ZRANGEBYLEX: %w", err)
	}
	// Overlay this transaction's own writes.
	own := t.writes[table]
	for k, w := range own {
		if !w.del && strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)

	var fetch []string
	for _, k := range keys {
		if _, ok := own[k]; !ok {
			fetch = append(fetch, k)
		}
	}
	stored := make(map[string][]byte, len(fetch))
	for chunk := range slices.Chunk(fetch, scanBatch) {
		t.reads++
		vals, err := t.tx.HMGet(t.ctx, t.kv.hashKey(table), chunk...).Result()
		if err != nil {
			return fmt.Errorf("redis HMGET: %w", err)
		}
		for i, v := range vals {
			s, ok := v.(string)
			if !ok {
				// Both keys are written in one MULTI; only a foreign write
				// can split them.
				return fmt.Errorf("meta: table %s: key %q is listed but has no value", table, chunk[i])
			}
			stored[chunk[i]] = []byte(s)
		}
	}
	for _, k := range keys {
		v, ok := stored[k]
		if w, mine := own[k]; mine {
			if w.del {
				continue
			}
			v, ok = w.val, true
		}
		if !ok {
			continue
		}
		if err := fn(k, v); err != nil {
			return err
		}
	}
	return nil
}

// prefixEnd returns the smallest string greater than every string starting
// with prefix, or false when there is none (prefix is all 0xff bytes).
func prefixEnd(prefix string) (string, bool) {
	b := []byte(prefix)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return string(b[:i+1]), true
		}
	}
	return "", false
}

// commit applies the buffered writes in one MULTI/EXEC, which fails with
// redis.TxFailedErr if a watched table changed since it was read.
func (t *redisTx) commit() error {
	if len(t.writes) == 0 {
		if t.reads <= 1 {
			return nil // one command is atomic by itself
		}
		_, err := t.tx.TxPipelined(t.ctx, func(p redis.Pipeliner) error {
			p.Ping(t.ctx)
			return nil
		})
		return err
	}
	_, err := t.tx.TxPipelined(t.ctx, func(p redis.Pipeliner) error {
		for table, m := range t.writes {
			var (
				set        []any
				members    []redis.Z
				dels, zrem []string
			)
			for k, w := range m {
				if w.del {
					dels = append(dels, k)
					zrem = append(zrem, k)
					continue
				}
				set = append(set, k, w.val)
				members = append(members, redis.Z{Member: k})
			}
			h, z := t.kv.hashKey(table), t.kv.setKey(table)
			if len(set) > 0 {
				p.HSet(t.ctx, h, set...)
				p.ZAdd(t.ctx, z, members...)
			}
			if len(dels) > 0 {
				p.HDel(t.ctx, h, dels...)
				zremAny := make([]any, len(zrem))
				for i, k := range zrem {
					zremAny[i] = k
				}
				p.ZRem(t.ctx, z, zremAny...)
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.TxFailedErr) {
		return fmt.Errorf("redis MULTI/EXEC: %w", err)
	}
	return err
}

// RedisLog adapts a slog.Logger to go-redis's logger, whose messages
// (failed dials, pool trouble) otherwise go to stderr unstructured. go-redis
// keeps one process-wide logger, so installing it is the program's call,
// once, in main: redis.SetLogger(meta.RedisLog{Logger: logger}).
type RedisLog struct{ Logger *slog.Logger }

// Printf logs one go-redis message as a warning.
func (l RedisLog) Printf(ctx context.Context, format string, v ...any) {
	l.Logger.WarnContext(ctx, "redis client", "detail", fmt.Sprintf(format, v...))
}
