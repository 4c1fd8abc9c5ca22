package server_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
)

// dashboardFile is the Grafana dashboard the examples ship (examples/observability).
var dashboardFile = filepath.Join("..", "..", "..", "examples", "observability", "grafana-dashboard.json")

// dashboardMetrics lists the metric families the dashboard's queries read, split into those a
// single node reports and the cluster-mode ones.
func dashboardMetrics(t *testing.T) (single, cluster []string) {
	t.Helper()
	raw, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	name := regexp.MustCompile(`\b(?:spool|rpc_server)_[a-z_]+\b`)
	grouping := regexp.MustCompile(`\b(?:by|without) \([^)]*\)`) // label names, not metrics
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("dashboard panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			for _, n := range name.FindAllString(grouping.ReplaceAllString(tg.Expr, ""), -1) {
				// A histogram's series are one family (the histograms are all in seconds).
				for _, suffix := range []string{"_bucket", "_count", "_sum"} {
					if base := strings.TrimSuffix(n, suffix); base != n && strings.HasSuffix(base, "_seconds") {
						n = base
					}
				}
				list := &single
				for _, prefix := range []string{"spool_partitions_", "spool_controller_", "spool_isr_", "spool_zookeeper_"} {
					if strings.HasPrefix(n, prefix) {
						list = &cluster
					}
				}
				if !slices.Contains(*list, n) {
					*list = append(*list, n)
				}
			}
		}
	}
	if len(single) < 10 || len(cluster) < 5 {
		t.Fatalf("the dashboard reads only %v and %v", single, cluster)
	}
	return single, cluster
}

// checkDashboard fails for every metric of names absent from a scrape.
func checkDashboard(t *testing.T, fams map[string]*dto.MetricFamily, names []string) {
	t.Helper()
	for _, n := range names {
		if fams[n] == nil || len(fams[n].Metric) == 0 {
			t.Errorf("%s queries %s, which the broker does not report", dashboardFile, n)
		}
	}
}
