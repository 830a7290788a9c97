package metrics

// Builtin returns Facet's workload metrics, in one explicit list: a new
// metric is a line in policy.DefaultMetrics (its name, unit and doc: the
// DSL's vocabulary, the one list of them), a file here with its Module and
// a line below. Modules take their Info from that list (described).
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
