package tasks_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/hangar-mcp/hangar/internal/mrtr"
	"github.com/hangar-mcp/hangar/internal/plugin"
	"github.com/hangar-mcp/hangar/internal/tasks"
)

// BenchmarkGet compares tasks/get of one's own task with the cases that
// must be indistinguishable from each other: another principal's task, a
// forgotten or never issued id with a sound MAC, and a forged id.
func BenchmarkGet(b *testing.B) {
	m, _ := mrtr.New(mrtr.Options{Key: testKey})
	defer m.Close()
	tb, _ := tasks.New(m, tasks.Options{Auth: true})
	defer tb.Close()
	block := make(chan struct{})
	defer close(block)
	run := func(ctx context.Context, _ plugin.Host) (any, error) { <-block; return nil, nil }
	req := mrtr.Request{Method: "tools/call", Params: json.RawMessage(`{"name":"x"}`), Principal: "alice"}
	d, _, err := tb.Call(context.Background(), req, "", run, always)
	if err != nil || d == nil {
		b.Fatal(d, err)
	}
	other, _ := tasks.New(m, tasks.Options{Auth: true})
	defer other.Close()
	unissued, _, _ := other.Call(context.Background(), req, "", run, always)
	forged := []byte(d.TaskID)
	forged[0] ^= 1
	for _, bc := range []struct {
		name  string
		owner tasks.Owner
		id    string
		ok    bool
	}{
		{"own", alice, d.TaskID, true},
		{"another principal", tasks.Owner{Principal: "bob"}, d.TaskID, false},
		{"sound but not here", alice, unissued.TaskID, false},
		{"forged", alice, string(forged), false},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := tb.Get(bc.owner, bc.id); (err == nil) != bc.ok {
					b.Fatal(err)
				}
			}
		})
	}
}
