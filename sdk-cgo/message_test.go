package main

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	spool "github.com/spoolmq/spool/sdk-go"
)

// TestMessageLayout builds messages of every small shape (lengths 0 to 9 of the topic, the
// error text, key, value and headers, nil and empty buffers) and reads them back: the layout
// fits its block exactly (a byte short panics on the block's bounds) and keeps every byte.
func TestMessageLayout(t *testing.T) {
	bufs := [][]byte{nil, {}, []byte("k"), []byte("0123456"), []byte("01234567")}
	for tl := range 10 {
		for el := range 10 {
			for _, key := range bufs {
				for _, val := range bufs {
					for nh := range 3 {
						var r *spool.Record
						if tl > 0 || key != nil || val != nil || nh > 0 {
							r = &spool.Record{Topic: strings.Repeat("t", tl), Key: key, Value: val}
							for i := range nh {
								r.Headers = append(r.Headers, spool.Header{Key: bytes.Repeat([]byte("h"), i+tl%3), Value: val})
							}
						}
						var err error
						if el > 0 {
							err = errors.New(strings.Repeat("e", el))
						}
						name := fmt.Sprintf("topic %d, errstr %d, key %q, value %q, %d headers", tl, el, key, val, nh)
						topic, errstr, k, v, hs := messageView(newMessage(r, err, 0))
						wantTopic, wantKey, wantVal, wantHdrs := "", []byte(nil), []byte(nil), []spool.Header(nil)
						if r != nil {
							wantTopic, wantKey, wantVal, wantHdrs = r.Topic, r.Key, r.Value, r.Headers
						}
						if topic != wantTopic || errstr != strings.Repeat("e", el) || !sameBuf(k, wantKey) || !sameBuf(v, wantVal) || len(hs) != len(wantHdrs) {
							t.Fatalf("%s: read back topic %q errstr %q key %q value %q %d headers", name, topic, errstr, k, v, len(hs))
						}
						for i := range hs {
							if !bytes.Equal(hs[i].Key, wantHdrs[i].Key) || !sameBuf(hs[i].Value, wantHdrs[i].Value) {
								t.Fatalf("%s: header %d is %q=%q", name, i, hs[i].Key, hs[i].Value)
							}
						}
					}
				}
			}
		}
	}
}

// sameBuf compares two buffers, nil (null) being different from empty.
func sameBuf(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) }
