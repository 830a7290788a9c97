package filter

// Builtin returns fresh descriptions of the native filters: the one list
// of what this binary ships. Each call returns new values, so registries
// built from separate calls share no state (their codec pools included).
func Builtin() []*Info {
	return []*Info{
		noopInfo(),
		compressionInfo(),
		encryptionInfo(),
		cachingInfo(),
		taggingInfo(),
		metadataGuardInfo(),
		recycleBinInfo(),
		selectInfo(),
	}
}

// NewBuiltinRegistry returns a registry holding the native filters.
func NewBuiltinRegistry() *Registry {
	return NewRegistry(Builtin()...)
}
