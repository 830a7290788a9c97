package fs

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
)

// The consistency check (facet fsck): do the index and the data files
// agree? It walks every index record (objects, versions, delete markers,
// uploads and parts), checks that each data file exists with the recorded
// size (and, through CheckOptions.Verify, its checksums), that versions
// form a well-made chain, that parts belong to an upload, and then walks
// the data directory for files no record refers to.

// Kinds of finding.
const (
	// FindMissing: a record's data file is absent.
	FindMissing = "missing"
	// FindSize: a data file's size is not the recorded one.
	FindSize = "size"
	// FindChecksum: stored bytes fail their recorded checksums.
	FindChecksum = "checksum"
	// FindDanglingPart: a part of an upload that no longer exists.
	FindDanglingPart = "dangling-part"
	// FindVersion: a version record that breaks the chain's rules.
	FindVersion = "version"
	// FindRecord: an index record that does not decode.
	FindRecord = "record"
	// FindOrphan and FindTemp are what an interrupted write leaves: a data
	// file no record refers to, and a temp file. Open removes both; they
	// are leftovers, not damage.
	FindOrphan = "orphan"
	FindTemp   = "temp"
)

// Finding is one disagreement between the index and the data files.
type Finding struct {
	Kind      string `json:"kind"`
	Bucket    string `json:"bucket,omitempty"`
	Key       string `json:"key,omitempty"`
	VersionID string `json:"version_id,omitempty"`
	Upload    string `json:"upload_id,omitempty"`
	Part      int    `json:"part,omitempty"`
	File      string `json:"file,omitempty"`
	Detail    string `json:"detail,omitempty"`
	// Leftover marks what an interrupted write leaves (Open removes it).
	Leftover bool `json:"leftover,omitempty"`
	// Repaired says the finding was repaired (CheckOptions.Repair).
	Repaired bool `json:"repaired,omitempty"`
}

// CheckReport is what Check found.
type CheckReport struct {
	Objects  int   `json:"objects"`
	Versions int   `json:"versions"`
	Markers  int   `json:"delete_markers"`
	Uploads  int   `json:"uploads"`
	Parts    int   `json:"parts"`
	Files    int   `json:"files"`
	Bytes    int64 `json:"bytes"`
	Verified int   `json:"verified"`
	// Unverified counts data files whose records carry no checksums
	// (written before they were kept).
	Unverified int       `json:"unverified"`
	Findings   []Finding `json:"findings,omitempty"`
	// Damage counts the findings that are not leftovers: what a healthy
	// store, crash or not, never has.
	Damage int `json:"damage"`
}

// ErrUnverifiable is what a Verify returns (wrapped) for a file whose
// record carries no checksums.
var ErrUnverifiable = errors.New("no checksums recorded")

// CheckOptions configure Check.
type CheckOptions struct {
	// Verify, when set, checks a data file's bytes against the checksums
	// recorded in its system metadata (integrity), returning an error for
	// damage; files of records without checksums are passed too.
	Verify func(ctx context.Context, f *os.File, size int64, system map[string]string) error
	// Repair, offline only, removes what is safe to remove: leftovers,
	// and dangling parts (record and file). Damage to objects is only
	// reported: their records stay, so that the operator decides (delete
	// the object, or put the file back from a copy).
	Repair bool
	// Grace leaves alone files younger than it, for a check of a running
	// store, whose writes in flight create files before their records.
	Grace time.Duration
}

// indexEntry is one index record that owns a data file (or a marker).
type indexEntry struct {
	kind      string // "object", "version", "part"
	bucket    string
	key       string
	versionID string
	upload    string
	part      int
	file      string // "" for a delete marker
	stored    int64
	system    map[string]string
	dbKey     []byte // the record's key in its bbolt bucket
}

