package server

import (
	"net/url"
	"testing"

	"github.com/spoolmq/spool/broker/internal/partition"
	"github.com/spoolmq/spool/protocol-spec/wire/batch"
)

// TestAbortedBatch: a transactional batch is left out by read_committed exactly when an
// aborted transaction of its producer spans it, from the transaction's first offset up to
// (not including) its abort marker.
func TestAbortedBatch(t *testing.T) {
	aborted := []partition.AbortedTxn{{ProducerID: 7, FirstOffset: 10, LastOffset: 20}, {ProducerID: 8, FirstOffset: 30, LastOffset: 31}}
	for _, c := range []struct {
		rule      string
		pid, base int64
		want      bool
	}{
		{"inside the aborted range of its producer", 7, 15, true},
		{"at the transaction's first offset", 7, 10, true},
		{"before the transaction began", 7, 9, false},
		{"at or after the abort marker (a later transaction)", 7, 20, false},
		{"another producer in the range", 9, 15, false},
		{"a one-record transaction", 8, 30, true},
	} {
		if got := abortedBatch(aborted, c.pid, c.base); got != c.want {
			t.Errorf("%s: abortedBatch(%d, %d) = %v, want %v", c.rule, c.pid, c.base, got, c.want)
		}
	}
}

// TestConsoleRecordQuery: the message browser's parameters, each rule with a case that passes
// and one that is refused.
func TestConsoleRecordQuery(t *testing.T) {
	for _, c := range []struct {
		rule  string
		query string
		ok    bool
		check func(recordQuery) bool
	}{
		{"no parameters: the beginning, 50 records, read_committed", "", true, func(q recordQuery) bool {
			return q.from == "beginning" && q.count == consoleDefaultRecords && q.iso == partition.ReadCommitted
		}},
		{"count is capped at the maximum", "count=100000", true, func(q recordQuery) bool { return q.count == consoleMaxRecords }},
		{"count below 1 is refused", "count=0", false, nil},
		{"an offset needs a non-negative number", "from=offset&offset=-3", false, nil},
		{"an offset", "from=offset&offset=12", true, func(q recordQuery) bool { return q.offset == 12 }},
		{"a timestamp needs a number", "from=timestamp&timestamp=noon", false, nil},
		{"an unknown start is refused", "from=middle", false, nil},
		{"an empty key is a filter for the empty key", "key=", true, func(q recordQuery) bool { return q.hasKey && len(q.key) == 0 }},
		{"read_uncommitted on request", "isolation=read_uncommitted", true, func(q recordQuery) bool { return q.iso == partition.ReadUncommitted }},
		{"an unknown isolation is refused", "isolation=serializable", false, nil},
	} {
		v, err := url.ParseQuery(c.query)
		if err != nil {
			t.Fatal(err)
		}
		q, err := parseRecordQuery(v)
		if (err == nil) != c.ok || (c.ok && !c.check(q)) {
			t.Errorf("%s: %q gives %+v, %v", c.rule, c.query, q, err)
		}
	}
}

// TestConsoleMatches: the key filter is an exact match (a null key matches no key filter), the
// value filter a substring.
func TestConsoleMatches(t *testing.T) {
	rec := batch.Record{Key: []byte("k1"), Value: []byte(`{"id":42}`)}
	for _, c := range []struct {
		rule string
		q    recordQuery
		rec  batch.Record
		want bool
	}{
		{"no filter", recordQuery{}, rec, true},
		{"the same key", recordQuery{key: []byte("k1"), hasKey: true}, rec, true},
		{"a key prefix is not the key", recordQuery{key: []byte("k"), hasKey: true}, rec, false},
		{"a null key has no key", recordQuery{key: []byte(""), hasKey: true}, batch.Record{Value: rec.Value}, false},
		{"a text in the value", recordQuery{value: []byte(`"id":42`)}, rec, true},
		{"a text not in the value", recordQuery{value: []byte("43")}, rec, false},
	} {
		if got := matches(c.rec, c.q); got != c.want {
			t.Errorf("%s: %v, want %v", c.rule, got, c.want)
		}
	}
}

// FuzzConsoleRecordQuery: any query string is parsed or refused, never a panic, and what is
// accepted is within the page's bounds.
func FuzzConsoleRecordQuery(f *testing.F) {
	for _, s := range []string{"", "from=end&count=3", "from=offset&offset=9223372036854775807", "from=timestamp&timestamp=-1",
		"count=500&key=%00&value=%ff", "isolation=read_uncommitted&from=beginning", "from=offset&offset=1e9"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		v, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		q, err := parseRecordQuery(v)
		if err != nil {
			return
		}
		if q.count < 1 || q.count > consoleMaxRecords || q.offset < 0 || q.timestamp < 0 {
			t.Fatalf("%q accepted out of bounds: %+v", raw, q)
		}
		switch q.from {
		case "beginning", "end", "offset", "timestamp":
		default:
			t.Fatalf("%q accepted with from %q", raw, q.from)
		}
	})
}
