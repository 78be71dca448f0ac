// Package metrics keeps Hangar's Prometheus metrics and serves them.
//
// Every label takes values from a bounded set: plugin names come from the
// configuration, methods and error kinds from fixed lists, tool and prompt
// names from what each plugin lists (at most [MaxNames] per plugin, each
// at most [MaxLabel] bytes long), and no label names a session, a client
// or a URI. A client calling unknown tool
// names creates no series: such calls never reach a plugin.
//
// A nil *Metrics records nothing, so that code can record unconditionally.
package metrics

import (
	"net/http"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Error kinds of failed plugin calls: the values of the kind label.
const (
	KindTimeout          = "timeout"           // the call ran out of its call_timeout
	KindTrap             = "trap"              // the plugin crashed (panic, unreachable, out of memory, exit)
	KindBusy             = "busy"              // no instance came free in time
	KindDenied           = "denied"            // the sandbox refused what the plugin tried (a host not granted)
	KindForbidden        = "forbidden"         // the caller's token does not allow the plugin
	KindInvalidArguments = "invalid_arguments" // tool arguments that do not match the input schema
	KindPlugin           = "plugin_error"      // the plugin reported an error itself
	KindOutput           = "output"            // output too large or malformed
	KindCancelled        = "cancelled"         // cancelled by the client, the session's end or the drain
	KindOther            = "other"
)

var kinds = []string{KindTimeout, KindTrap, KindBusy, KindDenied, KindForbidden, KindInvalidArguments, KindPlugin, KindOutput, KindCancelled, KindOther}

// Transports, the values of the transport label of sessions.
const (
	TransportStdio          = "stdio"
	TransportStreamableHTTP = "streamable_http"
	TransportSSE            = "sse"
)

// methodList are the MCP methods counted by name; others count as
// "other".
var methodList = [...]string{
	"initialize", "ping", "tools/list", "tools/call", "resources/list", "resources/read",
	"resources/templates/list", "resources/subscribe", "resources/unsubscribe", "prompts/list",
	"prompts/get", "completion/complete", "logging/setLevel", "server/discover", "subscriptions/listen",
}

// methodIndex is the index of each method in methodList.
var methodIndex = func() map[string]int {
	idx := make(map[string]int, len(methodList))
	for i, m := range methodList {
		idx[m] = i
	}
	return idx
}()

// MaxNames bounds the tool and prompt names one plugin has series for;
// calls of further names count under the name "_other".
const MaxNames = 256

// Plugin is what the plugin-state gauges report of one plugin.
type Plugin struct {
	Name        string
	Busy, Idle  int           // instances running a call, and idle
	GuestMemory uint64        // bytes of linear memory of its idle instances
	Compile     time.Duration // how long compiling it took at its last load
	// ProgressDropped counts the progress notifications it sent under a
	// token not its call's, which no client was told of, since its last
	// load.
	ProgressDropped uint64
}

// Metrics holds Hangar's metrics.
type Metrics struct {
	reg           *prometheus.Registry
	calls         *prometheus.CounterVec
	errors        *prometheus.CounterVec
	duration      *prometheus.HistogramVec
	requests      *prometheus.CounterVec
	sessions      *prometheus.GaugeVec
	sessionsTotal *prometheus.CounterVec
	reloads       *prometheus.CounterVec
	refused       *prometheus.CounterVec

	plugins   atomic.Pointer[func() []Plugin]
	mrtr      atomic.Pointer[func() MRTR] // mrtr.go
	mrtrOnce  sync.Once
	tasks     atomic.Pointer[func() Tasks] // tasks.go
	tasksOnce sync.Once

	mu     sync.Mutex
	names  map[string]map[string]bool // plugin -> names with series
	series sync.Map                   // seriesKey -> *series (callSeries)

	// requestSeries are the counters of Request, made on first use (a
	// series shows in /metrics once made): per method in methodList, then
	// "other", and per outcome, ok then error. Finding them by their
	// labels hashed both labels and took the vector's lock on every call.
	requestSeries [len(methodList) + 1][2]struct {
		once sync.Once
		c    prometheus.Counter
	}
}

// New returns metrics registered on a registry of their own, with the Go
// runtime's and the process's.
func New(version string) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(), names: map[string]map[string]bool{}}
	m.calls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hangar_plugin_calls_total",
		Help: "Calls to plugins, by plugin, MCP method and tool or prompt name (empty for resources and completions).",
	}, []string{"plugin", "method", "name"})
	m.errors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hangar_plugin_call_errors_total",
		Help: "Failed calls to plugins, by kind: timeout, trap, busy, denied, forbidden, invalid_arguments, plugin_error, output, cancelled, other.",
	}, []string{"plugin", "method", "name", "kind"})
	m.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "hangar_plugin_call_duration_seconds",
		Help:    "Time to serve a call to a plugin, from the handler's start to its answer.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
	}, []string{"plugin", "method", "name"})
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hangar_mcp_requests_total",
		Help: "MCP requests served, by method, and outcome (ok or error: a JSON-RPC error answer).",
	}, []string{"method", "outcome"})
	m.sessions = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "hangar_sessions",
		Help: "MCP sessions open, by transport.",
	}, []string{"transport"})
	m.sessionsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hangar_sessions_opened_total",
		Help: "MCP sessions opened, by transport.",
	}, []string{"transport"})
	m.reloads = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hangar_reloads_total",
		Help: "Reloads of the configuration, by result (success or failure).",
	}, []string{"result"})
	m.refused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hangar_plugin_refused_total",
		Help: "Tools, prompts, resources and resource templates a plugin listed and Hangar did not offer, by plugin, kind and reason: conflict (another plugin owns the name, URI or template shape) or invalid (a name MCP refuses, a schema that does not compile). Counted at each listing.",
	}, []string{"plugin", "kind", "reason"})
	build := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "hangar_build_info",
		Help: "Always 1; the labels say which Hangar this is.",
	}, []string{"version", "goversion"})
	build.WithLabelValues(version, runtime.Version()).Set(1)
	m.reg.MustRegister(m.calls, m.errors, m.duration, m.requests, m.sessions, m.sessionsTotal, m.reloads, m.refused, build,
		&pluginCollector{m: m},
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, t := range []string{TransportStdio, TransportStreamableHTTP, TransportSSE} {
		m.sessions.WithLabelValues(t)
		m.sessionsTotal.WithLabelValues(t)
	}
	m.reloads.WithLabelValues("success")
	m.reloads.WithLabelValues("failure")
	return m
}

