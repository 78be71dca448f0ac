package config

import (
	"time"

	"gopkg.in/yaml.v3"
)

// Tasks configures the tasks extension of MCP 2026-07-28
// (io.modelcontextprotocol/tasks): a tools/call of a client that declares
// it, still running after After, becomes a task the client polls. See the
// package documentation for what each key means.
type Tasks struct {
	// Enabled offers the extension in server/discover; false: it is not
	// offered, and no call becomes a task.
	Enabled bool
	// After is the threshold after which a call still running becomes a
	// task.
	After time.Duration
	// MaxTasks and MaxTasksPerClient cap the tasks kept, running or
	// finished, on the server and per principal (or anonymous client).
	MaxTasks, MaxTasksPerClient int
	// MaxResultBytes bounds a task's result; MaxKeptBytes all kept
	// results. A running task holds MaxResultBytes of MaxKeptBytes for its
	// result, so at most MaxKeptBytes/MaxResultBytes tasks run at once; a
	// call with no room left is answered directly, not made a task.
	MaxResultBytes, MaxKeptBytes int64
	// MaxKeptBytesPerClient bounds the kept results (and running tasks'
	// reservations) of one principal (or anonymous client), so that one
	// cannot take all of MaxKeptBytes from the others; 0, the default,
	// means an eighth of MaxKeptBytes, at least MaxResultBytes. It is at
	// least MaxResultBytes, so that every client may run one task.
	MaxKeptBytesPerClient int64
	// Keep is how long a finished task is kept; MaxRun bounds a task's run.
	Keep, MaxRun time.Duration
	// PollInterval is the pollIntervalMs told to clients.
	PollInterval time.Duration
	// MaxListeners and MaxListenersPerClient cap the notifications/tasks
	// listeners.
	MaxListeners, MaxListenersPerClient int
}

// Defaults and bounds of the tasks section (the defaults are package
// tasks's, repeated: package config imports nothing of the server).
const (
	DefaultTaskAfter                 = 2 * time.Second
	DefaultMaxTasks                  = 1000
	DefaultMaxTasksPerClient         = 16
	DefaultMaxTaskResultBytes        = 1 << 20
	DefaultMaxTaskKeptBytes          = 64 << 20
	DefaultTaskKeep                  = 15 * time.Minute
	DefaultTaskMaxRun                = time.Hour
	DefaultTaskPollInterval          = time.Second
	DefaultMaxTaskListeners          = 1000
	DefaultMaxTaskListenersPerClient = 8
	maxTaskDuration                  = 24 * time.Hour
	maxTaskBytes                     = 4 << 30
)

// DefaultTasks returns the tasks section's defaults.
func DefaultTasks() Tasks {
	return Tasks{
		Enabled:               true,
		After:                 DefaultTaskAfter,
		MaxTasks:              DefaultMaxTasks,
		MaxTasksPerClient:     DefaultMaxTasksPerClient,
		MaxResultBytes:        DefaultMaxTaskResultBytes,
		MaxKeptBytes:          DefaultMaxTaskKeptBytes,
		Keep:                  DefaultTaskKeep,
		MaxRun:                DefaultTaskMaxRun,
		PollInterval:          DefaultTaskPollInterval,
		MaxListeners:          DefaultMaxTaskListeners,
		MaxListenersPerClient: DefaultMaxTaskListenersPerClient,
	}
}

var tasksKeys = []string{"enabled", "after", "max_tasks", "max_tasks_per_client", "max_result_bytes", "max_kept_bytes", "max_kept_bytes_per_client", "keep", "max_run", "poll_interval", "max_listeners", "max_listeners_per_client"}

func (d *decoder) tasks(n *yaml.Node, p string) Tasks {
	t := DefaultTasks()
	f := d.mapping(n, p, tasksKeys, nil)
	if e, ok := f["enabled"]; ok {
		if v, ok := d.boolean(e.val, join(p, "enabled")); ok {
			t.Enabled = v
		}
	}
	for _, c := range []struct {
		key string
		v   *time.Duration
	}{{"after", &t.After}, {"keep", &t.Keep}, {"max_run", &t.MaxRun}, {"poll_interval", &t.PollInterval}} {
		if e, ok := f[c.key]; ok {
			if v, ok := d.duration(e.val, join(p, c.key)); ok {
				if v > maxTaskDuration {
					d.errorf(resolve(e.val), join(p, c.key), "must be at most %s, got %s", maxTaskDuration, v)
				} else {
					*c.v = v
				}
			}
		}
	}
	for _, c := range []struct {
		key string
		v   *int
	}{{"max_tasks", &t.MaxTasks}, {"max_tasks_per_client", &t.MaxTasksPerClient}, {"max_listeners", &t.MaxListeners}, {"max_listeners_per_client", &t.MaxListenersPerClient}} {
		if e, ok := f[c.key]; ok {
			if v, ok := d.count(e.val, join(p, c.key), 1); ok {
				*c.v = v
			}
		}
	}
	for _, c := range []struct {
		key string
		v   *int64
	}{{"max_result_bytes", &t.MaxResultBytes}, {"max_kept_bytes", &t.MaxKeptBytes}, {"max_kept_bytes_per_client", &t.MaxKeptBytesPerClient}} {
		if e, ok := f[c.key]; ok {
			if v, ok := d.size(e.val, join(p, c.key), maxTaskBytes, ""); ok {
				*c.v = v
			}
		}
	}
	if t.MaxResultBytes > t.MaxKeptBytes {
		d.errorf(resolve(n), join(p, "max_result_bytes"), "must be at most max_kept_bytes (%s), got %s", formatSize(t.MaxKeptBytes), formatSize(t.MaxResultBytes))
	}
	// Set, the bound per client lies between the two: below
	// max_result_bytes, no task of the client could reserve the room of a
	// result the server allows, so none would ever run.
	if c := t.MaxKeptBytesPerClient; c != 0 && (c > t.MaxKeptBytes || c < t.MaxResultBytes) {
		d.errorf(resolve(n), join(p, "max_kept_bytes_per_client"), "must be between max_result_bytes (%s) and max_kept_bytes (%s), got %s", formatSize(t.MaxResultBytes), formatSize(t.MaxKeptBytes), formatSize(c))
	}
	return t
}
