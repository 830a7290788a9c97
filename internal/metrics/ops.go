package metrics

// Ops is ops: every request per second, whatever its operation.
func Ops() Module {
	return newOpRate("ops", anyOp)
}
