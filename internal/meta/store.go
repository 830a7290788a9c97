// Package meta owns Facet's metadata store: tenants, their access keys (with
// secrets encrypted at rest under the server's master key), the global
// bucket-ownership table, and the control plane's records: groups,
// policies, SLOs, tenants' data-key ids and the filter registry, with a
// change version that data-plane nodes poll. It implements the interfaces
// the S3 front end consumes (s3api.Credentials, s3api.Buckets; checked in
// contract_test.go, since meta links nothing of the data path), answering
// with internal/s3err's sentinels and internal/ownership's records.
//
// One Store, two backends under a small transactional key/value boundary
// (kv.go): the embedded one keeps everything in one bbolt file,
// <data>/meta.db; the shared one lives in Redis (redis.go), for several
// gateways over one control plane.
package meta

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// Errors returned by Store. Bucket and access-key errors are s3err's.
var (
	ErrInvalidTenantName = errors.New("invalid tenant name")
	ErrTenantExists      = errors.New("tenant already exists")
	ErrTenantNotFound    = errors.New("no such tenant")
	ErrTenantNotEmpty    = errors.New("tenant still owns buckets")
	ErrKeyNotFound       = errors.New("no such access key")
	ErrInvalidBucketName = errors.New("invalid bucket name")

	ErrInvalidGroupName   = errors.New("invalid group name")
	ErrGroupExists        = errors.New("group already exists")
	ErrGroupNotFound      = errors.New("no such group")
	ErrInvalidGroupMember = errors.New("invalid group member")
	ErrNotGroupMember     = errors.New("not a member of the group")

	ErrInvalidPolicy   = errors.New("invalid policy record")
	ErrPolicyNotFound  = errors.New("no such policy")
	ErrPolicyNameTaken = errors.New("policy name already in use")

	ErrSLONotFound      = errors.New("no SLO for tenant")
	ErrInvalidClassName = errors.New("invalid request class name")

	ErrInvalidFilterName = errors.New("invalid filter name")
	ErrFilterNotFound    = errors.New("no such filter")

	// ErrInvalidBlob rejects a JSON blob (compiled policy, SLO, filter
	// spec) that is not a JSON document.
	ErrInvalidBlob = errors.New("invalid JSON blob")
)

// Tenant is an account: it owns access keys and buckets.
type Tenant struct {
	Name    string
	Created time.Time
	// AllowPlainNBD lets NBD clients that skipped TLS open this tenant's
	// volumes, on a server started with --nbd-allow-plain-loopback and
	// from loopback only; otherwise they must authenticate (TLS-PSK).
	AllowPlainNBD bool
}

// KeyInfo describes an access key without its secret.
type KeyInfo struct {
	AccessKey string
	Tenant    string
	Created   time.Time
}

// NewKey is a freshly created access key. It is the only value that ever
// carries the plaintext secret out of the store.
type NewKey struct {
	KeyInfo
	SecretKey string
}

// defaultLockWait bounds how long Open waits for another process to release
// meta.db when the caller's context has no deadline.
const defaultLockWait = 5 * time.Second

// Store is the metadata store. It is safe for concurrent use.
type Store struct {
	kv     kv
	sealer *sealer
	log    *slog.Logger
	now    func() time.Time

	// Decrypted secrets, so SigV4 verification does not pay a bbolt read and
	// an AES-GCM open per request. gen counts revocations: a lookup only
	// caches what it read if no revocation happened meanwhile, so a revoked
	// key can never be re-inserted by a lookup that raced with the revoke.
	mu    sync.RWMutex
	cache map[string]cachedKey
	gen   uint64

	// charges commits concurrent usage charges together (quota.go).
	charges chargeQueue
}

type cachedKey struct{ tenant, secret string }

// Open opens or creates the embedded store at path (a bbolt file).
// masterKey (MasterKeySize bytes) encrypts access-key secrets; a store
// created with one key refuses to open with another (ErrWrongMasterKey)
// rather than failing every request later. OpenURL chooses the backend.
func Open(ctx context.Context, path string, masterKey []byte, logger *slog.Logger) (*Store, error) {
	sl, err := newSealer(masterKey)
	if err != nil {
		return nil, err
	}
	wait := defaultLockWait
	if dl, ok := ctx.Deadline(); ok {
		wait = max(time.Until(dl), time.Millisecond)
	}
	db, err := openBolt(path, wait)
	if err != nil {
		return nil, fmt.Errorf("meta: %w", err)
	}
	return newStore(ctx, db, sl, logger, "metadata store "+path, slog.String("backend", "bolt"), slog.String("path", path))
}

// newStore wraps an open kv, checks the master key against it and takes
// ownership of it: on error, db is closed.
func newStore(ctx context.Context, db kv, sl *sealer, logger *slog.Logger, what string, where ...slog.Attr) (*Store, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Store{kv: db, sealer: sl, log: logger, now: time.Now, cache: map[string]cachedKey{}}
	if err := s.checkMasterKey(ctx); err != nil {
		_ = db.close() // the key error is the one worth reporting
		return nil, err
	}
	if err := s.checkFormat(ctx, what); err != nil {
		_ = db.close()
		return nil, err
	}
	logger.LogAttrs(ctx, slog.LevelInfo, "metadata store open", where...)
	return s, nil
}

