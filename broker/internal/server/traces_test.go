package server_test

import (
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/spoolmq/spool/broker/brokertest"
)

// otlpReceiver is a minimal OTLP/HTTP trace receiver: it decodes each POST /v1/traces body
// (protobuf, possibly gzipped) as the OTLP ExportTraceServiceRequest and keeps the spans.
type otlpReceiver struct {
	url   string
	mu    sync.Mutex
	spans []receivedSpan
	// service is the resource's service.name of the last export.
	service string
}

type receivedSpan struct {
	name  string
	kind  tracepb.Span_SpanKind
	start uint64
	end   uint64
	attrs map[string]*commonpb.AnyValue
}

// startOTLPReceiver starts a receiver; keep false discards the exports unread (benchmarks).
func startOTLPReceiver(t testing.TB, keep bool) *otlpReceiver {
	r := &otlpReceiver{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r.url = "http://" + ln.Addr().String()
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", func(w http.ResponseWriter, req *http.Request) {
		if !keep {
			io.Copy(io.Discard, req.Body)
			return
		}
		var body io.Reader = req.Body
		if req.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(req.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = zr
		}
		raw, err := io.ReadAll(body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if ct := req.Header.Get("Content-Type"); ct != "application/x-protobuf" {
			t.Errorf("OTLP export with Content-Type %q", ct)
		}
		var export collectortrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(raw, &export); err != nil {
			t.Errorf("OTLP export does not decode: %v", err)
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		for _, rs := range export.ResourceSpans {
			for _, a := range rs.GetResource().GetAttributes() {
				if a.Key == "service.name" {
					r.service = a.Value.GetStringValue()
				}
			}
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					attrs := map[string]*commonpb.AnyValue{}
					for _, a := range s.Attributes {
						attrs[a.Key] = a.Value
					}
					r.spans = append(r.spans, receivedSpan{name: s.Name, kind: s.Kind, start: s.StartTimeUnixNano, end: s.EndTimeUnixNano, attrs: attrs})
				}
			}
		}
		r.mu.Unlock()
		out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return r
}

// find returns the spans for which match holds.
func (r *otlpReceiver) find(match func(receivedSpan) bool) []receivedSpan {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []receivedSpan
	for _, s := range r.spans {
		if match(s) {
			out = append(out, s)
		}
	}
	return out
}

func str(s receivedSpan, k string) string { return s.attrs[k].GetStringValue() }
func num(s receivedSpan, k string) int64  { return s.attrs[k].GetIntValue() }

// TestTracesOverOTLP: with spool.otlp.endpoint set, the broker exports a server span per
// request to a real OTLP/HTTP receiver: named by API, with version, client id, request and
// response sizes, and the error of a failed fetch.
func TestTracesOverOTLP(t *testing.T) {
	parallel(t)
	recv := startOTLPReceiver(t, true)
	b := brokertest.Start(t, brokertest.Options{Props: map[string]string{"spool.otlp.endpoint": recv.url}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.ClientID("traced-app"), kgo.DefaultProduceTopic("traced"), kgo.ProducerLinger(0),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, "traced"); err != nil {
		t.Fatal(err)
	}
	const n = 5
	for range n {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: make([]byte, 200)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if pd := fetch(t, dial(t, b.Addr), 12, fetchRequest("traced", 5, 0, 0, 0, 1<<20)); pd.ErrorCode == 0 {
		t.Fatal("fetch of partition 5 of a one-partition topic succeeded")
	}

	var produces []receivedSpan
	brokertest.WaitFor(t, 30*time.Second, fmt.Sprintf("%d Produce spans of traced-app and a failed Fetch span", n), func() bool {
		produces = recv.find(func(s receivedSpan) bool {
			return s.name == "Produce" && str(s, "messaging.client.id") == "traced-app"
		})
		return len(produces) >= n && len(recv.find(func(s receivedSpan) bool { return s.name == "Fetch" && str(s, "error.type") != "" })) > 0
	})
	for _, s := range produces {
		if s.kind != tracepb.Span_SPAN_KIND_SERVER || str(s, "rpc.system") != "kafka" || str(s, "rpc.method") != "Produce" {
			t.Errorf("Produce span: kind %v, attributes %v", s.kind, s.attrs)
		}
		if v := num(s, "kafka.api.version"); v < 3 || v > 9 {
			t.Errorf("Produce span version %d", v)
		}
		// One 200-byte value per request: the request is larger, the response smaller.
		if num(s, "spool.request.size") < 200 || num(s, "spool.response.size") <= 0 {
			t.Errorf("Produce span sizes: request %d, response %d", num(s, "spool.request.size"), num(s, "spool.response.size"))
		}
		if s.end < s.start || s.start == 0 {
			t.Errorf("Produce span times: %d to %d", s.start, s.end)
		}
		if _, ok := s.attrs["error.type"]; ok {
			t.Errorf("successful Produce span has an error: %v", s.attrs)
		}
	}
	failed := recv.find(func(s receivedSpan) bool { return s.name == "Fetch" && str(s, "error.type") != "" })[0]
	if str(failed, "error.type") != "UNKNOWN_TOPIC_OR_PARTITION" || num(failed, "kafka.error.code") != 3 || num(failed, "kafka.api.version") != 12 {
		t.Errorf("failed Fetch span: %v", failed.attrs)
	}
	recv.mu.Lock()
	service := recv.service
	recv.mu.Unlock()
	if service != "spoold" {
		t.Errorf("service.name %q, want spoold", service)
	}
}
