package metrics

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/spoolmq/spool/protocol-spec/wire"
)

func produceResponse(code int16) *wire.ProduceResponse {
	resp := &wire.ProduceResponse{}
	resp.Default()
	resp.Responses = []wire.ProduceResponseTopicProduceResponse{{Name: "t", PartitionResponses: []wire.ProduceResponsePartitionProduceResponse{
		{Index: 0, ErrorCode: code}, {Index: 1}}}}
	return resp
}

func scrapeText(t *testing.T, m *Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler(func() error { return nil }).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Result().Body)
	return string(body)
}

// TestMetricsNestedErrorCodes: error codes deep in a response are counted by API and name,
// and zero codes are not.
func TestMetricsNestedErrorCodes(t *testing.T) {
	m, err := New()
	if err != nil {
		t.Fatal(err)
	}
	m.ResponseErrors(wire.KeyProduce, produceResponse(wire.ErrNotLeaderOrFollower.Code))
	m.ResponseErrors(wire.KeyProduce, produceResponse(wire.ErrNotLeaderOrFollower.Code))
	m.ResponseErrors(wire.KeyProduce, produceResponse(0))
	body := scrapeText(t, m)
	want := `spool_request_errors_total{error_type="NOT_LEADER_OR_FOLLOWER",rpc_method="Produce"} 2`
	if !strings.Contains(body, want) {
		t.Fatalf("scrape lacks %s:\n%s", want, body)
	}
	if strings.Count(body, "spool_request_errors_total{") != 1 {
		t.Fatalf("zero error codes were counted:\n%s", body)
	}
}

// TestMetricsNilIsOff: a nil *Metrics records nothing and does not panic.
func TestMetricsNilIsOff(t *testing.T) {
	var m *Metrics
	m.Request(wire.KeyProduce, 9, RequestTimes{})
	m.ResponseErrors(wire.KeyProduce, produceResponse(1))
	m.Produced("t", 10, 1)
	m.Fetched("t", 10)
	m.Connection(1)
	if err := m.Observe(nil, nil, nil); err != nil {
		t.Fatal(err)
	}
	if allocs := testing.AllocsPerRun(100, func() { m.Request(wire.KeyProduce, 9, RequestTimes{}) }); allocs != 0 {
		t.Fatalf("recording with metrics off allocates %v times", allocs)
	}
}

// BenchmarkMetricsPerRequest is what the broker adds to one produce request with metrics on:
// the latency, the response's error codes and the topic's bytes and records.
func BenchmarkMetricsPerRequest(b *testing.B) {
	m, err := New()
	if err != nil {
		b.Fatal(err)
	}
	resp := produceResponse(0)
	b.ReportAllocs()
	for b.Loop() {
		start := time.Now()
		m.Produced("t", 1000, 10)
		now := time.Now()
		m.Request(wire.KeyProduce, 9, RequestTimes{Read: start, Handled: start, Returned: now, Ready: now, Written: now})
		m.ResponseErrors(wire.KeyProduce, resp)
	}
}

// BenchmarkTracerPerRequest is the dispatcher's cost of one request's span: off (a nil
// *Tracer, the default) against on, exporting to an OTLP/HTTP receiver that discards:
//
//	go test ./broker/internal/metrics -run '^$' -bench TracerPerRequest
func BenchmarkTracerPerRequest(b *testing.B) {
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
	}))
	defer sink.Close()
	on, err := NewTracer(sink.URL)
	if err != nil {
		b.Fatal(err)
	}
	defer on.Shutdown(context.Background())
	resp := produceResponse(0)
	start := time.Now()
	for _, mode := range []struct {
		name string
		t    *Tracer
	}{{"off", nil}, {"on", on}} {
		b.Run(mode.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				mode.t.Request(RequestSpan{Key: wire.KeyProduce, Version: 9, ClientID: "bench", Start: start,
					RequestBytes: 1000, ResponseBytes: 60, Response: resp})
			}
		})
	}
}

// TestMetricsRequestPhases: each phase of a request lands in its own series of the phase
// histogram, with the durations between the instants given, and the total in the call
// duration histogram.
func TestMetricsRequestPhases(t *testing.T) {
	m, err := New()
	if err != nil {
		t.Fatal(err)
	}
	read := time.Now()
	at := func(ms int) time.Time { return read.Add(time.Duration(ms) * time.Millisecond) }
	// queue 1ms, local 2ms, remote 30ms, send 400ms: each in a different bucket.
	m.Request(wire.KeyFetch, 12, RequestTimes{Read: read, Handled: at(1), Returned: at(3), Ready: at(33), Written: at(433)})
	body := scrapeText(t, m)
	for _, want := range []string{
		`spool_request_phase_duration_seconds_sum{rpc_method="Fetch",spool_request_phase="queue"} 0.001`,
		`spool_request_phase_duration_seconds_sum{rpc_method="Fetch",spool_request_phase="local"} 0.002`,
		`spool_request_phase_duration_seconds_sum{rpc_method="Fetch",spool_request_phase="remote"} 0.03`,
		`spool_request_phase_duration_seconds_sum{rpc_method="Fetch",spool_request_phase="send"} 0.4`,
		`spool_request_phase_duration_seconds_bucket{rpc_method="Fetch",spool_request_phase="remote",le="0.025"} 0`,
		`spool_request_phase_duration_seconds_bucket{rpc_method="Fetch",spool_request_phase="remote",le="0.05"} 1`,
		`rpc_server_call_duration_seconds_sum{kafka_api_version="12",rpc_method="Fetch"} 0.433`,
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("scrape lacks %s", want)
		}
	}
	if t.Failed() {
		t.Log(body)
	}
}
