package metrics

// Lat is lat: the mean duration of every request, in seconds.
func Lat() Module {
	return newMeanLatency("lat", anyOp)
}
