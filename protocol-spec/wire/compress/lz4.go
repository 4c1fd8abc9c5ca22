package compress

import (
	"bytes"
	"fmt"
	"sync"

	"github.com/pierrec/lz4/v4"
)

// LZ4Frame describes an LZ4 frame layout. The zero value is what Spool emits and what
// librdkafka and the Java client send: 64 KiB independent blocks, no content size, no
// checksums (FLG 0x60, BD 0x40).
type LZ4Frame struct {
	// BlockSize is the maximum uncompressed block size: 64 KiB (when 0), 256 KiB, 1 MiB or
	// 4 MiB (BD 0x40, 0x50, 0x60, 0x70).
	BlockSize int
	// ContentSize writes the uncompressed size in the descriptor (FLG bit 3, kafka-python).
	ContentSize bool
	// ContentChecksum appends an xxHash32 of the content (FLG bit 2, sarama, franz-go, kafka-go).
	ContentChecksum bool
	// BlockChecksum follows each block with an xxHash32 of it (FLG bit 4).
	BlockChecksum bool
}

func (f LZ4Frame) options(size int) ([]lz4.Option, error) {
	var bs lz4.BlockSize
	switch f.BlockSize {
	case 0, 64 << 10:
		bs = lz4.Block64Kb
	case 256 << 10:
		bs = lz4.Block256Kb
	case 1 << 20:
		bs = lz4.Block1Mb
	case 4 << 20:
		bs = lz4.Block4Mb
	default:
		return nil, fmt.Errorf("compress: lz4 block size %d is not 64 KiB, 256 KiB, 1 MiB or 4 MiB", f.BlockSize)
	}
	opts := []lz4.Option{
		lz4.ConcurrencyOption(1),
		lz4.BlockSizeOption(bs),
		lz4.ChecksumOption(f.ContentChecksum),
		lz4.BlockChecksumOption(f.BlockChecksum),
		lz4.CompressionLevelOption(lz4.Fast),
	}
	if f.ContentSize {
		opts = append(opts, lz4.SizeOption(uint64(size)))
	}
	return opts, nil
}

// AppendLZ4Frame appends src compressed as an LZ4 frame laid out as f describes. Compress
// uses the zero LZ4Frame through a pooled encoder; this entry point exists so tests can produce
// every variant clients send.
func AppendLZ4Frame(dst, src []byte, f LZ4Frame) ([]byte, error) {
	opts, err := f.options(len(src))
	if err != nil {
		return dst, err
	}
	out := appendWriter{b: dst}
	w := lz4.NewWriter(&out)
	if err := w.Apply(opts...); err != nil {
		return dst, fmt.Errorf("compress: lz4 options: %w", err)
	}
	if _, err := w.Write(src); err != nil {
		return dst, fmt.Errorf("compress: lz4: %w", err)
	}
	if err := w.Close(); err != nil {
		return dst, fmt.Errorf("compress: lz4: %w", err)
	}
	return out.b, nil
}

type lz4Encoder struct {
	w   *lz4.Writer
	out appendWriter
}

var lz4Encoders = sync.Pool{New: func() any {
	e := new(lz4Encoder)
	e.w = lz4.NewWriter(&e.out)
	opts, _ := LZ4Frame{}.options(0)
	if err := e.w.Apply(opts...); err != nil {
		panic("compress: lz4 options: " + err.Error()) // constant options cannot fail
	}
	return e
}}

func compressLZ4(dst, src []byte) ([]byte, error) {
	e := lz4Encoders.Get().(*lz4Encoder)
	out, err := e.compress(dst, src)
	if err == nil {
		lz4Encoders.Put(e)
	}
	return out, err
}

// compress appends src as an LZ4 frame to dst. After an error the writer may be in an error
// state: the caller drops e rather than pool it.
func (e *lz4Encoder) compress(dst, src []byte) ([]byte, error) {
	e.out.b = dst
	e.w.Reset(&e.out)
	_, err := e.w.Write(src)
	if err == nil {
		err = e.w.Close()
	}
	out := e.out.b
	e.out.b = nil
	e.w.Reset(nil)
	if err != nil {
		return dst, fmt.Errorf("compress: lz4: %w", err)
	}
	return out, nil
}

type lz4Decoder struct {
	r   *lz4.Reader
	src bytes.Reader
	out limitWriter
}

var lz4Decoders = sync.Pool{New: func() any {
	d := new(lz4Decoder)
	d.r = lz4.NewReader(nil)
	return d
}}

func decompressLZ4(dst, src []byte, limit int) ([]byte, error) {
	d := lz4Decoders.Get().(*lz4Decoder)
	d.src.Reset(src)
	d.r.Reset(&d.src)
	d.out = limitWriter{b: dst, start: len(dst), max: limit, c: LZ4}
	_, err := d.r.WriteTo(&d.out)
	out := d.out.b
	d.out.b = nil
	d.src.Reset(nil)
	d.r.Reset(nil)
	lz4Decoders.Put(d)
	if err != nil {
		return out, corrupt(LZ4, err)
	}
	if len(src) == 0 {
		// The reader takes an empty input as an empty stream; it is not an LZ4 frame.
		return out, fmt.Errorf("%w: lz4: empty input", ErrCorrupt)
	}
	return out, nil
}
