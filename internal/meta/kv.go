package meta

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/facet-sds/facet/internal/diskformat"
)

// The storage boundary under Store. Store speaks only in tables of string
// keys and opaque values inside transactions; bbolt implements it here and
// Redis in redis.go (optimistic WATCH/MULTI/EXEC transactions over one hash
// and one lexically ordered sorted set per table), so the record logic above
// it is the same for both.

// Tables. Index tables hold composite keys "<owner>\x00<name>" with empty
// values so that a prefix scan lists one owner's entries in name order.
const (
	tblSystem        = "system"         // store-wide records (master key check)
	tblTenants       = "tenants"        // tenant name -> tenantRecord
	tblKeys          = "keys"           // access key id -> keyRecord
	tblTenantKeys    = "tenant_keys"    // tenant\x00accessKey -> ""
	tblBuckets       = "buckets"        // bucket name -> bucketRecord
	tblTenantBuckets = "tenant_buckets" // tenant\x00bucket -> ""
	tblGroups        = "groups"         // group name -> groupRecord
	tblPolicies      = "policies"       // policy id -> policyRecord
	tblPolicyNames   = "policy_names"   // policy name -> policy id
	tblSLOs          = "slos"           // tenant, or tenant\x00class -> sloRecord
	tblDataKeys      = "data_keys"      // tenant -> dataKeysRecord
	tblFilters       = "filters"        // filter name -> filterRecord
	tblLeases        = "leases"         // lease name -> leaseRecord
	tblPools         = "pools"          // pool name -> poolRecord
	tblVolumes       = "volumes"        // volume name -> volumeRecord
	tblFilterBlobs   = "filter_blobs"   // blob key -> raw bytes (WASM modules, dependency files)
	tblFilterDeps    = "filter_deps"    // dependency name -> dependencyRecord
	tblContextRules  = "context_rules"  // tenant -> contextRulesRecord (request classes)
	tblNBDKeys       = "nbd_keys"       // tenant -> nbdKeyRecord (NBD TLS pre-shared key, sealed)
	tblUsage         = "usage"          // tenant, or tenant\x00bucket -> usageRecord (quota limits and usage; bbolt only, Redis has redisquota.go)
)

var allTables = []string{
	tblSystem, tblTenants, tblKeys, tblTenantKeys, tblBuckets, tblTenantBuckets,
	tblGroups, tblPolicies, tblPolicyNames, tblSLOs, tblDataKeys, tblFilters, tblLeases,
	tblPools, tblVolumes,
	tblFilterBlobs, tblFilterDeps, tblContextRules, tblNBDKeys, tblUsage,
}

// indexKey builds the composite key of an index table. Tenant names, access
// key ids and bucket names can never contain NUL, so the split is unambiguous.
func indexKey(owner, name string) string { return owner + "\x00" + name }

// indexPrefix is the scan prefix for all of one owner's index entries.
func indexPrefix(owner string) string { return owner + "\x00" }

// kv is a transactional key/value store made of named tables. Transactions
// are serializable. An implementation may run fn more than once (optimistic
// concurrency control retries on conflict), so fn must not leave effects
// outside the transaction: it resets whatever it accumulates.
type kv interface {
	// view runs fn in a read-only transaction.
	view(ctx context.Context, fn func(tx kvTx) error) error
	// update runs fn in a read-write transaction; writes are durable when
	// update returns nil and discarded when fn returns an error.
	update(ctx context.Context, fn func(tx kvTx) error) error
	close() error
}

// kvTx is one transaction. Values returned by get and passed to scan are only
// valid inside the transaction.
type kvTx interface {
	// get returns nil, nil for an absent key.
	get(table, key string) ([]byte, error)
	put(table, key string, val []byte) error
	del(table, key string) error
	// scan calls fn for every key starting with prefix, in byte order.
	scan(table, prefix string, fn func(key string, val []byte) error) error
}

// boltKV implements kv on a bbolt file.
type boltKV struct{ db *bolt.DB }

// openBolt opens (or creates) the bbolt file and its tables. bbolt holds an
// exclusive file lock, so a second process fails after lockWait instead of
// sharing the file.
func openBolt(path string, lockWait time.Duration) (*boltKV, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: lockWait, FreelistType: bolt.FreelistMapType})
	if err != nil {
		if errors.Is(err, bolt.ErrTimeout) {
			return nil, fmt.Errorf("open %s: locked by another process: %w", path, err)
		}
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	// A store written by a newer release is refused before this binary
	// writes anything into it (checkFormat, later, migrates older ones).
	if err := db.View(func(tx *bolt.Tx) error {
		if tx.Bucket([]byte(tblSystem)) == nil {
			return nil // new
		}
		stored, _, err := readFormat(boltTx{tx})
		if err != nil {
			return err
		}
		_, err = diskformat.Plan("metadata store "+path, stored, FormatVersion, formatSteps())
		return err
	}); err != nil {
		_ = db.Close()
		return nil, err
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, t := range allTables {
			if _, err := tx.CreateBucketIfNotExists([]byte(t)); err != nil {
				return fmt.Errorf("create table %s: %w", t, err)
			}
		}
		return nil
	})
	if err != nil {
		_ = db.Close() // the create error is the one worth reporting
		return nil, fmt.Errorf("init %s: %w", path, err)
	}
	return &boltKV{db: db}, nil
}

func (b *boltKV) view(ctx context.Context, fn func(kvTx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return b.db.View(func(tx *bolt.Tx) error { return fn(boltTx{tx}) })
}

func (b *boltKV) update(ctx context.Context, fn func(kvTx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return b.db.Update(func(tx *bolt.Tx) error { return fn(boltTx{tx}) })
}

func (b *boltKV) close() error { return b.db.Close() }

type boltTx struct{ tx *bolt.Tx }

func (t boltTx) table(name string) (*bolt.Bucket, error) {
	b := t.tx.Bucket([]byte(name))
	if b == nil {
		return nil, fmt.Errorf("meta: table %q missing", name)
	}
	return b, nil
}

func (t boltTx) get(table, key string) ([]byte, error) {
	b, err := t.table(table)
	if err != nil {
		return nil, err
	}
	return b.Get([]byte(key)), nil
}

func (t boltTx) put(table, key string, val []byte) error {
	b, err := t.table(table)
	if err != nil {
		return err
	}
	if val == nil {
		val = []byte{} // bbolt stores nil and empty alike, but be explicit
	}
	return b.Put([]byte(key), val)
}

func (t boltTx) del(table, key string) error {
	b, err := t.table(table)
	if err != nil {
		return err
	}
	return b.Delete([]byte(key))
}

func (t boltTx) scan(table, prefix string, fn func(string, []byte) error) error {
	b, err := t.table(table)
	if err != nil {
		return err
	}
	p := []byte(prefix)
	c := b.Cursor()
	for k, v := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, v = c.Next() {
		if err := fn(string(k), v); err != nil {
			return err
		}
	}
	return nil
}
