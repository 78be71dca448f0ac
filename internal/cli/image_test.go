package cli

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry/remote"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/plugin"
	"github.com/hangar-mcp/hangar/internal/source/registrytest"
	"github.com/hangar-mcp/hangar/internal/testutil"
	"github.com/hangar-mcp/hangar/internal/verify"
)

// TestServeHyperMCPImage serves a real plugin published as hyper-mcp
// publishes them (a container image FROM scratch holding /plugin.wasm,
// signed): the configuration "hangar import hyper-mcp" prints for it, with
// the signer's key, loads and lists the plugin's tools; the lock pins the
// image.
func TestServeHyperMCPImage(t *testing.T) {
	reg := registrytest.Start(t)
	ctx := context.Background()
	wasm := mustRead(t, testutil.BuildPlugin(t, "./internal/testplugins/legacy"))
	isolate(t)

	// docker build of "FROM scratch\nCOPY plugin.wasm /plugin.wasm".
	var layer bytes.Buffer
	zw := gzip.NewWriter(&layer)
	tw := tar.NewWriter(zw)
	tw.WriteHeader(&tar.Header{Name: "plugin.wasm", Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(wasm))})
	tw.Write(wasm)
	tw.Close()
	zw.Close()
	repo, err := remote.NewRepository(reg.Host + "/tuananh/legacy-plugin")
	if err != nil {
		t.Fatal(err)
	}
	repo.PlainHTTP = true
	push := func(mt string, b []byte) ocispec.Descriptor {
		d := content.NewDescriptorFromBytes(mt, b)
		if err := repo.Push(ctx, d, bytes.NewReader(b)); err != nil {
			t.Fatal(err)
		}
		return d
	}
	ld := push(ocispec.MediaTypeImageLayerGzip, layer.Bytes())
	cfg, _ := json.Marshal(ocispec.Image{Platform: ocispec.Platform{OS: "linux", Architecture: "amd64"}, RootFS: ocispec.RootFS{Type: "layers"}})
	cd := push(ocispec.MediaTypeImageConfig, cfg)
	raw, _ := json.Marshal(ocispec.Manifest{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageManifest, Config: cd, Layers: []ocispec.Descriptor{ld}})
	md := content.NewDescriptorFromBytes(ocispec.MediaTypeImageManifest, raw)
	if err := repo.PushReference(ctx, md, bytes.NewReader(raw), "1.0"); err != nil {
		t.Fatal(err)
	}
	key := newP256(t)
	if _, err := verify.Attach(ctx, repo, md, signBundle(t, md, key, nil)); err != nil {
		t.Fatal(err)
	}

	// The hyper-mcp configuration, imported.
	dir := t.TempDir()
	writePublicKeyPEM(t, dir, "cosign.pub", key.Public())
	hyper := filepath.Join(dir, "config.json")
	os.WriteFile(hyper, []byte(fmt.Sprintf(`{"plugins": {"legacy": {"url": "%s"}}}`, reg.Ref("tuananh/legacy-plugin:1.0"))), 0o644)
	out, errOut, code := hangar(t, "import", "hyper-mcp", hyper)
	if code != 0 {
		t.Fatalf("import: %s", errOut)
	}
	cfgPath := filepath.Join(dir, "hangar.yaml")
	os.WriteFile(cfgPath, []byte(out), 0o644)
	c, err := config.Load(cfgPath)
	if err != nil {
		t.Fatalf("imported configuration: %v\n%s", err, out)
	}
	engine, err := plugin.NewEngine(testutil.CacheDir())
	if err != nil {
		t.Fatal(err)
	}
	defer engine.Close(ctx)
	for i := range 2 { // resolved, then from the lock and the cache
		ps, err := loadPlugins(ctx, engine, c.Plugins, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err != nil {
			t.Fatalf("load %d: %v", i, err)
		}
		tools, err := ps[0].ListTools(ctx, nil)
		closeAll(ctx, ps)
		if err != nil || len(tools) == 0 {
			t.Fatalf("tools: %v, %v", tools, err)
		}
	}
	var lf struct {
		Plugins map[string]struct{ SHA256, Manifest string }
	}
	json.Unmarshal(mustRead(t, filepath.Join(dir, "hangar.lock")), &lf)
	if e := lf.Plugins["legacy"]; e.Manifest != md.Digest.String() || e.SHA256 != hexSHA256(wasm) {
		t.Errorf("lock entry %+v; want manifest %s, sha256 %s", e, md.Digest, hexSHA256(wasm))
	}
}
