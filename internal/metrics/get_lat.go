package metrics

// GetLat is get_lat: the mean duration of object reads, in seconds (to the
// response's last byte).
func GetLat() Module {
	return newMeanLatency("get_lat", isGet)
}
