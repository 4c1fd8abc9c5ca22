// Package console is the broker's built-in web console: a read-only page on the operations
// listener (/console/) showing the cluster, topics with their partitions, leaders, replicas,
// ISR and offsets, consumer groups with members, assignments and lag, and live charts of
// throughput and request latency computed in the browser from the broker's own /metrics.
//
// The page is plain HTML, CSS and JavaScript embedded in the binary (no build step, no CDN:
// the Content-Security-Policy lets it load nothing but its own origin). It reads one JSON
// document, /console/api/state, which the server assembles on request from the metadata
// image, the local replicas and the group coordinator: the console costs nothing while
// nobody looks at it.
package console

import (
	"embed"
	"encoding/json"
	"io/fs"
	"net/http"
	"time"
)

//go:embed static
var static embed.FS

// State is the document /console/api/state serves.
type State struct {
	Broker  BrokerInfo `json:"broker"`
	Brokers []Broker   `json:"brokers"`
	Topics  []Topic    `json:"topics"`
	Groups  []Group    `json:"groups"`
}

// BrokerInfo describes the broker serving the page.
type BrokerInfo struct {
	NodeID     int32     `json:"nodeId"`
	Controller int32     `json:"controller"`
	Mode       string    `json:"mode"`
	Version    string    `json:"version"`
	Started    time.Time `json:"started"`
	Now        time.Time `json:"now"`
}

// Broker is one live broker of the cluster.
type Broker struct {
	NodeID int32   `json:"nodeId"`
	Host   string  `json:"host"`
	Port   int32   `json:"port"`
	Rack   *string `json:"rack,omitempty"`
}

// Topic is one topic and its partitions; Configs holds the topic's overrides only.
type Topic struct {
	Name       string            `json:"name"`
	ID         string            `json:"id"`
	Internal   bool              `json:"internal"`
	Partitions []Partition       `json:"partitions"`
	Configs    map[string]string `json:"configs"`
}

// Partition is one partition as the metadata image says it; the offsets are this broker's
// replica's, absent (Local false) where it has none.
type Partition struct {
	Index          int32   `json:"index"`
	Leader         int32   `json:"leader"`
	LeaderEpoch    int32   `json:"leaderEpoch"`
	Replicas       []int32 `json:"replicas"`
	ISR            []int32 `json:"isr"`
	Offline        []int32 `json:"offline"`
	Local          bool    `json:"local"`
	LogStartOffset int64   `json:"logStartOffset"`
	LogEndOffset   int64   `json:"logEndOffset"`
	HighWatermark  int64   `json:"highWatermark"`
}

// Group is one consumer group coordinated by this broker.
type Group struct {
	ID           string        `json:"id"`
	State        string        `json:"state"`
	ProtocolType string        `json:"protocolType"`
	Protocol     string        `json:"protocol"`
	Generation   int32         `json:"generation"`
	Members      []Member      `json:"members"`
	Offsets      []GroupOffset `json:"offsets"`
	Lag          int64         `json:"lag"` // the sum over Offsets with a known end
}

// Member is one group member with its assignment decoded (consumer groups only).
type Member struct {
	MemberID   string            `json:"memberId"`
	InstanceID *string           `json:"instanceId,omitempty"`
	ClientID   string            `json:"clientId"`
	ClientHost string            `json:"clientHost"`
	Assignment []TopicPartitions `json:"assignment"`
}

// TopicPartitions is a topic and some of its partitions.
type TopicPartitions struct {
	Topic      string  `json:"topic"`
	Partitions []int32 `json:"partitions"`
}

// GroupOffset is a group's committed offset of one partition and, where this broker has a
// replica, the partition's high watermark and the lag (HasEnd).
type GroupOffset struct {
	Topic         string `json:"topic"`
	Partition     int32  `json:"partition"`
	Committed     int64  `json:"committed"`
	HighWatermark int64  `json:"highWatermark"`
	Lag           int64  `json:"lag"`
	HasEnd        bool   `json:"hasEnd"`
}

// contentSecurityPolicy keeps every request of the page on the broker's own origin.
const contentSecurityPolicy = "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Handler serves the console under /console/: the embedded page and /console/api/state from
// state, which is called once per request.
func Handler(state func() State) http.Handler {
	files, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /console/api/state", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		enc := json.NewEncoder(w)
		if err := enc.Encode(state()); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	})
	mux.Handle("GET /console/", http.StripPrefix("/console/", http.FileServerFS(files)))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", contentSecurityPolicy)
		w.Header().Set("X-Content-Type-Options", "nosniff")
		mux.ServeHTTP(w, r)
	})
}
