package metrics

// DeleteOps is delete_ops: object deletions (DeleteObject, DeleteObjects)
// per second; a multi-object delete counts once.
func DeleteOps() Module {
	return newOpRate("delete_ops", isDelete)
}
