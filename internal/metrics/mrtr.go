package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// MRTR is what the metrics of MCP 2026-07-28's multi round-trip requests
// report: the calls parked waiting for their client's input (package
// mrtr's Manager.Stats) and the retries forwarded to the replica holding
// their call (its Forwarder.Stats).
type MRTR struct {
	Parked               int64  // calls waiting for their client's input now
	Held                 int    // calls counted against the caps now
	InputRequests        uint64 // input_required answers given (a call asking twice counts twice)
	Resumed              uint64 // retries whose answers reached their call
	Expired              uint64 // parked calls cancelled because no retry came in time
	Evicted              uint64 // parked calls ended at the cap (max_parked) for a client holding fewer
	DroppedNotifications uint64 // log and progress notifications sent while no request waited, or beyond a request's queue
	// Refusals counts refused requests by reason: "cap" (too many parked
	// calls), "capability" (the client did not declare what the plugin
	// asked for), and the requestStates refused: "state_invalid",
	// "state_expired", "state_replayed", "state_principal",
	// "state_mismatch", "state_in_flight".
	Refusals map[string]uint64
	// Forwarded and ForwardFailures count retries sent to the replica
	// holding their call, and those whose replica could not be reached.
	Forwarded, ForwardFailures uint64
	// Listens are the subscriptions/listen streams open over HTTP, and
	// ListenRefusals those refused by cap: "server" (http.max_listens)
	// and "client" (http.max_listens_per_client).
	Listens        int
	ListenRefusals map[string]uint64
	// ListenEvicted counts the listen streams ended, at http.max_listens,
	// for a client that held fewer.
	ListenEvicted uint64
}

// refusalReasons are the values of the reason label.
var refusalReasons = []string{"cap", "capability", "state_invalid", "state_expired", "state_replayed", "state_principal", "state_mismatch", "state_in_flight"}

var (
	parkedDesc      = prometheus.NewDesc("hangar_mrtr_parked_calls", "Calls waiting in a plugin's host import for their client's input (MCP 2026-07-28 multi round-trip requests).", nil, nil)
	heldDesc        = prometheus.NewDesc("hangar_mrtr_held_calls", "Calls counted against the caps on parked calls (mrtr.max_parked): those that asked for input and have neither ended nor stopped waiting for the answer.", nil, nil)
	inputDesc       = prometheus.NewDesc("hangar_mrtr_input_requests_total", "Requests answered input_required.", nil, nil)
	resumedDesc     = prometheus.NewDesc("hangar_mrtr_resumed_total", "Retries whose answers reached their parked call.", nil, nil)
	evictedDesc     = prometheus.NewDesc("hangar_mrtr_evicted_total", "Parked calls ended at mrtr.max_parked for the call of a client that held fewer, after waiting 2 s at least.", nil, nil)
	expiredDesc     = prometheus.NewDesc("hangar_mrtr_expired_total", "Parked calls cancelled because no retry came within the park timeout.", nil, nil)
	mrtrDroppedDesc = prometheus.NewDesc("hangar_mrtr_dropped_notifications_total", "Log and progress notifications of calls while no request waited for them, or beyond the queue of a request whose client reads slower than its plugin sends.", nil, nil)
	refusalsDesc    = prometheus.NewDesc("hangar_mrtr_refusals_total", "Requests refused, by reason: cap, capability, state_invalid, state_expired, state_replayed, state_principal, state_mismatch, state_in_flight.", []string{"reason"}, nil)
	listensDesc     = prometheus.NewDesc("hangar_listen_streams", "MCP 2026-07-28 subscriptions/listen streams open over HTTP.", nil, nil)
	listenRefDesc   = prometheus.NewDesc("hangar_listen_refusals_total", "subscriptions/listen requests refused at a cap, by cap: server (http.max_listens) or client (http.max_listens_per_client).", []string{"cap"}, nil)
	listenEvictDesc = prometheus.NewDesc("hangar_listen_evicted_total", "subscriptions/listen streams ended with their result, at http.max_listens, for a client that held fewer streams than their own.", nil, nil)
	forwardedDesc   = prometheus.NewDesc("hangar_mrtr_forwarded_total", "Retries forwarded to the replica holding their call, by outcome: ok, or gone (the replica could not be reached).", []string{"outcome"}, nil)
)

// SetMRTR sets what the metrics of multi round-trip requests report, read
// at each scrape; they are served from the first call on.
func (m *Metrics) SetMRTR(f func() MRTR) {
	if m == nil {
		return
	}
	m.mrtr.Store(&f)
	m.mrtrOnce.Do(func() { m.reg.MustRegister(&mrtrCollector{m: m}) })
}

type mrtrCollector struct{ m *Metrics }

func (c *mrtrCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{parkedDesc, heldDesc, inputDesc, resumedDesc, expiredDesc, evictedDesc, mrtrDroppedDesc, refusalsDesc, forwardedDesc, listensDesc, listenRefDesc, listenEvictDesc} {
		ch <- d
	}
}

func (c *mrtrCollector) Collect(ch chan<- prometheus.Metric) {
	f := c.m.mrtr.Load()
	if f == nil {
		return
	}
	s := (*f)()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge(parkedDesc, float64(s.Parked))
	gauge(heldDesc, float64(s.Held))
	counter(inputDesc, s.InputRequests)
	counter(resumedDesc, s.Resumed)
	counter(expiredDesc, s.Expired)
	counter(evictedDesc, s.Evicted)
	counter(mrtrDroppedDesc, s.DroppedNotifications)
	for _, r := range refusalReasons {
		counter(refusalsDesc, s.Refusals[r], r)
	}
	counter(forwardedDesc, s.Forwarded, "ok")
	counter(forwardedDesc, s.ForwardFailures, "gone")
	gauge(listensDesc, float64(s.Listens))
	for _, c := range []string{"server", "client"} {
		counter(listenRefDesc, s.ListenRefusals[c], c)
	}
	counter(listenEvictDesc, s.ListenEvicted)
}
