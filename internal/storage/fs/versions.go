package fs

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/facet-sds/facet/internal/storage"
	bolt "go.etcd.io/bbolt"
)

// Versions. A key's latest version, when it is not a delete marker, stays
// where an unversioned object lives (obj/<key>), so reads and listings of
// latest versions cost what they cost in a never-versioned bucket. Every
// other version, and a delete marker, lives in ver/ under the key and its
// inverted stamp, newest first. Each version has its own data file (an
// overwrite writes a new one; a metadata-only copy links the old file
// under a new name), so deleting one version never touches another's
// bytes, and its own record: metadata, checksums and the filters' reverse
// plan (in Meta.System). A version id is the inverted stamp in 16 hex
// digits, which sorts the newest first, then 16 random ones.

var _ storage.Versions = (*Store)(nil)

const versionIDLen = 32

// nextStamp returns a stamp newer than every one given before and than
// floor. It runs inside index transactions, which the committer runs one
// at a time, so stamps follow commit order.
func (s *Store) nextStamp(floor uint64) uint64 {
	st := max(uint64(time.Now().UnixNano()), s.lastStamp.Load()+1, floor+1)
	s.lastStamp.Store(st)
	return st
}

// stampOf orders a record; records older than stamps use their time.
func stampOf(r *objRecord) uint64 {
	if r.Stamp != 0 {
		return r.Stamp
	}
	return uint64(r.Modified)
}

func newVersionID(stamp uint64) string {
	return fmt.Sprintf("%016x", ^stamp) + newID()[:16]
}

// parseVersionID returns the stamp in a version id; null has none.
func parseVersionID(id string) (uint64, error) {
	if len(id) != versionIDLen || !validID(id) {
		return 0, fmt.Errorf("fs: version id %q: %w", id, storage.ErrInvalidVersion)
	}
	inv, err := strconv.ParseUint(id[:16], 16, 64)
	if err != nil {
		return 0, fmt.Errorf("fs: version id %q: %w", id, storage.ErrInvalidVersion)
	}
	return ^inv, nil
}

// shownID is a record's version id as S3 shows it.
func shownID(r *objRecord) string {
	if r.VersionID == "" {
		return storage.NullVersion
	}
	return r.VersionID
}

func verKey(key string, stamp uint64) []byte {
	b := make([]byte, 0, len(key)+9)
	b = append(b, key...)
	b = append(b, 0)
	return binary.BigEndian.AppendUint64(b, ^stamp)
}

// verPrefix is what every ver/ key of key starts with (keys hold no NUL).
func verPrefix(key string) []byte { return append([]byte(key), 0) }

// verObjectKey is the object key of a ver/ index key.
func verObjectKey(k []byte) []byte {
	if len(k) < 9 || k[len(k)-9] != 0 {
		return k
	}
	return k[:len(k)-9]
}

// bucketState reads a bucket's versioning state.
func bucketState(b *bolt.Bucket) (storage.Versioning, error) {
	var rec bucketRecord
	if err := decode(b.Get(infoKey), &rec); err != nil {
		return "", err
	}
	return rec.Versioning, nil
}

// firstVersion returns the newest ver/ entry of key.
func firstVersion(ver *bolt.Bucket, key string) (k []byte, rec objRecord, ok bool, err error) {
	if ver == nil {
		return nil, rec, false, nil
	}
	p := verPrefix(key)
	k, v := ver.Cursor().Seek(p)
	if k == nil || !bytes.HasPrefix(k, p) || len(k) != len(p)+8 {
		return nil, rec, false, nil
	}
	return bytes.Clone(k), rec, true, decode(v, &rec)
}

// firstStamp is the stamp of key's newest ver/ entry, read from its
// index key alone (0 when there is none).
func firstStamp(ver *bolt.Bucket, key string) uint64 {
	p := verPrefix(key)
	k, _ := ver.Cursor().Seek(p)
	if k == nil || !bytes.HasPrefix(k, p) || len(k) != len(p)+8 {
		return 0
	}
	return ^binary.BigEndian.Uint64(k[len(p):])
}

