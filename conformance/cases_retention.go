package conformance

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spoolmq/spool/protocol-spec/wire"
)

// Retention and compaction as a client sees them: the log start offset moving, old offsets
// out of range, only the latest record of each key left (SPEC.md §8.2, §8.3, §5.6). Both run
// in the broker's background at its own pace, so these cases need a target that checks
// often; against one that does not, they are skipped, naming the setting.

// maxBackgroundMs is the longest retention check or cleaner backoff the cases wait for.
const maxBackgroundMs = 10000

// needFrequentCleanup skips the case unless the broker checks retention (and, where it
// reports a separate setting, runs its cleaner) at least every maxBackgroundMs.
func (t *T) needFrequentCleanup() {
	c := t.Conn()
	md := t.metadata(c, false)
	if len(md.Brokers) == 0 {
		t.Fatalf("no brokers in Metadata")
	}
	id := strconv.Itoa(int(md.Brokers[0].NodeId))
	keys := []string{"log.retention.check.interval.ms", "log.cleaner.backoff.ms"}
	var resp wire.DescribeConfigsResponse
	t.Do(c, &wire.DescribeConfigsRequest{Resources: []wire.DescribeConfigsRequestResource{{ResourceType: 4, ResourceName: id, ConfigurationKeys: keys}}}, &resp, maxV(wire.KeyDescribeConfigs))
	if len(resp.Results) != 1 || resp.Results[0].ErrorCode != 0 {
		t.Fatalf("DescribeConfigs of broker %s: %+v", id, resp.Results)
	}
	for _, e := range resp.Results[0].Configs {
		if e.Value == nil {
			continue
		}
		if v, err := strconv.ParseInt(*e.Value, 10, 64); err == nil && v > maxBackgroundMs {
			t.Skipf("needs %s of at most %d on the target (it has %d): the broker cleans up only that often", e.Name, maxBackgroundMs, v)
		}
	}
}

// waitCleanup is waitFor bounded by three cleanup periods (needFrequentCleanup), so a
// broker that never cleans fails the case in 30 s, not at the case's deadline.
func (t *T) waitCleanup(what string, cond func() (bool, string)) {
	ctx := t.Ctx
	bounded, cancel := context.WithTimeout(ctx, 3*maxBackgroundMs*time.Millisecond)
	defer cancel()
	t.Ctx = bounded
	defer func() { t.Ctx = ctx }()
	t.waitFor(what, cond)
}

// fetchFrom reads every record from offset to the log end (one fetch per batch run).
func (t *T) fetchFrom(c *Conn, topic string, offset, end int64) ([]fetchedRecord, wire.FetchResponsePartitionData) {
	var out []fetchedRecord
	var last wire.FetchResponsePartitionData
	for offset < end {
		last = t.fetchWith(c, fetchReq(topic, 0, offset, 100, 1, 16<<20, 16<<20), maxV(wire.KeyFetch))
		if last.ErrorCode != 0 {
			return out, last
		}
		recs := t.records(last.Records)
		if len(recs) == 0 {
			break
		}
		for _, r := range recs {
			if r.offset >= offset {
				out = append(out, r)
				offset = r.offset + 1
			}
		}
	}
	return out, last
}

func init() {
	register(&Case{ID: "fetch/log-start-after-retention", Spec: "§8.2, §8.3",
		Desc: "once retention (retention.bytes=1, small segments) deletes old segments, the earliest offset moves forward, a fetch from it reads to the end and reports it as the log start offset, the log end stays, and fetching below the start gets OFFSET_OUT_OF_RANGE",
		Run: func(t *T) {
			t.needFrequentCleanup()
			topic := t.Topic(1, "segment.bytes", "200", "retention.bytes", "1")
			c := t.Conn()
			const n = 10
			for i := range n { // small segments: two batches are bigger than segment.bytes
				t.produceOK(c, topic, 0, plain, rec{value: bytes.Repeat(fmt.Appendf(nil, "%d", i), 60)})
			}
			// Retention may delete segment after segment while the case reads: each try reads
			// from the earliest offset of the moment, and the case passes on the first read that
			// agrees with it.
			t.waitCleanup("retention to move the log start, and a fetch from it to agree", func() (bool, string) {
				start := t.listOffset(c, topic, 0, -2).Offset
				if start <= 0 || start >= n {
					return false, fmt.Sprintf("earliest offset %d of log end %d", start, n)
				}
				recs, last := t.fetchFrom(c, topic, start, n)
				if last.ErrorCode != 0 || len(recs) != int(n-start) || recs[0].offset != start || last.LogStartOffset != start {
					return false, fmt.Sprintf("from the earliest offset %d: %s, %d records from %v, log start offset %d", start, codeName(last.ErrorCode), len(recs), firstFetched(recs), last.LogStartOffset)
				}
				return true, ""
			})
			t.wantLogEnd(c, topic, 0, n, "retention")
			r := t.fetchWith(c, fetchReq(topic, 0, 0, 100, 1, 1<<20, 1<<20), maxV(wire.KeyFetch))
			t.wantCode("fetch at offset 0 below the log start", r.ErrorCode, wire.ErrOffsetOutOfRange)
		}})
	register(&Case{ID: "fetch/compaction-latest-per-key", Spec: "§8.2, §5.6",
		Desc: "on a compacted topic with small segments, the cleaner leaves only the latest record of each key below the active segment, at its original offset",
		Run: func(t *T) {
			t.needFrequentCleanup()
			topic := t.Topic(1, "cleanup.policy", "compact", "segment.bytes", "200", "min.cleanable.dirty.ratio", "0.01")
			c := t.Conn()
			const keys, rounds = 4, 3
			pad := strings.Repeat("x", 60) // one batch per segment
			for r := range rounds {
				for k := range keys {
					t.produceOK(c, topic, 0, plain, rec{key: fmt.Appendf(nil, "k%d", k), value: fmt.Appendf(nil, "r%d-%s", r, pad)})
				}
			}
			// A last record of its own key, so that the last round is out of the active segment.
			end := int64(keys*rounds + 1)
			t.produceOK(c, topic, 0, plain, rec{key: []byte("last"), value: []byte(pad)})
			var got []fetchedRecord
			t.waitCleanup("compaction to keep one record per key", func() (bool, string) {
				recs, last := t.fetchFrom(c, topic, 0, end)
				if last.ErrorCode != 0 {
					t.Fatalf("fetch: %s", codeName(last.ErrorCode))
				}
				got = recs
				var offs []int64
				for _, r := range recs {
					offs = append(offs, r.offset)
				}
				return len(recs) == keys+1, fmt.Sprintf("%d records at offsets %v", len(recs), offs)
			})
			for k := range keys {
				r := got[k]
				if want := int64(keys*(rounds-1) + k); r.offset != want || string(r.key) != fmt.Sprintf("k%d", k) || !bytes.HasPrefix(r.value, fmt.Appendf(nil, "r%d-", rounds-1)) {
					t.Errorf("record %d: key %q at offset %d value %.3q..., want k%d at %d from round %d", k, r.key, r.offset, r.value, k, want, rounds-1)
				}
			}
			if got[keys].offset != end-1 || string(got[keys].key) != "last" {
				t.Errorf("the last record: key %q at %d, want last at %d", got[keys].key, got[keys].offset, end-1)
			}
			t.wantLogEnd(c, topic, 0, end, "compaction")
		}})
}

func firstFetched(rs []fetchedRecord) any {
	if len(rs) == 0 {
		return "nothing"
	}
	return rs[0].offset
}
