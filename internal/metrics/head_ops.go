package metrics

// HeadOps is head_ops: HeadObject and HeadBucket requests per second.
func HeadOps() Module {
	return opRate{name: "head_ops", doc: "HEAD requests (HeadObject, HeadBucket) per second", match: isHead}
}
