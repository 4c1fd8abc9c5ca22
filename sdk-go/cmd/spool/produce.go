package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spoolmq/spool/protocol-spec/wire/compress"
	spool "github.com/spoolmq/spool/sdk-go"
)

// headerFlag is a repeatable --header k=v, kept in order (a key may repeat).
type headerFlag []spool.Header

func (h *headerFlag) String() string { return "" }
func (h *headerFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("want KEY=VALUE, got %q", s)
	}
	*h = append(*h, spool.Header{Key: []byte(k), Value: []byte(v)})
	return nil
}

// defaultMaxMessageBytes is --max-message-bytes' default: the longest line read, and a
// producer batch large enough for it.
const defaultMaxMessageBytes = 16 << 20

// input yields the records to produce, io.EOF after the last. A record's Topic, Partition
// and the --header headers are filled in by the caller.
type input func() (*spool.Record, error)

// lineInput reads one record per line of r: the value, or KEY<sep>VALUE.
func lineInput(r io.Reader, sep string, emptyNull bool, maxBytes int) input {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxBytes+1)
	n := 0
	return func() (*spool.Record, error) {
		if !sc.Scan() {
			return nil, scanEnd(sc, n+1, maxBytes)
		}
		n++
		line := sc.Bytes()
		rec := &spool.Record{Value: line}
		if sep != "" {
			if k, v, ok := bytes.Cut(line, []byte(sep)); ok {
				rec.Key, rec.Value = k, v
			}
		}
		rec.Key, rec.Value = clone(rec.Key, emptyNull), clone(rec.Value, emptyNull)
		return rec, nil
	}
}

// jsonInput reads one record per line of r in consume --json's form: key, value (strings or
// null), headers and timestamp (Unix ms, 0 for now); topic, partition and offset are ignored,
// so `consume --json | produce --json` copies records to another topic.
func jsonInput(r io.Reader, maxBytes int) input {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxBytes+1)
	n := 0
	return func() (*spool.Record, error) {
		for sc.Scan() {
			n++
			line := bytes.TrimSpace(sc.Bytes())
			if len(line) == 0 {
				continue
			}
			var j recordJSON
			if err := json.Unmarshal(line, &j); err != nil {
				return nil, fmt.Errorf("reading stdin: line %d: %w", n, err)
			}
			rec := &spool.Record{}
			if j.Key != nil {
				rec.Key = []byte(*j.Key)
			}
			if j.Value != nil {
				rec.Value = []byte(*j.Value)
			}
			if j.Timestamp > 0 {
				rec.Timestamp = time.UnixMilli(j.Timestamp)
			}
			for _, h := range j.Headers {
				rec.Headers = append(rec.Headers, spool.Header{Key: []byte(h.Key), Value: []byte(h.Value)})
			}
			return rec, nil
		}
		return nil, scanEnd(sc, n+1, maxBytes)
	}
}

// scanEnd is why a scan of stdin stopped at line: io.EOF at the end of the input.
func scanEnd(sc *bufio.Scanner, line, maxBytes int) error {
	err := sc.Err()
	switch {
	case errors.Is(err, bufio.ErrTooLong):
		return fmt.Errorf("reading stdin: line %d is longer than --max-message-bytes %d", line, maxBytes)
	case err != nil:
		return fmt.Errorf("reading stdin: %w", err)
	}
	return io.EOF
}

// fileInput makes each file one record, its whole content the value.
func fileInput(files []string, emptyNull bool, maxBytes int) input {
	i := 0
	return func() (*spool.Record, error) {
		if i == len(files) {
			return nil, io.EOF
		}
		f := files[i]
		i++
		st, err := os.Stat(f)
		if err != nil {
			return nil, fmt.Errorf("--file: %w", err)
		}
		if st.Size() > int64(maxBytes) {
			return nil, fmt.Errorf("--file %s: %d bytes, more than --max-message-bytes %d", f, st.Size(), maxBytes)
		}
		v, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("--file: %w", err)
		}
		return &spool.Record{Value: clone(v, emptyNull)}, nil
	}
}