// walkIndex calls fn for every record of the index that names a data
// file, and bad for each record it cannot decode or that breaks the
// version chain's rules (a flagged record that names a file is passed to
// fn too); uploads and delete markers are counted.
func walkIndex(tx *bolt.Tx, fn func(indexEntry) error, bad func(Finding)) (uploads, markers int, err error) {
	root := tx.Bucket(rootBucket)
	if root == nil {
		return 0, 0, nil
	}
	err = root.ForEachBucket(func(name []byte) error {
		bucket := string(name)
		b := root.Bucket(name)
		var brec bucketRecord
		if raw := b.Get(infoKey); raw != nil {
			if err := decode(raw, &brec); err != nil {
				bad(Finding{Kind: FindRecord, Bucket: bucket, Detail: "bucket record: " + err.Error()})
			}
		}
		ids := map[string]map[string]bool{} // key -> version ids seen
		seenID := func(key, id string) bool {
			if ids[key] == nil {
				ids[key] = map[string]bool{}
			}
			dup := ids[key][id]
			ids[key][id] = true
			return dup
		}
		if objs := b.Bucket(objBucket); objs != nil {
			if err := objs.ForEach(func(k, v []byte) error {
				var rec objRecord
				if err := decode(v, &rec); err != nil {
					bad(Finding{Kind: FindRecord, Bucket: bucket, Key: string(k), Detail: err.Error()})
					return nil
				}
				if rec.Marker || rec.File == "" {
					bad(Finding{Kind: FindVersion, Bucket: bucket, Key: string(k), VersionID: shownID(&rec), Detail: "a latest-object record without a data file (markers live in the version chain)"})
					if rec.File == "" {
						return nil
					}
				}
				seenID(string(k), shownID(&rec))
				return fn(indexEntry{kind: "object", bucket: bucket, key: string(k), versionID: rec.VersionID, file: rec.File, stored: rec.Stored, system: rec.Meta.System, dbKey: k})
			}); err != nil {
				return err
			}
		}
		if ver := b.Bucket(verBucket); ver != nil {
			if err := ver.ForEach(func(k, v []byte) error {
				key, stamp, ok := splitVerKey(k)
				var rec objRecord
				if err := decode(v, &rec); err != nil || !ok {
					bad(Finding{Kind: FindRecord, Bucket: bucket, Key: key, Detail: fmt.Sprintf("version record %x: %v", k, err)})
					return nil
				}
				f := Finding{Kind: FindVersion, Bucket: bucket, Key: key, VersionID: shownID(&rec)}
				switch {
				case brec.Versioning == "":
					f.Detail = "a kept version in a bucket that was never versioned"
				case stampOf(&rec) != stamp:
					f.Detail = fmt.Sprintf("filed under stamp %d, records %d", stamp, stampOf(&rec))
				case rec.Marker && rec.File != "":
					f.Detail = "a delete marker with a data file"
				case !rec.Marker && rec.File == "":
					f.Detail = "a version without a data file"
				case seenID(key, shownID(&rec)):
					f.Detail = "a version id the key holds twice"
				}
				if f.Detail != "" {
					bad(f)
				}
				if rec.File == "" {
					markers++
					return nil
				}
				// A flagged record's file stays live: nothing of a record
				// is ever taken for a leftover.
				return fn(indexEntry{kind: "version", bucket: bucket, key: key, versionID: shownID(&rec), file: rec.File, stored: rec.Stored, system: rec.Meta.System, dbKey: k})
			}); err != nil {
				return err
			}
		}
		open := map[string]bool{}
		if upl := b.Bucket(uplBucket); upl != nil {
			if err := upl.ForEach(func(k, _ []byte) error {
				if _, id, ok := bytes.Cut(k, []byte{0}); ok {
					open[string(id)] = true
					uploads++
				}
				return nil
			}); err != nil {
				return err
			}
		}
		if prt := b.Bucket(prtBucket); prt != nil {
			return prt.ForEach(func(k, v []byte) error {
				var rec partRecord
				if err := decode(v, &rec); err != nil || len(k) < 4 {
					bad(Finding{Kind: FindRecord, Bucket: bucket, Detail: fmt.Sprintf("part record %x: %v", k, err)})
					return nil
				}
				id, n := string(k[:len(k)-4]), int(binary.BigEndian.Uint32(k[len(k)-4:]))
				e := indexEntry{kind: "part", bucket: bucket, upload: id, part: n, file: rec.File, stored: rec.Stored, system: rec.System, dbKey: k}
				if !open[id] {
					e.kind = "dangling-part"
				}
				return fn(e)
			})
		}
		return nil
	})
	return uploads, markers, err
}

// splitVerKey parses a version record's key: the object key, a NUL, the
// inverted stamp.
func splitVerKey(k []byte) (key string, stamp uint64, ok bool) {
	if len(k) < 9 || k[len(k)-9] != 0 {
		return string(k), 0, false
	}
	return string(k[:len(k)-9]), ^binary.BigEndian.Uint64(k[len(k)-8:]), true
}

// Check checks the store in dir while no Facet has it open: the index is
// opened read-only, or read-write to repair (CheckOptions.Repair).
func Check(ctx context.Context, dir string, opts CheckOptions) (CheckReport, error) {
	path := filepath.Join(dir, "index.db")
	if _, err := os.Stat(path); err != nil {
		return CheckReport{}, fmt.Errorf("fs: check: %w", err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: !opts.Repair, Timeout: 2 * time.Second})
	if err != nil {
		if errors.Is(err, bolt.ErrTimeout) {
			return CheckReport{}, fmt.Errorf("fs: check: %s is in use: stop the Facet that holds it, or check it online (facet ctl fsck)", path)
		}
		return CheckReport{}, fmt.Errorf("fs: check: %w", err)
	}
	defer db.Close()
	if err := db.View(func(tx *bolt.Tx) error {
		stored, fresh, err := readFormat(tx)
		if err != nil || fresh {
			return err
		}
		return checkStored(path, stored)
	}); err != nil {
		return CheckReport{}, err
	}
	return check(ctx, db, filepath.Join(dir, "data"), opts)
}

