package tasks_test

import (
	"testing"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/tasks"
)

// TestDefaultsAsConfig: the configuration's defaults of the tasks section
// are this package's, repeated there because package config imports
// nothing of the server; this holds the two copies equal.
func TestDefaultsAsConfig(t *testing.T) {
	for _, c := range []struct {
		name       string
		cfg, tasks any
	}{
		{"after", config.DefaultTaskAfter, tasks.DefaultAfter},
		{"max_tasks", config.DefaultMaxTasks, tasks.DefaultMaxTasks},
		{"max_tasks_per_client", config.DefaultMaxTasksPerClient, tasks.DefaultMaxTasksPerOwner},
		{"max_result_bytes", config.DefaultMaxTaskResultBytes, tasks.DefaultMaxResultBytes},
		{"max_kept_bytes", config.DefaultMaxTaskKeptBytes, tasks.DefaultMaxKeptBytes},
		{"keep", config.DefaultTaskKeep, tasks.DefaultKeep},
		{"max_run", config.DefaultTaskMaxRun, tasks.DefaultMaxRun},
		{"poll_interval", config.DefaultTaskPollInterval, tasks.DefaultPollInterval},
		{"max_listeners", config.DefaultMaxTaskListeners, tasks.DefaultMaxListeners},
		{"max_listeners_per_client", config.DefaultMaxTaskListenersPerClient, tasks.DefaultMaxListenersPerOwner},
	} {
		if c.cfg != c.tasks {
			t.Errorf("tasks.%s: the configuration's default is %v, package tasks's %v", c.name, c.cfg, c.tasks)
		}
	}
}
