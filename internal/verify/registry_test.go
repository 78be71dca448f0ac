package verify_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"

	"github.com/hangar-mcp/hangar/internal/config"
	"github.com/hangar-mcp/hangar/internal/source"
	"github.com/hangar-mcp/hangar/internal/source/registrytest"
	"github.com/hangar-mcp/hangar/internal/verify"
)

func TestMain(m *testing.M) {
	code := m.Run()
	registrytest.Cleanup()
	os.Exit(code)
}

// TestRegistry pushes plugins to a real registry (the CNCF distribution
// registry on 127.0.0.1), signs some, and resolves them through
// source.Resolver with a verify.Verifier, as the server does.
func TestRegistry(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a registry process")
	}
	ctx := context.Background()
	reg := registrytest.Start(t)
	vs := newVirtual(t)
	key := p256(t)
	keyFile := writePublicKey(t, key.Public())
	otherKeyFile := writePublicKey(t, p256(t).Public())

	pusher := &source.Resolver{CacheDir: t.TempDir()}
	push := func(repo, label string) (source.Pushed, *remote.Repository, []byte) {
		t.Helper()
		wasm := append([]byte("\x00asm\x01\x00\x00\x00"), "hangar verify registry test "+label...)
		p, err := pusher.Push(ctx, wasm, "plugin.wasm", reg.Ref(repo+":1"))
		if err != nil {
			t.Fatal(err)
		}
		r, err := remote.NewRepository(reg.Host + "/" + repo)
		if err != nil {
			t.Fatal(err)
		}
		r.PlainHTTP = true
		return p, r, wasm
	}

	keyed, keyedRepo, keyedWasm := push("hangar/keyed", "keyed")
	mustSign(t, keyedRepo, keyed.Manifest, newKeypair(t, key), &verify.SignOptions{Name: reg.Host + "/hangar/keyed"})
	unsigned, unsignedRepo, _ := push("hangar/unsigned", "unsigned")
	keyless, keylessRepo, _ := push("hangar/keyless", "keyless")
	kp, opts := vs.keyless(t, issuer, identity, false)
	mustSign(t, keylessRepo, keyless.Manifest, kp, opts)

	// The signatures are found through the registry (referrers API, or
	// oras's tag-schema fallback).
	refs, err := registry.Referrers(ctx, keyedRepo, keyed.Manifest, verify.BundleMediaType)
	if err != nil || len(refs) != 1 {
		t.Fatalf("referrers: %v, %v", refs, err)
	}
	wantErr(t, verify.Verify(ctx, keyedRepo, keyed.Manifest, keyPolicy(t, key.Public()), nil), nil)
	wantErr(t, verify.Verify(ctx, unsignedRepo, unsigned.Manifest, keyPolicy(t, key.Public()), nil), verify.ErrUnsigned)

	// A signature copied onto another plugin's manifest does not verify it.
	b := bundleOf(t, keyedRepo, refs[0])
	if _, err := verify.Attach(ctx, unsignedRepo, unsigned.Manifest, b); err != nil {
		t.Fatal(err)
	}
	wantErr(t, verify.Verify(ctx, unsignedRepo, unsigned.Manifest, keyPolicy(t, key.Public()), nil), verify.ErrSignatureMismatch)

	for _, tc := range []struct {
		name   string
		src    string
		policy config.Verify
		want   error
	}{
		{"key", reg.Ref("hangar/keyed:1"), config.Verify{Key: keyFile}, nil},
		{"key by digest", keyed.Reference, config.Verify{Key: keyFile}, nil},
		{"other key", reg.Ref("hangar/keyed:1"), config.Verify{Key: otherKeyFile}, verify.ErrSignatureMismatch},
		{"signature of another plugin", reg.Ref("hangar/unsigned:1"), config.Verify{Key: keyFile}, verify.ErrSignatureMismatch},
		{"keyless", reg.Ref("hangar/keyless:1"), config.Verify{Issuer: issuer, Subject: identity}, nil},
		{"keyless regexp", reg.Ref("hangar/keyless:1"), config.Verify{Issuer: issuer, SubjectRegexp: `https://github\.com/acme/.*`}, nil},
		{"keyless wrong subject", reg.Ref("hangar/keyless:1"), config.Verify{Issuer: issuer, Subject: "ci@acme.test"}, verify.ErrIdentityMismatch},
		{"keyless policy, key signature", reg.Ref("hangar/keyed:1"), config.Verify{Issuer: issuer, Subject: identity}, verify.ErrSignatureMismatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &source.Resolver{CacheDir: t.TempDir(), Verifier: &verify.Verifier{TrustedMaterial: vs.trust()}}
			a, err := r.Resolve(ctx, config.Plugin{Name: "p", Source: tc.src, Kind: config.SourceOCI, Verify: &tc.policy})
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				got, err := a.Read()
				if err != nil {
					t.Fatal(err)
				}
				if tc.name == "key" && !bytes.Equal(got, keyedWasm) {
					t.Error("resolved another module")
				}
				return
			}
			if !errors.Is(err, source.ErrUnsigned) || !errors.Is(err, tc.want) {
				t.Fatalf("got %v; want source.ErrUnsigned and %v", err, tc.want)
			}
			if entries, _ := os.ReadDir(r.CacheDir); len(entries) != 0 {
				t.Errorf("refused plugin cached: %v", entries)
			}
			t.Logf("refused as expected: %v", err)
		})
	}

	// The real unsigned case through the resolver: a fresh plugin.
	fresh, _, _ := push("hangar/fresh", "fresh")
	r := &source.Resolver{CacheDir: t.TempDir(), Verifier: &verify.Verifier{}}
	_, err = r.Resolve(ctx, config.Plugin{Name: "p", Source: fresh.Reference, Kind: config.SourceOCI, Verify: &config.Verify{Key: keyFile}})
	if !errors.Is(err, source.ErrUnsigned) || !errors.Is(err, verify.ErrUnsigned) || !strings.Contains(err.Error(), "no signature") {
		t.Fatalf("unsigned: %v", err)
	}
}
