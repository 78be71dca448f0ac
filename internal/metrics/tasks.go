package metrics

import "github.com/prometheus/client_golang/prometheus"

// Tasks are what the metrics of the tasks extension
// (io.modelcontextprotocol/tasks) report: the gauges and counters of the
// server's tasks table.
type Tasks struct {
	Tasks         int   // tasks kept now, running or finished
	Running       int64 // of those, working or input_required
	InputRequired int64 // of those, waiting for tasks/update
	KeptBytes     int64 // bytes of kept results
	ReservedBytes int64 // room the running tasks hold for their results
	Listeners     int   // notifications/tasks listeners now
	Created       uint64
	// Ended counts the tasks that ended, by status: completed, failed,
	// cancelled.
	Ended   map[string]uint64
	Expired uint64 // finished tasks forgotten after tasks.keep
	// Refusals counts, by reason: cap (a call past its threshold answered
	// directly at a cap on tasks), kept_full and kept_full_client (one
	// answered directly because the kept results and the running tasks'
	// reservations left no room for its result: the server's, its
	// client's), result_too_large (a task failed for its result's size),
	// listeners (a listener refused at a cap).
	Refusals             map[string]uint64
	Unknown              uint64 // lookups of ids unknown or not the caller's
	Drained              uint64 // tasks cancelled by the drain
	DroppedNotifications uint64 // notifications/tasks a listener had no room for
}

var (
	taskStatuses       = []string{"completed", "failed", "cancelled"}
	taskRefusalReasons = []string{"cap", "kept_full", "kept_full_client", "result_too_large", "listeners"}
)

var (
	tasksDesc         = prometheus.NewDesc("hangar_tasks", "Tasks kept now (tasks extension), running or finished.", nil, nil)
	tasksRunningDesc  = prometheus.NewDesc("hangar_tasks_running", "Tasks working or waiting for input.", nil, nil)
	tasksInputDesc    = prometheus.NewDesc("hangar_tasks_input_required", "Tasks waiting for tasks/update.", nil, nil)
	tasksKeptDesc     = prometheus.NewDesc("hangar_tasks_kept_bytes", "Bytes of the results kept for tasks.", nil, nil)
	tasksReservedDesc = prometheus.NewDesc("hangar_tasks_reserved_bytes", "Bytes the running tasks hold for their results (tasks.max_result_bytes each).", nil, nil)
	tasksListenDesc   = prometheus.NewDesc("hangar_tasks_listeners", "notifications/tasks listeners now.", nil, nil)
	tasksCreatedDesc  = prometheus.NewDesc("hangar_tasks_created_total", "Calls that became tasks.", nil, nil)
	tasksEndedDesc    = prometheus.NewDesc("hangar_tasks_ended_total", "Tasks that ended, by status: completed, failed, cancelled.", []string{"status"}, nil)
	tasksExpiredDesc  = prometheus.NewDesc("hangar_tasks_expired_total", "Finished tasks forgotten after tasks.keep.", nil, nil)
	tasksRefusalsDesc = prometheus.NewDesc("hangar_tasks_refusals_total", "By reason: cap (a call answered directly at a cap on tasks), kept_full and kept_full_client (a call answered directly: no room for its result under tasks.max_kept_bytes, or its client's tasks.max_kept_bytes_per_client), result_too_large (a task failed for its result's size), listeners (a listener refused at a cap).", []string{"reason"}, nil)
	tasksUnknownDesc  = prometheus.NewDesc("hangar_tasks_unknown_total", "tasks/* requests for ids unknown or not the caller's.", nil, nil)
	tasksDrainedDesc  = prometheus.NewDesc("hangar_tasks_drained_total", "Tasks cancelled because the server shut down.", nil, nil)
	tasksDroppedDesc  = prometheus.NewDesc("hangar_tasks_dropped_notifications_total", "notifications/tasks a listener's buffer had no room for.", nil, nil)
)

// SetTasks sets what the metrics of tasks report, read at each scrape;
// they are served from the first call on.
func (m *Metrics) SetTasks(f func() Tasks) {
	if m == nil {
		return
	}
	m.tasks.Store(&f)
	m.tasksOnce.Do(func() { m.reg.MustRegister(&tasksCollector{m: m}) })
}

type tasksCollector struct{ m *Metrics }

func (c *tasksCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{tasksDesc, tasksRunningDesc, tasksInputDesc, tasksKeptDesc, tasksReservedDesc, tasksListenDesc, tasksCreatedDesc, tasksEndedDesc, tasksExpiredDesc, tasksRefusalsDesc, tasksUnknownDesc, tasksDrainedDesc, tasksDroppedDesc} {
		ch <- d
	}
}

func (c *tasksCollector) Collect(ch chan<- prometheus.Metric) {
	f := c.m.tasks.Load()
	if f == nil {
		return
	}
	s := (*f)()
	gauge := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v)
	}
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge(tasksDesc, float64(s.Tasks))
	gauge(tasksRunningDesc, float64(s.Running))
	gauge(tasksInputDesc, float64(s.InputRequired))
	gauge(tasksKeptDesc, float64(s.KeptBytes))
	gauge(tasksReservedDesc, float64(s.ReservedBytes))
	gauge(tasksListenDesc, float64(s.Listeners))
	counter(tasksCreatedDesc, s.Created)
	for _, st := range taskStatuses {
		counter(tasksEndedDesc, s.Ended[st], st)
	}
	counter(tasksExpiredDesc, s.Expired)
	for _, r := range taskRefusalReasons {
		counter(tasksRefusalsDesc, s.Refusals[r], r)
	}
	counter(tasksUnknownDesc, s.Unknown)
	counter(tasksDrainedDesc, s.Drained)
	counter(tasksDroppedDesc, s.DroppedNotifications)
}