// Close releases the store's file or connections.
func (s *Store) Close() error {
	if err := s.kv.close(); err != nil {
		return fmt.Errorf("meta: close: %w", err)
	}
	return nil
}

const (
	checkKey       = "master_key_check"
	checkAD        = "facet/master-key-check"
	checkPlaintext = "facet master key check v1"
)

// checkMasterKey seals a known value on first use and opens it on every
// later start, to tell a wrong master key from a corrupt record.
func (s *Store) checkMasterKey(ctx context.Context) error {
	return s.kv.update(ctx, func(tx kvTx) error {
		raw, err := tx.get(tblSystem, checkKey)
		if err != nil {
			return err
		}
		if raw == nil {
			sealed, err := s.sealer.seal([]byte(checkPlaintext), checkAD)
			if err != nil {
				return err
			}
			return putRecord(tx, tblSystem, checkKey, &checkRecord{V: recordVersion, Sealed: sealed})
		}
		var rec checkRecord
		if err := decodeRecord(raw, &rec); err != nil {
			return fmt.Errorf("meta: %s: %w", checkKey, err)
		}
		pt, err := s.sealer.open(rec.Sealed, checkAD)
		if err != nil || string(pt) != checkPlaintext {
			return fmt.Errorf("meta: %w", ErrWrongMasterKey)
		}
		return nil
	})
}

// Records are JSON with a version number; decoding is strict so that a
// record written by a newer Facet is refused, never half-understood.
const recordVersion = 1

type versioned interface{ version() int }

type tenantRecord struct {
	V             int       `json:"v"`
	Name          string    `json:"name"`
	Created       time.Time `json:"created"`
	AllowPlainNBD bool      `json:"allow_plain_nbd,omitempty"`
}

func (r tenantRecord) tenant() Tenant {
	return Tenant{Name: r.Name, Created: r.Created, AllowPlainNBD: r.AllowPlainNBD}
}

type keyRecord struct {
	V         int       `json:"v"`
	AccessKey string    `json:"access_key"`
	Tenant    string    `json:"tenant"`
	Sealed    []byte    `json:"secret_sealed"` // nonce || AES-256-GCM(secret), AD = access key id
	Created   time.Time `json:"created"`
}

type bucketRecord struct {
	V       int       `json:"v"`
	Bucket  string    `json:"bucket"`
	Tenant  string    `json:"tenant"`
	Created time.Time `json:"created"`
}

type checkRecord struct {
	V      int    `json:"v"`
	Sealed []byte `json:"sealed"`
}

func (r *tenantRecord) version() int { return r.V }
func (r *keyRecord) version() int    { return r.V }
func (r *bucketRecord) version() int { return r.V }
func (r *checkRecord) version() int  { return r.V }

func decodeRecord(raw []byte, rec versioned) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(rec); err != nil {
		return fmt.Errorf("decode record: %w", err)
	}
	if v := rec.version(); v != recordVersion {
		return fmt.Errorf("decode record: unsupported version %d", v)
	}
	return nil
}

func putRecord(tx kvTx, table, key string, rec versioned) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("encode record: %w", err)
	}
	return tx.put(table, key, b)
}

// getRecord loads table/key into rec and reports whether it existed.
func getRecord(tx kvTx, table, key string, rec versioned) (bool, error) {
	raw, err := tx.get(table, key)
	if err != nil || raw == nil {
		return false, err
	}
	if err := decodeRecord(raw, rec); err != nil {
		return false, fmt.Errorf("%s/%q: %w", table, key, err)
	}
	return true, nil
}

// timestamp is the store's notion of now, without the monotonic reading so
// that values compare equal after a JSON round trip.
func (s *Store) timestamp() time.Time { return s.now().UTC().Round(0) }

// scanRecords decodes every record of table under prefix, in key order.
func scanRecords[R any, P interface {
	*R
	versioned
}](tx kvTx, table, prefix string, each func(P) error) error {
	return tx.scan(table, prefix, func(key string, val []byte) error {
		var rec R
		if err := decodeRecord(val, P(&rec)); err != nil {
			return fmt.Errorf("%s/%q: %w", table, key, err)
		}
		return each(&rec)
	})
}

// validName reports whether name is 1 to 63 characters, a lower-case letter
// or digit first, then lower-case letters, digits, '-', '_' or '.': the
// shape of every name the policy language refers to (tenants, groups).
func validName(name string) bool {
	if len(name) < 1 || len(name) > 63 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case i > 0 && (c == '-' || c == '_' || c == '.'):
		default:
			return false
		}
	}
	return true
}

// checkBlob requires a non-empty, well-formed JSON document: blobs are
// opaque to the store but are decoded by every node that loads them.
func checkBlob(what string, b json.RawMessage) error {
	if len(bytes.TrimSpace(b)) == 0 || !json.Valid(b) {
		return fmt.Errorf("%w: %s is not a JSON document", ErrInvalidBlob, what)
	}
	return nil
}

// deleteRecord deletes table/key, failing with notFound when it is absent,
// and bumps the change version.
func deleteRecord(tx kvTx, table, key string, notFound error) error {
	raw, err := tx.get(table, key)
	if err != nil {
		return err
	}
	if raw == nil {
		return fmt.Errorf("%w: %q", notFound, key)
	}
	if err := tx.del(table, key); err != nil {
		return err
	}
	_, err = bumpVersion(tx)
	return err
}
