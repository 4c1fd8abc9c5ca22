package wire

import "fmt"

// DataMessage is a generated data structure (a `data` schema): a versioned structure with no
// API key and no header, such as the consumer protocol's subscription and assignment, which
// travel as opaque bytes inside other messages.
type DataMessage interface {
	// Default sets every field to its default.
	Default()
	// AppendTo appends the encoding at version v, without any version prefix.
	AppendTo(b []byte, v int16) []byte
	// ReadFrom decodes at version v; the reader's error reports failure.
	ReadFrom(r *Reader, v int16)
}

// decodeData decodes b, a whole encoding of the data structure name at version v, one of
// lo-hi.
func decodeData(m DataMessage, name string, b []byte, v, lo, hi int16) error {
	if v < lo || v > hi {
		return fmt.Errorf("decoding %s v%d: %w", name, v, ErrUnsupportedVersion)
	}
	r := NewReader(b)
	m.ReadFrom(r, v)
	if err := r.Err(); err != nil {
		return fmt.Errorf("decoding %s v%d: %w", name, v, err)
	}
	return nil
}

// decodeVersioned decodes b, an int16 version followed by the encoding of m at that version,
// and returns the version the bytes carry. A version above hi is read as hi: a version-prefixed
// structure only ever gains fields at its end, which is how Kafka keeps these bytes readable by
// older members of a group.
func decodeVersioned(m DataMessage, name string, b []byte, lo, hi int16) (int16, error) {
	r := NewReader(b)
	v := r.Int16()
	if err := r.Err(); err != nil {
		return v, fmt.Errorf("decoding %s: version: %w", name, err)
	}
	if v < lo {
		return v, fmt.Errorf("decoding %s: version %d below %d: %w", name, v, lo, ErrMalformed)
	}
	m.ReadFrom(r, min(v, hi))
	if err := r.Err(); err != nil {
		return v, fmt.Errorf("decoding %s v%d: %w", name, v, err)
	}
	return v, nil
}
