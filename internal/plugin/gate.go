package plugin

import (
	"context"
	"fmt"
)

// compileSlots bounds the modules being compiled, or read from the
// compilation cache, at once in the whole process. Each of them holds its
// module decoded, the compiler's working memory and the machine code being
// made: tens of MiB for a Go plugin, most of it garbage once the module is
// compiled. Ten plugins called at once on their first call, with an empty
// cache, compiled all at once: 1.1 GiB of RSS, and calls slowed to 78 a
// second while the collector ran (RATIONALE.md, "Why are compilations
// taken two at a time?"). One compilation already uses every core
// (experimental.WithCompilationWorkers); the second keeps them busy while
// the first decodes or reads its cache entry, which use one.
var compileSlots = make(chan struct{}, 2)

// enterCompile waits for a compilation slot, or for ctx to end. leave
// gives the slot back.
func enterCompile(ctx context.Context) (leave func(), err error) {
	select {
	case compileSlots <- struct{}{}:
		return func() { <-compileSlots }, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for other plugins' compilations to end: %w", context.Cause(ctx))
	}
}
