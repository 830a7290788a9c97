package metrics

// ListOps is list_ops: listings (buckets, objects, uploads, parts) per
// second.
func ListOps() Module {
	return newOpRate("list_ops", isList)
}
