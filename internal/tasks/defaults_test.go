package tasks_test

import (
	"testing"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/mrtr"
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

// A task reserves MaxResultBytes of the server's and its owner's kept
// bytes: bounds that leave no room for one result are refused, as the
// configuration refuses them, rather than making a table that never makes
// a task.
func TestBoundsLeaveRoomForOneResult(t *testing.T) {
	m, err := mrtr.New(mrtr.Options{Key: testKey})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for _, o := range []tasks.Options{
		{MaxKeptBytes: 512 << 10},                                  // the default result, 1 MiB, past it
		{MaxResultBytes: 64 << 10, MaxKeptBytesPerOwner: 32 << 10}, // past the owner's
		{MaxResultBytes: 64 << 10, MaxKeptBytes: 1 << 20, MaxKeptBytesPerOwner: 2 << 20},
	} {
		if _, err := tasks.New(m, o); err == nil {
			t.Errorf("New(%+v) made a table", o)
		}
	}
	for _, o := range []tasks.Options{
		{},
		{MaxResultBytes: 64 << 10, MaxKeptBytes: 64 << 10}, // the owner's default: MaxResultBytes
		{MaxResultBytes: 64 << 10, MaxKeptBytes: 1 << 20, MaxKeptBytesPerOwner: 64 << 10},
	} {
		tb, err := tasks.New(m, o)
		if err != nil {
			t.Errorf("New(%+v): %v", o, err)
			continue
		}
		tb.Close()
	}
}
