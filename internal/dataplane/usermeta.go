package dataplane

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"strings"
	"time"

	"github.com/facet-sds/facet/internal/filter"
	"github.com/facet-sds/facet/internal/storage"
)

// User metadata under encryption (issue 22 item 5). An object whose bytes
// the encryption filter sealed gets its user metadata (x-amz-meta-*)
// sealed too, with AES-256-GCM under its owner's current data key, bound
// to the owner, bucket and key: the backend (the bbolt index, a remote
// store's metadata) holds only ciphertext under UserMetaKey, and reads
// open it again, so HEAD, GET, copies and the filters that match on
// metadata see it as the client wrote it. SealUserMeta is a decorator of
// the Plane's backend, so every read and write path passes through it.
//
// Keys stay in clear: listing answers keys in order and by prefix, from
// the index (bbolt) or the remote store's own listing, so an opaque key
// would break ListObjects; and an open multipart upload's metadata is
// sealed when the upload completes, not while it is open.

// UserMetaKey is the system-metadata key of sealed user metadata.
const UserMetaKey = "facet.um"

// BucketOwners names the tenant that owns a bucket (meta.Cache).
type BucketOwners interface {
	BucketOwner(ctx context.Context, bucket string) (string, time.Time, error)
}

// SealUserMeta returns b sealing the user metadata of encrypted objects
// with keys of their owners; it keeps b's versions (storage.Versions).
func SealUserMeta(b storage.Backend, keys filter.KeyProvider, owners BucketOwners) storage.Backend {
	s := &metaSealer{Backend: b, keys: keys, owners: owners}
	if v, ok := b.(storage.Versions); ok {
		return &metaSealerVersions{metaSealer: s, Versions: v}
	}
	return s
}

type metaSealer struct {
	storage.Backend
	keys   filter.KeyProvider
	owners BucketOwners
}

// encrypted reports whether the object meta describes went through the
// encryption filter (whole, or any of its parts).
func encrypted(system map[string]string) bool {
	if strings.Contains(system[PlanKey], `"encryption"`) {
		if p, err := PlanOf(system); err == nil && hasEncryption(p) {
			return true
		}
	}
	parts, err := PartPlansOf(system)
	if err != nil {
		return false
	}
	for _, pp := range parts {
		if hasEncryption(pp.Plan) {
			return true
		}
	}
	return false
}

func hasEncryption(p Plan) bool {
	for _, r := range p.Records {
		if r.Filter == "encryption" {
			return true
		}
	}
	return false
}

func userMetaAD(tenant, bucket, key, kid string) []byte {
	return []byte("facet/usermeta/v1\x00" + tenant + "\x00" + bucket + "\x00" + key + "\x00" + kid)
}

