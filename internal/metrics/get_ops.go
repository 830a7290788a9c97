package metrics

// GetOps is get_ops: object reads (GetObject) per second.
func GetOps() Module {
	return newOpRate("get_ops", isGet)
}
