package wire

import (
	"fmt"
)

// Message is a generated request or response.
type Message interface {
	// APIKey is the API the message belongs to.
	APIKey() int16
	// IsRequest reports whether this is a request (else a response).
	IsRequest() bool
	// Default sets every field to its default.
	Default()
	// AppendTo appends the encoding at version v.
	AppendTo(b []byte, v int16) []byte
	// ReadFrom decodes at version v; the reader's error reports failure.
	ReadFrom(r *Reader, v int16)
	// Decode decodes a whole message at version v.
	Decode(b []byte, v int16) error
}

// API describes one API of the protocol window.
type API struct {
	Key                 int16
	Name                string
	MinVersion          int16
	MaxVersion          int16
	FlexibleFrom        int16 // first flexible version, -1 if none
	FixedResponseHeader int16 // response header version used at every version, -1 if derived
	NewRequest          func() Message
	NewResponse         func() Message
}

// HasVersion reports whether v is in the API's range.
func (a *API) HasVersion(v int16) bool { return v >= a.MinVersion && v <= a.MaxVersion }

// IsFlexible reports whether version v uses the flexible encoding.
func (a *API) IsFlexible(v int16) bool { return a.FlexibleFrom >= 0 && v >= a.FlexibleFrom }

// RequestHeaderVersion is the request header version that goes with version v: 2 for flexible
// versions, else 1.
func (a *API) RequestHeaderVersion(v int16) int16 {
	if a.IsFlexible(v) {
		return 2
	}
	return 1
}

// ResponseHeaderVersion is the response header version that goes with version v: 1 for
// flexible versions, else 0, unless the API fixes it (ApiVersions always uses 0).
func (a *API) ResponseHeaderVersion(v int16) int16 {
	if a.FixedResponseHeader >= 0 {
		return a.FixedResponseHeader
	}
	if a.IsFlexible(v) {
		return 1
	}
	return 0
}

var apiByKey = func() map[int16]*API {
	m := make(map[int16]*API, len(APIs))
	for i := range APIs {
		m[APIs[i].Key] = &APIs[i]
	}
	return m
}()

// LookupAPI returns the API with the given key, or nil when it is not in the window.
func LookupAPI(key int16) *API { return apiByKey[key] }

// TagField is one tagged field as it travels: its tag and its encoded value.
type TagField struct {
	Tag  uint32
	Data []byte
}

// Tags are tagged fields in increasing tag order.
type Tags []TagField

// AppendTagSection appends a tagged-field section: the count, then each field (tag, size,
// data) in increasing tag order, merging the known fields with the unknown ones carried over
// from decoding. Both lists must already be sorted by tag.
func AppendTagSection(b []byte, known, unknown []TagField) []byte {
	b = AppendUvarint(b, uint32(len(known)+len(unknown)))
	i, j := 0, 0
	for i < len(known) || j < len(unknown) {
		var f TagField
		if j >= len(unknown) || (i < len(known) && known[i].Tag < unknown[j].Tag) {
			f, i = known[i], i+1
		} else {
			f, j = unknown[j], j+1
		}
		b = AppendUvarint(b, f.Tag)
		b = AppendUvarint(b, uint32(len(f.Data)))
		b = append(b, f.Data...)
	}
	return b
}

// decode decodes a whole message, checking the version first.
func decode(m Message, b []byte, v int16) error {
	api := LookupAPI(m.APIKey())
	side := "response"
	if m.IsRequest() {
		side = "request"
	}
	if api == nil || !api.HasVersion(v) {
		return fmt.Errorf("decoding API %d %s v%d: %w", m.APIKey(), side, v, ErrUnsupportedVersion)
	}
	r := NewReader(b)
	m.ReadFrom(r, v)
	if err := r.Err(); err != nil {
		return fmt.Errorf("decoding %s %s v%d: %w", api.Name, side, v, err)
	}
	return nil
}

// minSize picks the classic or the compact minimum size of a value.
func minSize(classic, compact int, isCompact bool) int {
	if isCompact {
		return compact
	}
	return classic
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func ptr[T any](v T) *T { return &v }

// Splices lets a sender supply the bytes of zero-copy records fields itself, for example
// straight from segment files with sendfile. AppendToSpliced writes each such field's length
// prefix from Lens (in encoding order; -1 is null) without its bytes, and appends to At the
// offset in the output where those bytes belong. The sender then writes out[:At[0]], the first
// field's bytes, out[At[0]:At[1]], and so on.
type Splices struct {
	Lens []int
	At   []int
	next int
}

// Reset empties sp for reuse, keeping its storage.
func (sp *Splices) Reset() {
	sp.Lens, sp.At, sp.next = sp.Lens[:0], sp.At[:0], 0
}

func (sp *Splices) placeholder(b []byte, compact bool) []byte {
	n := -1
	if sp.next < len(sp.Lens) {
		n = sp.Lens[sp.next]
	}
	sp.next++
	b = appendLen(b, n, compact, false)
	sp.At = append(sp.At, len(b))
	return b
}
