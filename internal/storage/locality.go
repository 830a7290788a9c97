package storage

import (
	"time"

	"github.com/facet-sds/facet/internal/sysdev"
)

// Location tells where an object's bytes are, for the data locality
// service: a compute scheduler reads it to run work where the data lives.
// Exactly one of the backend-specific parts is set, after Kind.
type Location struct {
	// Kind is "fs" (embedded filesystem), "s3" (remote object store) or
	// "volume".
	Kind       string `json:"kind"`
	StoredSize int64  `json:"stored_size"`
	// FS is an object of the embedded backend: its data file (Path), the
	// mount and the block device of this node holding it.
	FS     *sysdev.Placement `json:"fs,omitempty"`
	Remote *RemoteLocation   `json:"remote,omitempty"`
}

// RemoteLocation is an object in a remote S3-compatible store: where it is
// and what the store's HEAD tells about it. Placement inside the store
// (which servers, which disks) is the store's business and S3 does not
// expose it; StorageClass, ReplicationStatus and the server header are
// what it does tell.
type RemoteLocation struct {
	Endpoint          string            `json:"endpoint"`
	Bucket            string            `json:"bucket"`
	Key               string            `json:"key"`
	ETag              string            `json:"etag,omitempty"`
	StorageClass      string            `json:"storage_class,omitempty"`
	VersionID         string            `json:"version_id,omitempty"`
	ReplicationStatus string            `json:"replication_status,omitempty"`
	Server            string            `json:"server,omitempty"`
	Headers           map[string]string `json:"headers,omitempty"`
}

// IOStatus describes how a backend with local devices reads them for GETs:
// the I/O model and whether I/O priorities can work there.
type IOStatus struct {
	Model          string `json:"io_model"`
	ChunkSize      int    `json:"chunk_size"`
	ReadAhead      int    `json:"read_ahead"`
	PoolThreads    int    `json:"pool_threads"`
	LargeFrom      int64  `json:"large_from_bytes"`
	Priorities     bool   `json:"priorities"`
	PrioritiesNote string `json:"priorities_note"`
}

// ThreadStream is one stream read by an OS thread of its own (the embedded
// backend's per-stream model): the thread the kernel sees, the flow the
// stream belongs to when it has a bandwidth need (a class reservation:
// I/O priorities follow it), and what it has read so far.
type ThreadStream struct {
	TID   int       `json:"tid"`
	Flow  string    `json:"flow,omitempty"`
	Need  float64   `json:"need,omitempty"` // bytes/s
	Bytes int64     `json:"bytes"`
	Since time.Time `json:"since"`
}
