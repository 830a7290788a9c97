package policy

import (
	"sort"
	"strings"

	"github.com/facet-sds/facet/internal/filter"
)

// Vocabulary is what Check validates names against. The caller compiles
// it once from its registries and updates it on change.
type Vocabulary interface {
	Filter(name string) (*filter.Info, bool)
	FilterNames() []string
	Metric(name string) (MetricInfo, bool)
	MetricNames() []string
	// ObjectType returns a type's patterns: extensions (".pdf") and media
	// types ("application/pdf", "image/*").
	ObjectType(name string) ([]string, bool)
	ObjectTypeNames() []string
	// Target reports whether a tenant, bucket ("tenant/bucket" or a bare
	// bucket name), group or volume exists.
	Target(kind TargetKind, name string) bool
}

// TargetNamer is implemented by vocabularies that can list targets, so
// that an unknown target gets a "did you mean".
type TargetNamer interface {
	TargetNames(kind TargetKind) []string
}

// MetricInfo describes a workload metric.
type MetricInfo struct {
	Name string
	Unit ValueKind
	Doc  string
}

// DefaultMetrics returns the workload metrics Facet's data plane measures
// per target and period. It returns a new slice on every call. It is the
// one list of their names, units and docs: internal/metrics's built-in
// modules take theirs from it, and a test there checks that every metric
// listed here has a module, except stored_bytes and objects (storage
// usage, which no module measures yet).
func DefaultMetrics() []MetricInfo {
	return []MetricInfo{
		{"get_ops", KindOpsRate, "object reads (GetObject) per second"},
		{"put_ops", KindOpsRate, "object writes (PutObject, CopyObject, UploadPart) per second"},
		{"delete_ops", KindOpsRate, "object deletions (DeleteObject, DeleteObjects) per second"},
		{"list_ops", KindOpsRate, "listings (buckets, objects, uploads, parts) per second"},
		{"head_ops", KindOpsRate, "HEAD requests (HeadObject, HeadBucket) per second"},
		{"ops", KindOpsRate, "all requests per second"},
		{"get_bw", KindByteRate, "bytes read (GetObject responses) per second"},
		{"put_bw", KindByteRate, "bytes written (write payloads, before filters) per second"},
		{"bw", KindByteRate, "bytes transferred (received and sent) per second"},
		{"get_lat", KindDuration, "mean GetObject latency"},
		{"put_lat", KindDuration, "mean object write latency"},
		{"lat", KindDuration, "mean request latency"},
		{"latency_p99", KindDuration, "99th percentile request latency"},
		{"errors", KindOpsRate, "requests failed by the server (5xx but 501) per second"},
		{"error_ratio", KindRatio, "requests failed by the server (5xx but 501 NotImplemented, which is a client asking for an operation Facet lacks) over all requests"},
		{"compressibility", KindRatio, "original over compressed size of write payloads (2 = halves), sampled with S2"},
		{"active_requests", KindCount, "requests in flight"},
		{"cache_hit_ratio", KindRatio, "GETs served from the gateway's object cache over GETs under a caching policy"},
		{"volume_read_bw", KindByteRate, "bytes read from the volume per second"},
		{"volume_write_bw", KindByteRate, "bytes written to the volume per second"},
		{"volume_read_iops", KindOpsRate, "read requests to the volume per second"},
		{"volume_write_iops", KindOpsRate, "write requests (WRITE, WRITE_ZEROES) to the volume per second"},
		{"stored_bytes", KindBytes, "bytes stored"},
		{"objects", KindCount, "objects stored"},
	}
}

// IsVolumeMetric reports whether a metric is about block volumes (its
// name starts with volume_): the block stage measures it per volume, so
// only volume policies can use it, and volume policies can use only such
// metrics.
func IsVolumeMetric(name string) bool { return strings.HasPrefix(name, "volume_") }

