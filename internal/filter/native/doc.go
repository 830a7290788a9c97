// Package native owns Facet's native filters, one per file with its test:
// noop, compression, encryption, caching, tagging, the metadata guard and
// the recycle bin. Each file exports the filter's description (NoopInfo,
// CompressionInfo...); internal/filter/builtin lists them.
package native
