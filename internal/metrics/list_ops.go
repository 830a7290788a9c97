package metrics

// ListOps is list_ops: listings (buckets, objects, uploads, parts) per
// second.
func ListOps() Module {
	return opRate{name: "list_ops", doc: "listings (buckets, objects, uploads, parts) per second", match: isList}
}
