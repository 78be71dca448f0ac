package cli

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"text/tabwriter"

	"github.com/hangar-mcp/hangar/internal/source"
)

type pushFlags struct {
	plainHTTP optionalBool
	logLevel  string
}

func (f *pushFlags) register(fs *flag.FlagSet) {
	fs.Var(&f.plainHTTP, "plain-http", "speak plain HTTP to the registry; only for loopback registries, which use it by default (--plain-http=false forces HTTPS)")
	fs.StringVar(&f.logLevel, "log-level", "warn", "diagnostics on stderr: debug, info, warn or error")
}

var pushCmd = &command{
	name:  "push",
	args:  "[flags] PLUGIN.wasm oci://REGISTRY/REPOSITORY:TAG",
	short: "publish a plugin to an OCI registry",
	long: `Push uploads a WebAssembly plugin to an OCI registry under a tag, as an OCI
artifact Hangar can pull: an image manifest with artifactType
application/vnd.hangar.plugin.v1, an empty config, and one layer of media
type application/vnd.hangar.plugin.layer.v1.wasm holding the module. It
prints the reference pinned to the manifest's digest and the module's
SHA-256. The manifest has no timestamp, so pushing the same file again
gives the same digest.

Push does not sign; sign the pinned reference with cosign (or another
sigstore tool) and configure the plugin's verify policy to match.

Registries on loopback addresses (localhost, 127.0.0.1, [::1]) are spoken to
over plain HTTP, all others over HTTPS. Credentials come from Docker's
configuration (docker login, oras login).`,
	flags: func(fs *flag.FlagSet) { new(pushFlags).register(fs) },
}

func init() { pushCmd.run = runPush }

func runPush(ctx context.Context, env *Env, args []string) error {
	var f pushFlags
	fs := pushCmd.flagSet(env.Stderr)
	f.register(fs)
	pos, err := pushCmd.parse(env, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		pushCmd.help(env.Stderr)
		return errUsage
	}
	file, ref := pos[0], pos[1]
	log, err := logger(env.Stderr, f.logLevel)
	if err != nil {
		return err
	}
	r, err := newResolver(log)
	if err != nil {
		return err
	}
	if err := applyPlainHTTP(r, ref, f.plainHTTP); err != nil {
		return err
	}
	wasm, err := source.ReadModule(file, 0)
	if err != nil {
		return err
	}
	p, err := r.Push(ctx, wasm, filepath.Base(file), ref)
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(env.Stdout, 0, 0, 1, ' ', 0)
	fmt.Fprintf(w, "pushed:\t%s\n", ref)
	fmt.Fprintf(w, "reference:\t%s\n", p.Reference)
	fmt.Fprintf(w, "manifest:\t%s\n", p.Manifest.Digest)
	fmt.Fprintf(w, "sha256:\t%s\n", p.Layer.Digest.Encoded())
	return w.Flush()
}
