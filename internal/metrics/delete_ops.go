package metrics

// DeleteOps is delete_ops: object deletions (DeleteObject, DeleteObjects)
// per second; a multi-object delete counts once.
func DeleteOps() Module {
	return opRate{name: "delete_ops", doc: "object deletions (DeleteObject, DeleteObjects) per second", match: isDelete}
}