func produceCmd(ctx context.Context, clientFor clientFunc, args []string, stdin io.Reader, stderr io.Writer) (err error) {
	fs := newFlags("produce")
	defer fs.explain(&err)
	topic := fs.String("topic", "", "topic to produce to (required)")
	sep := fs.String("key-separator", "", "split each line at the first `S` into key and value (default: no key)")
	key := fs.String("key", "", "the key of every record (default: none, or from --key-separator or --json)")
	var files listFlag
	fs.Var(&files, "file", "produce this `FILE`'s whole content as one record instead of reading stdin; repeatable")
	asJSON := fs.Bool("json", false, "read each line as a JSON record, as consume --json prints it (key, value, headers, timestamp)")
	part := fs.String("partitioner", "hash", "hash (Kafka's murmur2 of the key), roundrobin or sticky")
	partition := fs.Int("partition", -1, "send every record to this partition `N` (default: the partitioner chooses)")
	fs.IntVar(partition, "p", -1, "short for --partition")
	var headers headerFlag
	fs.Var(&headers, "header", "add a header `KEY=VALUE` to every record; repeatable")
	fs.Var(&headers, "H", "short for --header")
	emptyNull := fs.Bool("null-empty", false, "send an empty key or value as null: an empty value is a tombstone (kcat -Z)")
	fs.BoolVar(emptyNull, "Z", false, "short for --null-empty")
	maxBytes := fs.Int("max-message-bytes", defaultMaxMessageBytes, "longest record `BYTES` (a line with its key); the producer's batches grow to hold it. The broker's max.message.bytes (default 1048588) still applies")
	acks := fs.String("acks", "all", "all, 1 or 0")
	codec := fs.String("compression", "none", "none, gzip, snappy, lz4 or zstd")
	level := fs.Int("compression-level", 0, "the --compression codec's `LEVEL`, as Kafka's compression.gzip.level (1 to 9, or -1), .lz4.level (1 to 17), .zstd.level (-131072 to 22) (default: the codec's)")
	txnID := fs.String("transactional-id", "", "produce in transactions under this transactional.id `ID` (exactly once: read_committed consumers see a transaction's records all at once, or never); a running producer with the same id is fenced")
	txnSize := fs.Int("txn-size", 0, "with --transactional-id, commit a transaction every `N` records (default 0: the whole input is one transaction)")
	abort := fs.Bool("abort", false, "with --transactional-id, write each transaction's records and then abort it instead of committing (to test read_committed readers)")
	if err := fs.parse(args); err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	switch {
	case *txnID == "" && (set["txn-size"] || *abort):
		return fs.bad("produce: --txn-size and --abort need --transactional-id")
	case *txnSize < 0:
		return fs.bad("produce: --txn-size must be >= 0, got %d", *txnSize)
	case *txnID != "" && *acks != "all" && *acks != "-1":
		return fs.bad("produce: --transactional-id needs --acks all, got %s", *acks)
	}
	if c, err := compress.ParseCodec(*codec); set["compression-level"] && err == nil { // a bad --compression: producerOpts says so
		if _, _, _, ok := compress.LevelRange(c); !ok {
			return fs.bad("produce: --compression-level needs --compression gzip, lz4 or zstd, got %s", *codec)
		}
		if err := compress.CheckLevel(c, *level); err != nil {
			return fs.bad("produce: --compression-level: %s", strings.TrimPrefix(err.Error(), "compress: "))
		}
	}
	switch {
	case *topic == "":
		return fs.bad("produce: --topic is required")
	case fs.NArg() > 0:
		return fs.bad("produce: takes no arguments (records come from stdin or --file), got %q", strings.Join(fs.Args(), " "))
	case *partition < -1 || *partition > math.MaxInt32:
		return fs.bad("produce: --partition must be a partition number >= 0, got %d", *partition)
	case *partition >= 0 && set["partitioner"]:
		return fs.bad("produce: give --partition or --partitioner, not both")
	case *maxBytes < 1 || *maxBytes > 64<<20-1024:
		return fs.bad("produce: --max-message-bytes must be from 1 to %d, got %d", 64<<20-1024, *maxBytes)
	case btoi(len(files) > 0)+btoi(*asJSON)+btoi(*sep != "") > 1:
		return fs.bad("produce: give one of --file, --json and --key-separator")
	case set["key"] && (*asJSON || *sep != ""):
		return fs.bad("produce: --key sets every record's key; --json and --key-separator read keys from the input")
	}
	opts, err := producerOpts(*acks, *codec, *part)
	if err != nil {
		return err
	}
	if set["compression-level"] {
		c, _ := compress.ParseCodec(*codec)
		opts = append(opts, spool.CompressionLevel(c, *level))
	}
	if *partition >= 0 {
		opts = append(opts, spool.WithPartitioner(spool.ManualPartitioner()))
	}
	// A batch holds at least one whole record: room for the largest plus the batch overhead.
	opts = append(opts, spool.MaxBatchBytes(max(1<<20, *maxBytes+1024)))
	if *txnID != "" {
		opts = append(opts, spool.TransactionalID(*txnID))
	}
	cl, err := clientFor(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	txn := newTxnRun(cl, *txnID != "", *txnSize, *abort, stderr)
	defer func() {
		if err != nil {
			txn.abandon(ctx)
		}
	}()
	// Before stdin: empty input must not turn a down broker or a missing topic into success.
	partitions, err := lookupTopic(ctx, cl, *topic)
	if err != nil {
		return err
	}
	if *partition >= partitions && partitions > 0 {
		return fmt.Errorf("topic %s has no partition %d (it has %d)", *topic, *partition, partitions)
	}
	next := lineInput(stdin, *sep, *emptyNull, *maxBytes)
	switch {
	case len(files) > 0:
		next = fileInput(files, *emptyNull, *maxBytes)
	case *asJSON:
		next = jsonInput(stdin, *maxBytes)
	}
	var (
		mu    sync.Mutex
		first error
	)
	prog := newProduceProgress(stderr)
	cb := func(r *spool.Record, err error) {
		if err != nil {
			mu.Lock()
			if first == nil {
				first = err
			}
			mu.Unlock()
			return
		}
		prog.acked(len(r.Key) + len(r.Value))
	}
	if err := txn.init(ctx); err != nil {
		return err
	}
	stop := prog.start(time.Now())
	defer stop()
	n := 0
	for {
		r, err := next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if err := txn.beforeRecord(ctx); err != nil {
			return err
		}
		r.Topic, r.Partition = *topic, int32(*partition)
		r.Headers = append(r.Headers, headers...)
		if set["key"] {
			r.Key = clone([]byte(*key), *emptyNull)
		}
		cl.Produce(ctx, r, cb)
		n++
		mu.Lock()
		err = first
		mu.Unlock()
		if err != nil {
			return err
		}
	}
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	if err := txn.end(ctx); err != nil {
		return err
	}
	stop() // the summary replaces the progress line
	mu.Lock()
	defer mu.Unlock()
	if first != nil {
		return first
	}
	if n == 1 {
		fmt.Fprintf(stderr, "produced 1 record%s\n", txn.summary())
	} else {
		fmt.Fprintf(stderr, "produced %d records%s\n", n, txn.summary())
	}
	return nil
}

// txnRun is produce's transactions (--transactional-id): one begun before the first record
// and ended every --txn-size records and at the end of the input.
type txnRun struct {
	cl            *spool.Client
	stderr        io.Writer
	on, abort     bool
	size, inTxn   int
	open          bool
	ended, failed int
}

func newTxnRun(cl *spool.Client, on bool, size int, abort bool, stderr io.Writer) *txnRun {
	return &txnRun{cl: cl, on: on, size: size, abort: abort, stderr: stderr}
}

func (t *txnRun) init(ctx context.Context) error {
	if !t.on {
		return nil
	}
	if err := t.cl.InitTransactions(ctx); err != nil {
		return err
	}
	return nil
}

// beforeRecord begins a transaction for the next record, ending the full one first.
func (t *txnRun) beforeRecord(ctx context.Context) error {
	if !t.on {
		return nil
	}
	if t.open && t.size > 0 && t.inTxn == t.size {
		if err := t.end(ctx); err != nil {
			return err
		}
	}
	if !t.open {
		if err := t.cl.BeginTransaction(); err != nil {
			return err
		}
		t.open, t.inTxn = true, 0
	}
	t.inTxn++
	return nil
}

// end commits the open transaction, or with --abort writes its records and aborts it.
func (t *txnRun) end(ctx context.Context) error {
	if !t.on || !t.open {
		return nil
	}
	t.open = false
	if t.abort {
		// Written first, so that read_uncommitted readers see what read_committed ones must not.
		if err := t.cl.Flush(ctx); err != nil {
			return err
		}
		if err := t.cl.AbortTransaction(ctx); err != nil {
			return err
		}
	} else if err := t.cl.CommitTransaction(ctx); err != nil {
		if spool.TxnRequiresAbort(err) {
			if aerr := t.cl.AbortTransaction(ctx); aerr != nil {
				return fmt.Errorf("%w (and aborting the transaction: %v)", err, aerr)
			}
			return fmt.Errorf("%w (the transaction was aborted)", err)
		}
		return err
	}
	t.ended++
	return nil
}

// abandon aborts the open transaction of a run that failed (or was interrupted), so that it
// does not hold read_committed readers back until transaction.timeout.ms.
func (t *txnRun) abandon(ctx context.Context) {
	if !t.on || !t.open {
		return
	}
	t.open = false
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := t.cl.AbortTransaction(actx); err != nil && !spool.IsFatal(err) {
		fmt.Fprintf(t.stderr, "spool: aborting the open transaction: %v\n", err)
	}
}

func (t *txnRun) summary() string {
	switch {
	case !t.on:
		return ""
	case t.abort && t.ended == 1:
		return " in 1 aborted transaction"
	case t.abort:
		return fmt.Sprintf(" in %d aborted transactions", t.ended)
	case t.ended == 1:
		return " in 1 committed transaction"
	}
	return fmt.Sprintf(" in %d committed transactions", t.ended)
}

// clone copies a key or value out of the scanner's buffer; an empty one becomes null when
// emptyIsNull, and a missing one (nil) stays null.
func clone(b []byte, emptyIsNull bool) []byte {
	if b == nil || (len(b) == 0 && emptyIsNull) {
		return nil
	}
	return append([]byte{}, b...)
}