// DefaultObjectTypes returns the object types Facet registers out of the
// box: extensions and media types per type name. It returns a new map on
// every call.
func DefaultObjectTypes() map[string][]string {
	return map[string][]string{
		"DOCS": {".pdf", ".doc", ".docx", ".odt", ".rtf", ".txt", ".md", ".tex",
			".xls", ".xlsx", ".ods", ".ppt", ".pptx", ".odp", ".epub",
			"application/pdf", "application/msword", "application/rtf",
			"application/vnd.openxmlformats-officedocument.*", "application/vnd.oasis.opendocument.*",
			"application/vnd.ms-excel", "application/vnd.ms-powerpoint", "text/plain", "text/markdown"},
		"IMAGES": {".jpg", ".jpeg", ".png", ".gif", ".bmp", ".tif", ".tiff", ".webp", ".svg", ".heic", ".avif", ".ico", "image/*"},
		"VIDEO":  {".mp4", ".mkv", ".avi", ".mov", ".webm", ".wmv", ".flv", ".mpg", ".mpeg", ".m4v", "video/*"},
		"AUDIO":  {".mp3", ".wav", ".flac", ".aac", ".ogg", ".oga", ".m4a", ".wma", ".opus", "audio/*"},
		"LOGS":   {".log", ".out", ".err", ".trace", ".log.gz", "text/x-log"},
		"ARCHIVES": {".zip", ".tar", ".gz", ".tgz", ".bz2", ".xz", ".zst", ".7z", ".rar", ".lz4",
			"application/zip", "application/gzip", "application/x-tar", "application/x-7z-compressed",
			"application/zstd", "application/x-bzip2", "application/x-xz", "application/vnd.rar"},
		"CODE": {".go", ".c", ".h", ".cc", ".cpp", ".hpp", ".py", ".js", ".ts", ".java", ".rs", ".rb",
			".sh", ".php", ".cs", ".kt", ".swift", ".scala", ".sql", "text/x-*", "application/javascript"},
		"DATA": {".csv", ".tsv", ".json", ".jsonl", ".ndjson", ".parquet", ".avro", ".orc", ".xml", ".yaml", ".yml",
			"text/csv", "application/json", "application/x-ndjson", "application/xml", "text/xml", "application/vnd.apache.parquet"},
		"WEB": {".html", ".htm", ".css", ".js", ".mjs", ".map", ".wasm", "text/html", "text/css"},
	}
}

// StaticVocabulary is a Vocabulary over plain values, for tests and for a
// server that rebuilds it from its registries on change. Names of filters,
// metrics and object types are matched exactly here; Check retries them
// ignoring case.
type StaticVocabulary struct {
	Filters     *filter.Registry
	Metrics     []MetricInfo
	ObjectTypes map[string][]string
	Tenants     []string
	Buckets     []string // "tenant/bucket"
	Groups      []string
	Volumes     []string
	// Blocks are the block filters volume policies may set; nil: none.
	Blocks *BlockFilters
	// AnyTarget makes every target exist (validation without a store).
	AnyTarget bool
}

var (
	_ Vocabulary    = (*StaticVocabulary)(nil)
	_ TargetNamer   = (*StaticVocabulary)(nil)
	_ BlockFilterer = (*StaticVocabulary)(nil)
)

// BlockFilters implements BlockFilterer.
func (v *StaticVocabulary) BlockFilters() *BlockFilters { return v.Blocks }

// Filter implements Vocabulary.
func (v *StaticVocabulary) Filter(name string) (*filter.Info, bool) {
	if v.Filters == nil {
		return nil, false
	}
	return v.Filters.Lookup(name)
}

// FilterNames implements Vocabulary.
func (v *StaticVocabulary) FilterNames() []string {
	if v.Filters == nil {
		return nil
	}
	return v.Filters.Names()
}

// Metric implements Vocabulary.
func (v *StaticVocabulary) Metric(name string) (MetricInfo, bool) {
	for _, m := range v.Metrics {
		if m.Name == name {
			return m, true
		}
	}
	return MetricInfo{}, false
}

// MetricNames implements Vocabulary.
func (v *StaticVocabulary) MetricNames() []string {
	names := make([]string, len(v.Metrics))
	for i, m := range v.Metrics {
		names[i] = m.Name
	}
	sort.Strings(names)
	return names
}

// ObjectType implements Vocabulary.
func (v *StaticVocabulary) ObjectType(name string) ([]string, bool) {
	p, ok := v.ObjectTypes[name]
	return p, ok
}

// ObjectTypeNames implements Vocabulary.
func (v *StaticVocabulary) ObjectTypeNames() []string {
	names := make([]string, 0, len(v.ObjectTypes))
	for n := range v.ObjectTypes {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Target implements Vocabulary. A bare bucket name exists when some
// tenant's bucket has it.
func (v *StaticVocabulary) Target(kind TargetKind, name string) bool {
	if v.AnyTarget {
		return true
	}
	if kind == TargetBucket && !strings.Contains(name, "/") {
		for _, b := range v.Buckets {
			if _, bn, _ := strings.Cut(b, "/"); bn == name {
				return true
			}
		}
		return false
	}
	for _, n := range v.TargetNames(kind) {
		if n == name {
			return true
		}
	}
	return false
}

// TargetNames implements TargetNamer.
func (v *StaticVocabulary) TargetNames(kind TargetKind) []string {
	switch kind {
	case TargetTenant:
		return v.Tenants
	case TargetBucket:
		return v.Buckets
	case TargetGroup:
		return v.Groups
	case TargetVolume:
		return v.Volumes
	}
	return nil
}
