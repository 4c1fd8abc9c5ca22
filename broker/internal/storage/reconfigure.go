package storage

// SetConfigIfChanged is SetConfig when cfg differs from the configuration in use, and reports
// whether it did: a caller that re-resolves every log's configuration on each metadata change
// allocates only for the logs whose configuration changed.
func (l *Log) SetConfigIfChanged(cfg LogConfig) bool {
	c := cfg.normalized()
	if *l.config() == c {
		return false
	}
	l.cfg.Store(&c)
	return true
}

// CompressionType is the log's compression.type ("" or "producer": keep the producer's
// codec). It reads one atomic pointer, for the produce path.
func (l *Log) CompressionType() string { return l.config().CompressionType }

// CompressionLevel is the level of CompressionType's codec (0: the codec's default).
func (l *Log) CompressionLevel() int { return l.config().CompressionLevel }
