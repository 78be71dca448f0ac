// Command hangar serves WebAssembly plugins to AI applications as one MCP
// server. Run "hangar help" for usage.
package main

import (
	"context"
	"os"

	"github.com/hangar-mcp/hangar/internal/cli"
	_ "github.com/hangar-mcp/hangar/internal/sdkdefaults" // before the SDK reads MCPGODEBUG
)

func main() {
	os.Exit(cli.Main(context.Background(), os.Args[1:], &cli.Env{
		Stdin:  os.Stdin,
		Stdout: os.Stdout,
		Stderr: os.Stderr,
	}))
}
