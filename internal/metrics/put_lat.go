package metrics

// PutLat is put_lat: the mean duration of object writes, in seconds.
func PutLat() Module {
	return newMeanLatency("put_lat", isPut)
}