// findVersion returns the ver/ entry of key with version id (null: "");
// b is the storage bucket, whose vnl/ table points at null versions.
func findVersion(b, ver *bolt.Bucket, key, id string) (k []byte, rec objRecord, ok bool, err error) {
	if ver == nil {
		return nil, rec, false, nil
	}
	if nul := b.Bucket(nulBucket); id == "" && nul != nil {
		k = nul.Get([]byte(key))
		if k == nil {
			return nil, rec, false, nil
		}
		v := ver.Get(k)
		if v == nil {
			return nil, rec, false, fmt.Errorf("fs: null version index of %q names a missing version", key)
		}
		if err := decode(v, &rec); err != nil {
			return nil, rec, false, err
		}
		return bytes.Clone(k), rec, true, nil
	}
	if id != "" {
		st, err := parseVersionID(id)
		if err != nil {
			return nil, rec, false, err
		}
		k = verKey(key, st)
		v := ver.Get(k)
		if v == nil {
			return nil, rec, false, nil
		}
		if err := decode(v, &rec); err != nil {
			return nil, rec, false, err
		}
		return k, rec, rec.VersionID == id, nil
	}
	// A key has at most one null version; an index versioned before
	// vnl/ existed has no pointer to it, so look.
	p := verPrefix(key)
	c := ver.Cursor()
	for k, v := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, v = c.Next() {
		if len(k) != len(p)+8 {
			continue
		}
		rec = objRecord{} // decoding leaves absent fields as they were
		if err := decode(v, &rec); err != nil {
			return nil, rec, false, err
		}
		if rec.VersionID == "" {
			return bytes.Clone(k), rec, true, nil
		}
	}
	return nil, objRecord{}, false, nil
}

// keepVersion files rec in ver/ under its stamp, pointing vnl/ at it
// when it is the null version.
func keepVersion(b, ver *bolt.Bucket, key string, rec *objRecord) error {
	k := verKey(key, rec.Stamp)
	if err := put(ver, k, rec); err != nil {
		return err
	}
	if nul := b.Bucket(nulBucket); nul != nil && rec.VersionID == "" {
		return nul.Put([]byte(key), k)
	}
	return nil
}

// dropVersion removes the ver/ entry k of key, and vnl/'s pointer at it.
func dropVersion(b, ver *bolt.Bucket, key string, k []byte, rec *objRecord) error {
	if err := ver.Delete(k); err != nil {
		return err
	}
	if nul := b.Bucket(nulBucket); nul != nil && rec.VersionID == "" {
		return nul.Delete([]byte(key))
	}
	return nil
}

// current returns the obj/ record of key; an undecodable one is logged
// and treated as absent, as prevFile always did.
func (s *Store) current(objs *bolt.Bucket, bucket, key string) (objRecord, bool) {
	rec, ok, err := getObj(objs, key)
	if err != nil {
		s.log.Error("fs: replacing undecodable index entry", "bucket", bucket, "key", key, "err", err)
		return objRecord{}, false
	}
	return rec, ok
}