func gcm(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// seal moves m.UserMeta into m.System[UserMetaKey] as ciphertext when
// the object is encrypted; otherwise it drops a stale sealed copy.
func (s *metaSealer) seal(ctx context.Context, bucket, key string, m *storage.ObjectMeta) error {
	if _, ok := m.System[UserMetaKey]; ok {
		m.System = maps.Clone(m.System)
		delete(m.System, UserMetaKey)
	}
	if len(m.UserMeta) == 0 || !encrypted(m.System) {
		return nil
	}
	tenant, _, err := s.owners.BucketOwner(ctx, bucket)
	if err != nil {
		return fmt.Errorf("seal user metadata: owner of %q: %w", bucket, err)
	}
	kid, dk, err := s.keys.CurrentKey(ctx, tenant)
	if err != nil {
		return fmt.Errorf("seal user metadata: key of %q: %w", tenant, err)
	}
	aead, err := gcm(dk)
	if err != nil {
		return fmt.Errorf("seal user metadata: %w", err)
	}
	plain, err := json.Marshal(m.UserMeta)
	if err != nil {
		return err
	}
	nonce := make([]byte, aead.NonceSize())
	_, _ = rand.Read(nonce)
	ct := aead.Seal(nonce, nonce, plain, userMetaAD(tenant, bucket, key, kid))
	m.System = maps.Clone(m.System)
	if m.System == nil {
		m.System = map[string]string{}
	}
	m.System[UserMetaKey] = kid + ":" + base64.StdEncoding.EncodeToString(ct)
	m.UserMeta = nil
	return nil
}

// errUserMeta reports sealed user metadata that does not open.
var errUserMeta = errors.New("sealed user metadata does not open (wrong key or altered record)")

// open puts sealed user metadata back into info.Meta.UserMeta.
func (s *metaSealer) open(ctx context.Context, info *storage.ObjectInfo) error {
	v, ok := info.Meta.System[UserMetaKey]
	if !ok {
		return nil
	}
	kid, enc, ok := strings.Cut(v, ":")
	ct, err := base64.StdEncoding.DecodeString(enc)
	if !ok || err != nil {
		return fmt.Errorf("%s/%s: %w: %w", info.Bucket, info.Key, errUserMeta, filter.ErrIntegrity)
	}
	tenant, _, err := s.owners.BucketOwner(ctx, info.Bucket)
	if err != nil {
		return fmt.Errorf("open user metadata: owner of %q: %w", info.Bucket, err)
	}
	dk, err := s.keys.Key(ctx, tenant, kid)
	if err != nil {
		return fmt.Errorf("open user metadata: key %q of %q: %w", kid, tenant, err)
	}
	aead, err := gcm(dk)
	if err != nil || len(ct) < aead.NonceSize() {
		return fmt.Errorf("%s/%s: %w: %w", info.Bucket, info.Key, errUserMeta, filter.ErrIntegrity)
	}
	plain, err := aead.Open(nil, ct[:aead.NonceSize()], ct[aead.NonceSize():], userMetaAD(tenant, info.Bucket, info.Key, kid))
	var um map[string]string
	if err != nil || json.Unmarshal(plain, &um) != nil {
		return fmt.Errorf("%s/%s: %w: %w", info.Bucket, info.Key, errUserMeta, filter.ErrIntegrity)
	}
	info.Meta.UserMeta = um
	info.Meta.System = maps.Clone(info.Meta.System)
	delete(info.Meta.System, UserMetaKey)
	return nil
}

// sealing wraps in's seal so that the user metadata is sealed once the
// reverse plan is known (it is recorded at seal time).
func (s *metaSealer) sealing(ctx context.Context, bucket, key string, in storage.PutInput) storage.PutInput {
	inner := in.Seal
	in.Seal = func(m *storage.ObjectMeta) error {
		if inner != nil {
			if err := inner(m); err != nil {
				return err
			}
		}
		return s.seal(ctx, bucket, key, m)
	}
	return in
}

func (s *metaSealer) PutObject(ctx context.Context, bucket, key string, in storage.PutInput) (storage.ObjectInfo, error) {
	info, err := s.Backend.PutObject(ctx, bucket, key, s.sealing(ctx, bucket, key, in))
	if err == nil {
		err = s.open(ctx, &info)
	}
	return info, err
}

func (s *metaSealer) CompleteUpload(ctx context.Context, bucket, key, uploadID string, parts []storage.CompletePart, meta storage.ObjectMeta) (storage.ObjectInfo, error) {
	if err := s.seal(ctx, bucket, key, &meta); err != nil {
		return storage.ObjectInfo{}, err
	}
	info, err := s.Backend.CompleteUpload(ctx, bucket, key, uploadID, parts, meta)
	if err == nil {
		err = s.open(ctx, &info)
	}
	return info, err
}

func (s *metaSealer) UpdateMeta(ctx context.Context, bucket, key string, meta storage.ObjectMeta) (storage.ObjectInfo, error) {
	if err := s.seal(ctx, bucket, key, &meta); err != nil {
		return storage.ObjectInfo{}, err
	}
	info, err := s.Backend.UpdateMeta(ctx, bucket, key, meta)
	if err == nil {
		err = s.open(ctx, &info)
	}
	return info, err
}

func (s *metaSealer) HeadObject(ctx context.Context, bucket, key string) (storage.ObjectInfo, error) {
	info, err := s.Backend.HeadObject(ctx, bucket, key)
	if err == nil {
		err = s.open(ctx, &info)
	}
	return info, err
}

func (s *metaSealer) GetObject(ctx context.Context, bucket, key string, rng *storage.Range) (io.ReadCloser, storage.ObjectInfo, error) {
	return s.opened(ctx, func() (io.ReadCloser, storage.ObjectInfo, error) { return s.Backend.GetObject(ctx, bucket, key, rng) })
}

func (s *metaSealer) opened(ctx context.Context, get func() (io.ReadCloser, storage.ObjectInfo, error)) (io.ReadCloser, storage.ObjectInfo, error) {
	rc, info, err := get()
	if err != nil {
		return rc, info, err
	}
	if err := s.open(ctx, &info); err != nil {
		rc.Close()
		return nil, storage.ObjectInfo{}, err
	}
	return rc, info, nil
}

// metaSealerVersions keeps the version API of the backend it wraps.
type metaSealerVersions struct {
	*metaSealer
	storage.Versions
}

// The methods both embed resolve to the sealer's.
func (s *metaSealerVersions) GetObject(ctx context.Context, bucket, key string, rng *storage.Range) (io.ReadCloser, storage.ObjectInfo, error) {
	return s.metaSealer.GetObject(ctx, bucket, key, rng)
}

func (s *metaSealerVersions) GetObjectVersion(ctx context.Context, bucket, key, id string, rng *storage.Range) (io.ReadCloser, storage.ObjectInfo, error) {
	return s.opened(ctx, func() (io.ReadCloser, storage.ObjectInfo, error) {
		return s.Versions.GetObjectVersion(ctx, bucket, key, id, rng)
	})
}

func (s *metaSealerVersions) HeadObjectVersion(ctx context.Context, bucket, key, id string) (storage.ObjectInfo, error) {
	info, err := s.Versions.HeadObjectVersion(ctx, bucket, key, id)
	if err == nil {
		err = s.open(ctx, &info)
	}
	return info, err
}
