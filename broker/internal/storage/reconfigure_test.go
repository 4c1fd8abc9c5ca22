package storage

import "testing"

// SetConfigIfChanged replaces the configuration only when it differs once normalized.
func TestSetConfigIfChanged(t *testing.T) {
	cfg := smallConfig()
	l := openLog(t, t.TempDir(), cfg)
	if l.SetConfigIfChanged(cfg) {
		t.Error("the configuration in use was replaced by itself")
	}
	cfg.CompressionType = "zstd"
	if !l.SetConfigIfChanged(cfg) || l.CompressionType() != "zstd" {
		t.Errorf("a new compression.type was not applied: %q", l.CompressionType())
	}
	cfg.SegmentBytes = 1 // normalized up to the minimum
	if !l.SetConfigIfChanged(cfg) || l.SetConfigIfChanged(cfg) || l.Config().SegmentBytes != minSegmentBytes {
		t.Errorf("segment.bytes 1: applied once as %d", l.Config().SegmentBytes)
	}
}