// place makes rec (a new object version, or a delete marker) the latest
// version of key as the bucket's versioning state says, and returns the
// data files no record refers to any more. Never versioned: rec replaces
// the object (a marker just deletes it). Enabled: the previous latest
// version is kept. Suspended: rec is the null version, replacing the
// previous null version wherever it is.
func (s *Store) place(b *bolt.Bucket, bucket, key string, rec *objRecord) (dropped []string, err error) {
	state, err := bucketState(b)
	if err != nil {
		return nil, err
	}
	objs, err := sub(b, objBucket)
	if err != nil {
		return nil, err
	}
	old, hasOld := s.current(objs, bucket, key)
	if state == storage.VersioningOff {
		rec.VersionID, rec.shown = "", ""
		if hasOld {
			dropped = append(dropped, old.File)
		}
		if rec.Marker {
			return dropped, objs.Delete([]byte(key))
		}
		rec.Stamp = s.nextStamp(stampOf(&old))
		return dropped, put(objs, []byte(key), rec)
	}
	ver, err := sub(b, verBucket)
	if err != nil {
		return nil, err
	}
	var floor uint64
	if hasOld {
		floor = stampOf(&old)
	}
	floor = max(floor, firstStamp(ver, key))
	rec.Stamp = s.nextStamp(floor)
	rec.VersionID = ""
	defer func() { rec.shown = shownID(rec) }()
	if state == storage.VersioningEnabled {
		rec.VersionID = newVersionID(rec.Stamp)
	} else {
		k, null, ok, err := findVersion(b, ver, key, "")
		if err != nil {
			return nil, err
		}
		if ok {
			if !null.Marker {
				dropped = append(dropped, null.File)
			}
			if err := dropVersion(b, ver, key, k, &null); err != nil {
				return nil, err
			}
		}
	}
	if hasOld {
		if old.VersionID == "" && state == storage.VersioningSuspended {
			dropped = append(dropped, old.File)
		} else {
			old.Stamp = stampOf(&old)
			if err := keepVersion(b, ver, key, &old); err != nil {
				return nil, err
			}
		}
	}
	if rec.Marker {
		if err := objs.Delete([]byte(key)); err != nil {
			return nil, err
		}
		return dropped, keepVersion(b, ver, key, rec)
	}
	return dropped, put(objs, []byte(key), rec)
}

// promote makes key's newest kept version its latest once the latest was
// deleted for good, unless that version is a delete marker, which stays
// where markers live.
func promote(b, objs, ver *bolt.Bucket, key string) error {
	k, rec, ok, err := firstVersion(ver, key)
	if err != nil || !ok || rec.Marker {
		return err
	}
	if err := dropVersion(b, ver, key, k, &rec); err != nil {
		return err
	}
	return put(objs, []byte(key), &rec)
}

// SetVersioning sets a bucket's versioning state; a bucket cannot be made
// never-versioned again.
func (s *Store) SetVersioning(ctx context.Context, bucket string, v storage.Versioning) error {
	if v != storage.VersioningEnabled && v != storage.VersioningSuspended {
		return fmt.Errorf("fs: versioning state %q: %w", v, storage.ErrInvalidVersion)
	}
	return s.update(ctx, func(tx *bolt.Tx) error {
		b, err := bucketOf(tx, bucket)
		if err != nil {
			return err
		}
		var rec bucketRecord
		if err := decode(b.Get(infoKey), &rec); err != nil {
			return err
		}
		for _, name := range [][]byte{verBucket, nulBucket} {
			if _, err := b.CreateBucketIfNotExists(name); err != nil {
				return fmt.Errorf("fs: versions of %q: %w", bucket, err)
			}
		}
		rec.Versioning = v
		return put(b, infoKey, &rec)
	})
}

// BucketVersioning returns a bucket's versioning state.
func (s *Store) BucketVersioning(ctx context.Context, bucket string) (storage.Versioning, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	var v storage.Versioning
	err := s.db.View(func(tx *bolt.Tx) error {
		b, err := bucketOf(tx, bucket)
		if err != nil {
			return err
		}
		v, err = bucketState(b)
		return err
	})
	return v, err
}