// Handler serves the metrics in the Prometheus text (or OpenMetrics)
// format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{EnableOpenMetrics: true})
}

// Registry returns the registry the metrics are on.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Call records a call to a plugin: its MCP method, the tool or prompt name
// as the plugin lists it ("" for others), how long it took, and the kind of
// error ("" when it succeeded).
func (m *Metrics) Call(plugin, method, name string, d time.Duration, kind string) {
	if m == nil {
		return
	}
	method = boundMethod(method)
	s := m.callSeries(plugin, method, name)
	s.calls.Inc()
	s.duration.Observe(d.Seconds())
	name = s.name
	if kind != "" {
		if !slices.Contains(kinds, kind) {
			kind = KindOther
		}
		m.errors.WithLabelValues(plugin, method, name, kind).Inc()
	}
}

// MaxLabel bounds the length of a tool or prompt name in a label (MCP's
// longest tool name); a longer name counts under "_other".
const MaxLabel = 128

// boundName returns name, or "_other" once the plugin has MaxNames names,
// or for a name longer than MaxLabel.
func (m *Metrics) boundName(plugin, name string) string {
	if name == "" {
		return ""
	}
	if len(name) > MaxLabel {
		return "_other"
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	seen := m.names[plugin]
	if seen == nil {
		seen = map[string]bool{}
		m.names[plugin] = seen
	}
	if !seen[name] {
		if len(seen) >= MaxNames {
			return "_other"
		}
		seen[name] = true
	}
	return name
}

// series are the call counter and duration histogram of one plugin,
// method and name, as Call records them; name is the label the name got.
type series struct {
	calls    prometheus.Counter
	duration prometheus.Observer
	name     string
}

type seriesKey struct{ plugin, method, name string }

// callSeries returns the series of a call, remembered once made: finding
// them by their labels (boundName's lock and maps, then two vectors'
// hashes and locks) cost every call about 1 µs. Only names that got a
// label of their own are remembered, so the cache holds no more series
// than /metrics shows.
func (m *Metrics) callSeries(plugin, method, name string) *series {
	key := seriesKey{plugin, method, name}
	if s, ok := m.series.Load(key); ok {
		return s.(*series)
	}
	label := m.boundName(plugin, name)
	s := &series{m.calls.WithLabelValues(plugin, method, label), m.duration.WithLabelValues(plugin, method, label), label}
	if label == name {
		m.series.Store(key, s)
	}
	return s
}

func boundMethod(method string) string {
	if _, ok := methodIndex[method]; ok {
		return method
	}
	return "other"
}

// Request records an MCP request (not notifications) and whether it was
// answered with an error.
func (m *Metrics) Request(method string, failed bool) {
	if m == nil {
		return
	}
	i, ok := methodIndex[method]
	if !ok {
		i, method = len(methodList), "other"
	}
	o, outcome := 0, "ok"
	if failed {
		o, outcome = 1, "error"
	}
	rs := &m.requestSeries[i][o]
	rs.once.Do(func() { rs.c = m.requests.WithLabelValues(method, outcome) })
	rs.c.Inc()
}

// Refused records an item (kind: tool, prompt, resource or resource
// template) of a plugin that was not offered, and why: "conflict" or
// "invalid".
func (m *Metrics) Refused(plugin, kind, reason string) {
	if m == nil {
		return
	}
	m.refused.WithLabelValues(plugin, kind, reason).Inc()
}

// SessionOpened records a session opened on transport; call the function
// it returns, once, when the session ends.
func (m *Metrics) SessionOpened(transport string) (closed func()) {
	if m == nil {
		return func() {}
	}
	m.sessions.WithLabelValues(transport).Inc()
	m.sessionsTotal.WithLabelValues(transport).Inc()
	var once sync.Once
	return func() { once.Do(func() { m.sessions.WithLabelValues(transport).Dec() }) }
}

// Reloaded records a reload of the configuration.
func (m *Metrics) Reloaded(ok bool) {
	if m == nil {
		return
	}
	if ok {
		m.reloads.WithLabelValues("success").Inc()
	} else {
		m.reloads.WithLabelValues("failure").Inc()
	}
}

// SetPlugins sets what the plugin-state gauges report, read at each
// scrape.
func (m *Metrics) SetPlugins(f func() []Plugin) {
	if m == nil {
		return
	}
	m.plugins.Store(&f)
}

// pluginCollector reports the plugins' state at each scrape.
type pluginCollector struct{ m *Metrics }

var (
	instancesDesc = prometheus.NewDesc("hangar_plugin_instances", "Instances of a plugin, by state: busy (running a call) or idle.", []string{"plugin", "state"}, nil)
	memoryDesc    = prometheus.NewDesc("hangar_plugin_guest_memory_bytes", "Linear memory held by a plugin's idle instances.", []string{"plugin"}, nil)
	compileDesc   = prometheus.NewDesc("hangar_plugin_compile_seconds", "How long compiling a plugin took at its last load (little when the compiled code came from the cache).", []string{"plugin"}, nil)
	droppedDesc   = prometheus.NewDesc("hangar_plugin_progress_dropped_total", "Progress notifications of a plugin dropped because they were not under the progress token of the call that sent them (an empty or foreign token, or a call without one), since its last load.", []string{"plugin"}, nil)
)

func (c *pluginCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- instancesDesc
	ch <- memoryDesc
	ch <- compileDesc
	ch <- droppedDesc
}

func (c *pluginCollector) Collect(ch chan<- prometheus.Metric) {
	f := c.m.plugins.Load()
	if f == nil {
		return
	}
	for _, p := range (*f)() {
		ch <- prometheus.MustNewConstMetric(instancesDesc, prometheus.GaugeValue, float64(p.Busy), p.Name, "busy")
		ch <- prometheus.MustNewConstMetric(instancesDesc, prometheus.GaugeValue, float64(p.Idle), p.Name, "idle")
		ch <- prometheus.MustNewConstMetric(memoryDesc, prometheus.GaugeValue, float64(p.GuestMemory), p.Name)
		ch <- prometheus.MustNewConstMetric(compileDesc, prometheus.GaugeValue, p.Compile.Seconds(), p.Name)
		ch <- prometheus.MustNewConstMetric(droppedDesc, prometheus.CounterValue, float64(p.ProgressDropped), p.Name)
	}
}

// Sessions returns the gauge of open sessions of transport, for tests.
func (m *Metrics) Sessions(transport string) prometheus.Gauge {
	return m.sessions.WithLabelValues(transport)
}
