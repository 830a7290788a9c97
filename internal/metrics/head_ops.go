package metrics

// HeadOps is head_ops: HeadObject and HeadBucket requests per second.
func HeadOps() Module {
	return newOpRate("head_ops", isHead)
}
