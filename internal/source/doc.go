// Package source resolves where plugin modules come from: a local file, an
// https:// URL pinned by its SHA-256, or an artifact in an OCI registry
// (oci://registry/repository:tag or @sha256:digest), pulled with oras-go.
//
// A [Resolver] turns a configured plugin ([config.Plugin]) into an
// [Artifact]: a module on disk with its digest. Remote modules are stored in
// a content-addressed [Cache] (CacheDir/blobs/sha256/<hex>), written
// atomically and hashed again whenever they are used. A [Lock] (the lock
// file of a configuration, such as hangar.lock for hangar.yaml; see
// config.LockPath) records what each plugin resolved to: the module's
// SHA-256 and, for OCI sources, the manifest digest and the signature policy
// it was verified under, so a later run loads the same bytes, even if a tag
// moved, and needs no network when the cache has them.
//
// # OCI artifacts
//
// A plugin is published as an OCI image manifest with artifactType
// application/vnd.hangar.plugin.v1, the empty config
// (application/vnd.oci.empty.v1+json) and exactly one layer,
// application/vnd.hangar.plugin.layer.v1.wasm, holding the module; or, as
// hyper-mcp publishes plugins, as a container image (or an index of one)
// whose file system holds /plugin.wasm, unpacked with strict bounds (see
// image.go). Pulling checks the media types, the manifest digest (for
// digest references and locked entries), the layer digests, and the
// signature through a [Verifier], before the module is used. A manifest
// that passed is recorded in the cache with its module, and a lock entry
// is used without verifying again only when such a record binds its
// manifest to its module.
//
// # Bounds
//
// Modules are read only from regular files within the size limit
// ([ReadModule]); all the network work for one source shares one deadline
// (Resolver.Timeout) and stops when the context is cancelled; temporary
// files of downloads that died are removed by the next fetch. Registries on loopback addresses
// (localhost, 127.0.0.1, [::1]) are spoken to over plain HTTP; all others
// over HTTPS.
//
// # Trust
//
// Content is trusted by digest only: a sha256 pin in the configuration, a
// digest in an oci:// reference, a lock entry, or a manifest whose
// signature the Verifier accepted. Nothing that fails a check is cached
// under its claimed digest. Redirects from https to http are refused.
package source
