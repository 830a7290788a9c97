package metrics

// Builtin returns Facet's workload metrics, in one explicit list: a new
// metric is a file with its Module and a line here. Their names are the
// DSL's metric vocabulary (policy.DefaultMetrics lists the same ones; a
// test keeps the two in step).
func Builtin() []Module {
	return []Module{
		Ops(),
		GetOps(),
		PutOps(),
		DeleteOps(),
		HeadOps(),
		ListOps(),
		GetBW(),
		PutBW(),
		BW(),
		GetLat(),
		PutLat(),
		Lat(),
		LatencyP99(),
		Errors(),
		ErrorRatio(),
		ActiveRequests(),
		CacheHitRatio(),
		Compressibility(DefaultSampleChunk, DefaultSampleEvery),
		VolumeReadBW(),
		VolumeWriteBW(),
		VolumeReadIOPS(),
		VolumeWriteIOPS(),
	}
}

// NewBuiltinRegistry returns a registry of the built-in metrics.
func NewBuiltinRegistry() *Registry { return NewRegistry(Builtin()...) }
