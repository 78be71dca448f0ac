package plugin

import (
	"context"
	"testing"

	"github.com/hangar-mcp/hangar/internal/config"
)

// BenchmarkPoolGetPut: an uncontended borrow and return of an instance,
// the pool's share of every call.
func BenchmarkPoolGetPut(b *testing.B) {
	p := loadEcho(b, config.Limits{MaxInstances: 1})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		inst, err := p.pool.get(ctx, 0)
		if err != nil {
			b.Fatal(err)
		}
		p.pool.put(inst, true)
	}
}

// BenchmarkPoolGetPutParallel: borrows and returns from every core at
// once, on a pool with an instance for each.
func BenchmarkPoolGetPutParallel(b *testing.B) {
	p := loadEcho(b, config.Limits{MaxInstances: 4})
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			inst, err := p.pool.get(ctx, 0)
			if err != nil {
				b.Error(err)
				return
			}
			p.pool.put(inst, true)
		}
	})
}