// lookupVersion finds the record a read of bucket/key names: its latest
// version for id "", else the version with that id ("null" included).
// The info it returns shows the version id wherever the bucket is or was
// versioned.
func (s *Store) lookupVersion(bucket, key, id string) (objRecord, storage.ObjectInfo, error) {
	var rec objRecord
	var info storage.ObjectInfo
	want := id
	if id == storage.NullVersion {
		want = ""
	} else if id != "" {
		if _, err := parseVersionID(id); err != nil {
			return rec, info, err
		}
	}
	err := s.db.View(func(tx *bolt.Tx) error {
		b, err := bucketOf(tx, bucket)
		if err != nil {
			return err
		}
		state, err := bucketState(b)
		if err != nil {
			return err
		}
		objs, err := sub(b, objBucket)
		if err != nil {
			return err
		}
		cur, ok, err := getObj(objs, key)
		if err != nil {
			return err
		}
		found := ok && (id == "" || cur.VersionID == want)
		if found {
			rec = cur
		} else {
			ver := b.Bucket(verBucket)
			var vr objRecord
			var has bool
			if id == "" {
				_, vr, has, err = firstVersion(ver, key)
				has = has && vr.Marker
			} else {
				_, vr, has, err = findVersion(b, ver, key, want)
			}
			switch {
			case err != nil:
				return err
			case has && vr.Marker:
				return &storage.DeleteMarkerError{VersionID: shownID(&vr), LastModified: time.Unix(0, vr.Modified).UTC(), Named: id != ""}
			case has:
				rec = vr
			case id == "":
				return fmt.Errorf("fs: %q/%q: %w", bucket, key, storage.ErrObjectNotFound)
			default:
				return fmt.Errorf("fs: %q/%q version %q: %w", bucket, key, id, storage.ErrNoSuchVersion)
			}
		}
		info = rec.info(bucket, key)
		if state != storage.VersioningOff {
			info.VersionID = shownID(&rec)
		}
		return nil
	})
	return rec, info, err
}

// GetObjectVersion opens one version's data file.
func (s *Store) GetObjectVersion(ctx context.Context, bucket, key, versionID string, rng *storage.Range) (io.ReadCloser, storage.ObjectInfo, error) {
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return nil, storage.ObjectInfo{}, err
		}
		rec, info, err := s.lookupVersion(bucket, key, versionID)
		if err != nil {
			return nil, storage.ObjectInfo{}, err
		}
		start, length, err := clampRange(rng, rec.Stored)
		if err != nil {
			return nil, storage.ObjectInfo{}, fmt.Errorf("fs: %q/%q: %w", bucket, key, err)
		}
		f, err := s.openData(rec.File)
		if errors.Is(err, os.ErrNotExist) && attempt < maxOpenRetries {
			// Replaced or deleted between lookup and open: look again.
			continue
		}
		if err != nil {
			return nil, storage.ObjectInfo{}, fmt.Errorf("fs: open data of %q/%q: %w", bucket, key, err)
		}
		// The file is open: whatever happens to the key now, the
		// stream reads this version (stream.go).
		return s.io.open(ctx, f, start, length, rec.Stored), info, nil
	}
}

// HeadObjectVersion returns one version's info.
func (s *Store) HeadObjectVersion(ctx context.Context, bucket, key, versionID string) (storage.ObjectInfo, error) {
	if err := ctx.Err(); err != nil {
		return storage.ObjectInfo{}, err
	}
	_, info, err := s.lookupVersion(bucket, key, versionID)
	return info, err
}

// DeleteVersion deletes one version for good, or with id "" deletes as
// S3's DELETE without a version id does.
func (s *Store) DeleteVersion(ctx context.Context, bucket, key, versionID string) (storage.DeleteResult, error) {
	var res storage.DeleteResult
	var dropped []string
	var err error
	if versionID == "" {
		now := time.Now().UnixNano()
		err = s.update(ctx, func(tx *bolt.Tx) error {
			res, dropped = storage.DeleteResult{}, nil
			b, err := bucketOf(tx, bucket)
			if err != nil {
				return err
			}
			marker := objRecord{Marker: true, Modified: now}
			if dropped, err = s.place(b, bucket, key, &marker); err != nil {
				return err
			}
			if marker.shown != "" {
				res = storage.DeleteResult{VersionID: marker.shown, DeleteMarker: true}
			}
			return nil
		})
	} else {
		want := versionID
		if versionID == storage.NullVersion {
			want = ""
		} else if _, perr := parseVersionID(versionID); perr != nil {
			return res, perr
		}
		err = s.update(ctx, func(tx *bolt.Tx) error {
			res, dropped = storage.DeleteResult{}, nil
			b, err := bucketOf(tx, bucket)
			if err != nil {
				return err
			}
			objs, err := sub(b, objBucket)
			if err != nil {
				return err
			}
			ver := b.Bucket(verBucket)
			cur, hasCur := s.current(objs, bucket, key)
			if hasCur && cur.VersionID == want {
				res = storage.DeleteResult{VersionID: versionID}
				dropped = []string{cur.File}
				if err := objs.Delete([]byte(key)); err != nil {
					return err
				}
				if ver == nil {
					return nil
				}
				return promote(b, objs, ver, key)
			}
			k, rec, ok, err := findVersion(b, ver, key, want)
			if err != nil || !ok {
				return err
			}
			first, _, _, err := firstVersion(ver, key)
			if err != nil {
				return err
			}
			latest := !hasCur && bytes.Equal(first, k)
			res = storage.DeleteResult{VersionID: versionID, DeleteMarker: rec.Marker}
			if !rec.Marker {
				dropped = []string{rec.File}
			}
			if err := dropVersion(b, ver, key, k, &rec); err != nil {
				return err
			}
			if latest {
				return promote(b, objs, ver, key)
			}
			return nil
		})
	}
	if err != nil {
		return storage.DeleteResult{}, err
	}
	s.removeData(dropped...)
	return res, nil
}