// Check checks the running store: nothing is repaired, and files younger
// than opts.Grace (a minute when zero) are taken for writes in flight.
func (s *Store) Check(ctx context.Context, opts CheckOptions) (CheckReport, error) {
	opts.Repair = false
	if opts.Grace == 0 {
		opts.Grace = time.Minute
	}
	return check(ctx, s.db, s.dataDir, opts)
}

func check(ctx context.Context, db *bolt.DB, dataDir string, opts CheckOptions) (CheckReport, error) {
	var (
		rep      CheckReport
		live     = map[string]bool{}
		dangling []indexEntry
		now      = time.Now()
	)
	add := func(f Finding) {
		rep.Findings = append(rep.Findings, f)
		if !f.Leftover {
			rep.Damage++
		}
	}
	fileOf := func(id string) string { return filepath.Join(dataDir, id[:min(2, len(id))], id) }
	err := db.View(func(tx *bolt.Tx) error {
		var err error
		rep.Uploads, rep.Markers, err = walkIndex(tx, func(e indexEntry) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			switch e.kind {
			case "object":
				rep.Objects++
			case "version":
				rep.Versions++
			default:
				rep.Parts++
			}
			live[e.file] = true
			where := Finding{Bucket: e.bucket, Key: e.key, VersionID: e.versionID, Upload: e.upload, Part: e.part, File: e.file}
			if e.kind == "dangling-part" {
				f := where
				f.Kind, f.Detail = FindDanglingPart, "a part of an upload that no longer exists"
				add(f)
				dangling = append(dangling, e)
				return nil
			}
			if !validID(e.file) {
				f := where
				f.Kind, f.Detail = FindRecord, "the record names no valid data file"
				add(f)
				return nil
			}
			fh, err := os.Open(fileOf(e.file))
			if err != nil {
				f := where
				f.Kind, f.Detail = FindMissing, err.Error()
				add(f)
				return nil
			}
			defer fh.Close()
			st, err := fh.Stat()
			if err != nil {
				return fmt.Errorf("fs: check: %w", err)
			}
			rep.Files++
			rep.Bytes += st.Size()
			if st.Size() != e.stored {
				f := where
				f.Kind, f.Detail = FindSize, fmt.Sprintf("%d bytes on disk, %d recorded", st.Size(), e.stored)
				add(f)
				return nil
			}
			if opts.Verify != nil {
				if err := opts.Verify(ctx, fh, e.stored, e.system); errors.Is(err, ErrUnverifiable) {
					rep.Unverified++
					return nil
				} else if err != nil {
					f := where
					f.Kind, f.Detail = FindChecksum, err.Error()
					add(f)
					return nil
				}
				rep.Verified++
			}
			return nil
		}, add)
		return err
	})
	if err != nil {
		return rep, fmt.Errorf("fs: check: %w", err)
	}
	// Files no record refers to. Reading the directories after the
	// index is safe online: a file committed meanwhile is young.
	for i := range shards {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		dir := filepath.Join(dataDir, fmt.Sprintf("%02x", i))
		entries, err := os.ReadDir(dir)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			return rep, fmt.Errorf("fs: check: %w", err)
		}
		for _, de := range entries {
			name := de.Name()
			var f Finding
			switch {
			case strings.HasSuffix(name, tmpSuffix) && validID(strings.TrimSuffix(name, tmpSuffix)):
				f = Finding{Kind: FindTemp, File: name, Leftover: true, Detail: "the temp file of an interrupted write"}
			case validID(name) && !live[name]:
				f = Finding{Kind: FindOrphan, File: name, Leftover: true, Detail: "a data file no record refers to (an interrupted write, or the old file of an overwrite)"}
			default:
				continue
			}
			if opts.Grace > 0 {
				if info, err := de.Info(); err != nil || now.Sub(info.ModTime()) < opts.Grace {
					continue // a write in flight
				}
			}
			if opts.Repair {
				if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
					return rep, fmt.Errorf("fs: repair: %w", err)
				}
				f.Repaired = true
			}
			add(f)
		}
	}
	if opts.Repair && len(dangling) > 0 {
		if err := db.Update(func(tx *bolt.Tx) error {
			for _, e := range dangling {
				if prt := tx.Bucket(rootBucket).Bucket([]byte(e.bucket)).Bucket(prtBucket); prt != nil {
					if err := prt.Delete(e.dbKey); err != nil {
						return err
					}
				}
			}
			return nil
		}); err != nil {
			return rep, fmt.Errorf("fs: repair: %w", err)
		}
		for _, e := range dangling {
			if validID(e.file) {
				_ = os.Remove(fileOf(e.file)) // absent already is fine
			}
		}
		for i := range rep.Findings {
			if rep.Findings[i].Kind == FindDanglingPart {
				rep.Findings[i].Repaired = true
			}
		}
	}
	return rep, nil
}
