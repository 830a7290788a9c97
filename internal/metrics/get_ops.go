package metrics

// GetOps is get_ops: object reads (GetObject) per second.
func GetOps() Module {
	return opRate{name: "get_ops", doc: "object reads (GetObject) per second", match: isGet}
}