// ListObjectVersions lists versions and delete markers in key order, each
// key's newest first, merging the latest versions (obj/) with the others
// (ver/) in one pass over both.
func (s *Store) ListObjectVersions(ctx context.Context, bucket string, opts storage.ListVersionsOptions) (storage.ListVersionsResult, error) {
	var res storage.ListVersionsResult
	if err := ctx.Err(); err != nil {
		return res, err
	}
	if m := opts.VersionIDMarker; m != "" && m != storage.NullVersion {
		if _, err := parseVersionID(m); err != nil {
			return res, err
		}
	}
	l := versionLister{bucket: bucket, res: &res, max: opts.MaxKeys, prefix: []byte(opts.Prefix), delim: []byte(opts.Delimiter)}
	if l.max <= 0 {
		l.max = defaultMaxKeys
	}
	err := s.db.View(func(tx *bolt.Tx) error {
		b, err := bucketOf(tx, bucket)
		if err != nil {
			return err
		}
		objs, err := sub(b, objBucket)
		if err != nil {
			return err
		}
		l.b = b
		return l.run(objs, b.Bucket(verBucket), opts)
	})
	if err != nil {
		return storage.ListVersionsResult{}, err
	}
	return res, nil
}

type versionLister struct {
	b             *bolt.Bucket
	bucket        string
	res           *storage.ListVersionsResult
	max, n        int
	prefix, delim []byte
}

// emit adds one entry, or marks the page truncated when it is full.
func (l *versionLister) emit(key []byte, v []byte, latest bool) (bool, error) {
	if l.n == l.max {
		l.res.IsTruncated = true
		return false, nil
	}
	var rec objRecord
	if err := decode(v, &rec); err != nil {
		return false, err
	}
	info := rec.info(l.bucket, string(key))
	info.VersionID, info.IsLatest, info.DeleteMarker = shownID(&rec), latest, rec.Marker
	l.res.Versions = append(l.res.Versions, info)
	l.res.NextKeyMarker, l.res.NextVersionIDMarker = info.Key, info.VersionID
	l.n++
	return true, nil
}

