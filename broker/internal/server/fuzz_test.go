package server

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/spoolmq/spool/broker/internal/config"
	"github.com/spoolmq/spool/protocol-spec/wire"
)

// FuzzRequestPath feeds arbitrary frames to the request path (header, decoding, handlers):
// nothing may panic, whatever the bytes.
func FuzzRequestPath(f *testing.F) {
	for _, api := range wire.APIs {
		for _, v := range []int16{api.MinVersion, api.MaxVersion} {
			id := "fuzz"
			h := wire.RequestHeader{RequestApiKey: api.Key, RequestApiVersion: v, CorrelationId: 7, ClientId: &id}
			b := h.AppendTo(nil, api.RequestHeaderVersion(v))
			f.Add(api.NewRequest().AppendTo(b, v))
		}
	}
	f.Add([]byte{0, 0, 0, 9, 0, 0, 0, 1, 0xff, 0xff})
	conf, err := config.Load([]string{"--listen", "127.0.0.1:0", "--data-dir", f.TempDir(), "--fsync", "never"}, io.Discard)
	if err != nil {
		f.Fatal(err)
	}
	s, err := New(conf, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		f.Fatal(err)
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	f.Cleanup(func() { s.Close() })
	f.Fuzz(func(t *testing.T, frame []byte) {
		if len(frame) < 8 {
			return // the reader refuses frames shorter than a header before dispatch
		}
		ctx, cancel := context.WithCancel(context.Background())
		c := &conn{s: s, log: s.log}
		p, _ := c.dispatch(ctx, frame)
		cancel() // ends long polls and durability waits
		if p != nil && p.done != nil {
			<-p.done
		}
		if p != nil && p.reply.msg != nil {
			p.reply.msg.AppendTo(nil, p.req.version)
		}
		if p != nil && p.reply.fetch != nil {
			p.reply.fetch.release()
		}
	})
}