func (l *versionLister) run(objs, ver *bolt.Bucket, opts storage.ListVersionsOptions) error {
	oc := objs.Cursor()
	var vc *bolt.Cursor
	if ver != nil {
		vc = ver.Cursor()
	}
	var ok, vk, vv []byte
	seekVer := func(to []byte) {
		if vc != nil {
			if bytes.Compare(to, l.prefix) < 0 {
				to = l.prefix
			}
			vk, vv = vc.Seek(to)
		}
	}
	seek := func(to []byte) {
		if bytes.Compare(to, l.prefix) < 0 {
			to = l.prefix
		}
		ok, _ = oc.Seek(to)
		seekVer(to)
	}
	var markerPrefix []byte
	switch {
	case opts.KeyMarker == "":
		seek(l.prefix)
	case opts.VersionIDMarker == "":
		markerPrefix = []byte(opts.KeyMarker)
		// After every version of the marker key: obj/ holds it as
		// itself, ver/ as "<key>\0...".
		seek(append([]byte(opts.KeyMarker), 0))
		seekVer(append([]byte(opts.KeyMarker), 1))
	default:
		// The rest of the marker key's versions after the marker one.
		mk := opts.KeyMarker
		seek(append([]byte(mk), 0))
		if vc != nil && bytes.HasPrefix([]byte(mk), l.prefix) {
			hasObj := objs.Get([]byte(mk)) != nil
			var cur objRecord
			curIsMarker := false
			if hasObj {
				if err := decode(objs.Get([]byte(mk)), &cur); err != nil {
					return err
				}
				curIsMarker = shownID(&cur) == opts.VersionIDMarker
			}
			start := append([]byte(mk), 1) // none of the key's versions
			if curIsMarker {
				start = verPrefix(mk)
			} else {
				want := opts.VersionIDMarker
				if want == storage.NullVersion {
					want = ""
				}
				k, _, found, err := findVersion(l.b, ver, mk, want)
				if err != nil && !errors.Is(err, storage.ErrInvalidVersion) {
					return err
				}
				if found {
					start = append(bytes.Clone(k), 0)
				}
			}
			for k, v := vc.Seek(start); k != nil && bytes.Equal(verObjectKey(k), []byte(mk)); k, v = vc.Next() {
				more, err := l.emit([]byte(mk), v, false)
				if err != nil || !more {
					return err
				}
			}
		}
		seekVer(append([]byte(mk), 1))
	}
	for {
		var key []byte
		switch {
		case ok != nil && (vk == nil || bytes.Compare(ok, verObjectKey(vk)) <= 0):
			key = bytes.Clone(ok)
		case vk != nil:
			key = bytes.Clone(verObjectKey(vk))
		}
		if key == nil || !bytes.HasPrefix(key, l.prefix) {
			return nil
		}
		if len(l.delim) > 0 {
			if i := bytes.Index(key[len(l.prefix):], l.delim); i >= 0 {
				p := key[:len(l.prefix)+i+len(l.delim)]
				if !bytes.Equal(p, markerPrefix) {
					if l.n == l.max {
						l.res.IsTruncated = true
						return nil
					}
					l.res.CommonPrefixes = append(l.res.CommonPrefixes, string(p))
					l.res.NextKeyMarker, l.res.NextVersionIDMarker = string(p), ""
					l.n++
				}
				next := successor(p)
				if next == nil {
					return nil
				}
				seek(next)
				continue
			}
		}
		latest := true
		if ok != nil && bytes.Equal(ok, key) {
			more, err := l.emit(key, objs.Get(key), true)
			if err != nil || !more {
				return err
			}
			latest = false
			ok, _ = oc.Next()
		}
		for vk != nil && bytes.Equal(verObjectKey(vk), key) {
			more, err := l.emit(key, vv, latest)
			if err != nil || !more {
				return err
			}
			latest = false
			vk, vv = vc.Next()
		}
	}
}

// linkData gives a data file a second name, for a version that shares
// its bytes with another (a metadata-only copy): each version then owns
// a file of its own and deleting one leaves the other.
func (s *Store) linkData(id string) (string, error) {
	if !validID(id) {
		return "", fmt.Errorf("fs: index holds a malformed file id %q", id)
	}
	nid := newID()
	if err := os.Link(s.dataPath(id), s.dataPath(nid)); err != nil {
		return "", fmt.Errorf("fs: link data file: %w", err)
	}
	if err := s.syncDir(s.shardDir(int(hexByte(nid)))); err != nil {
		_ = os.Remove(s.dataPath(nid))
		return "", err
	}
	return nid, nil
}

func hexByte(id string) byte {
	b, _ := hex.DecodeString(id[:2])
	return b[0]
}
